import Glibc
import Testing
import WeaveDIDaemon
import WeaveDIPosix

@Suite struct ConfigurationLoadTests {
    static let fullFile = """
        {
          "runtimeDirectory": "/run/wd",
          "stateDirectory": "/var/lib/wd",
          "shutdownTimeout": 12.5,
          "control": {
            "socket": "/run/wd/ctl.sock",
            "socketMode": "0640",
            "socketGroup": "weavedi",
            "adminUsers": ["root", 1000],
            "adminGroups": ["wheel", 27],
            "maxMessageBytes": 2048,
            "maxClients": 8,
            "maxClientsPerUser": 3,
            "idleTimeout": 45,
            "callTimeout": 0.25
          },
          "health": { "interval": 0.1, "sessionIdleLimit": 600 },
          "sync": {
            "maxConcurrentRuns": 3,
            "metricsFile": "/var/lib/node_exporter/textfile/weavedi.prom",
            "jobs": [
              {
                "name": "docs", "kind": "mirror", "source": "/srv/docs",
                "destination": "/var/lib/wd/mirror/docs", "interval": 120, "jitter": 7.5,
                "runAtStart": true, "enabled": false, "compare": "checksum", "delete": true,
                "durable": false, "workers": 16, "failureThreshold": 5,
                "staleAfterIntervals": 4, "backoffCap": 900
              },
              { "name": "logs", "source": "/srv/logs", "destination": "/var/lib/wd/mirror/logs", "workers": null }
            ]
          }
        }
        """

    @Test func fullFile_loadsEveryField() throws {
        let configuration = try loadConfiguration(Self.fullFile)
        #expect(configuration.runtimeDirectory == "/run/wd")
        #expect(configuration.stateDirectory == "/var/lib/wd")
        #expect(configuration.shutdownTimeout == .milliseconds(12500))
        let control = configuration.control
        #expect(control.socket == "/run/wd/ctl.sock")
        #expect(control.socketMode == 0o640)
        #expect(control.socketGroup == .name("weavedi"))
        #expect(control.adminUsers == [.name("root"), .id(1000)])
        #expect(control.adminGroups == [.name("wheel"), .id(27)])
        #expect(control.maxMessageBytes == 2048)
        #expect(control.maxClients == 8)
        #expect(control.maxClientsPerUser == 3)
        #expect(control.idleTimeout == .seconds(45))
        #expect(control.callTimeout == .milliseconds(250))
        #expect(configuration.health.interval == .milliseconds(100))
        #expect(configuration.health.sessionIdleLimit == .seconds(600))
        #expect(configuration.sync.maxConcurrentRuns == 3)
        #expect(configuration.sync.metricsFile == "/var/lib/node_exporter/textfile/weavedi.prom")
        #expect(configuration.sync.jobs.map(\.name) == ["docs", "logs"])
        let docs = try #require(configuration.sync.jobs.first)
        #expect(docs.kind == "mirror")
        #expect(docs.interval == .seconds(120))
        #expect(docs.jitter == .milliseconds(7500))
        #expect(docs.runAtStart == true)
        #expect(docs.enabled == false)
        #expect(docs.failureThreshold == 5)
        #expect(docs.staleAfterIntervals == 4)
        #expect(docs.backoffCap == .seconds(900))
        let mirror = try #require(docs.mirror)
        #expect(mirror.source == "/srv/docs")
        #expect(mirror.destination == "/var/lib/wd/mirror/docs")
        #expect(mirror.compare == .checksum)
        #expect(mirror.delete == true)
        #expect(mirror.durable == false)
        #expect(mirror.workers == 16)
        #expect(configuration.sync.jobs[1].mirror?.workers == nil)
        #expect(configuration.source == .file(path: configuration.filePath ?? ""))
        #expect(configuration.filePath?.hasSuffix("/weavedid.json") == true)
        #expect(configuration.isBuiltInDefault == false)
    }

    @Test func emptyObject_givesDefaultsWithEnvironmentDirectories() throws {
        let configuration = try loadConfiguration("{}")
        #expect(configuration.runtimeDirectory == "/run/weavedi")
        #expect(configuration.stateDirectory == "/var/lib/weavedi")
        #expect(configuration.shutdownTimeout == .seconds(10))
        #expect(configuration.control.socket == "/run/weavedi/control.sock")
        #expect(configuration.control.socketMode == 0o660)
        #expect(configuration.control.socketGroup == nil)
        #expect(configuration.control.adminUsers.isEmpty && configuration.control.adminGroups.isEmpty)
        #expect(configuration.control.maxMessageBytes == 1_048_576)
        #expect(configuration.control.maxClients == 64)
        #expect(configuration.control.maxClientsPerUser == 16)
        #expect(configuration.control.idleTimeout == .seconds(30))
        #expect(configuration.control.callTimeout == .seconds(10))
        #expect(configuration.health.interval == .seconds(30))
        #expect(configuration.health.sessionIdleLimit == .seconds(300))
        #expect(configuration.sync.maxConcurrentRuns == 2)
        #expect(configuration.sync.metricsFile == nil)
        #expect(configuration.sync.jobs.isEmpty)
    }

    @Test func omittedJobFields_getTheirDefaults() throws {
        let job = try #require(try loadConfiguration(jobDocument(#""interval": 300"#)).sync.jobs.first)
        #expect(job.kind == "mirror")
        #expect(job.jitter == .zero)
        #expect(job.runAtStart == false)
        #expect(job.enabled == true)
        #expect(job.failureThreshold == 3)
        #expect(job.staleAfterIntervals == 3)
        #expect(job.backoffCap == .seconds(3600))
        #expect(job.mirror?.compare == .sizeAndModificationTime)
        #expect(job.mirror?.delete == false)
        #expect(job.mirror?.durable == true)
        #expect(job.mirror?.workers == nil)
    }

    @Test func socketDefault_followsTheFilesRuntimeDirectory() throws {
        // runtimeDirectory may come after control; the socket default still uses it.
        let configuration = try loadConfiguration(#"{"control": {"maxClients": 2}, "runtimeDirectory": "/run/other/"}"#)
        #expect(configuration.control.socket == "/run/other/control.sock")
    }

    @Test func builtInDefault_hasTheExampleJob() throws {
        let configuration = DaemonConfiguration.builtInDefault(environment: [:], workingDirectory: "/home/dev/project")
        #expect(configuration.isBuiltInDefault)
        #expect(configuration.filePath == nil)
        #expect(configuration.runtimeDirectory == "/home/dev/project/.weavedi/run")
        #expect(configuration.stateDirectory == "/home/dev/project/.weavedi/state")
        #expect(configuration.control.socket == "/home/dev/project/.weavedi/run/control.sock")
        let job = try #require(configuration.sync.jobs.first)
        #expect(configuration.sync.jobs.count == 1)
        #expect(job.name == "example")
        #expect(job.kind == "mirror")
        #expect(job.mirror?.source == "/home/dev/project/.weavedi/example/source")
        #expect(job.mirror?.destination == "/home/dev/project/.weavedi/example/mirror")
        #expect(job.interval == .seconds(60))
        #expect(job.runAtStart == true)
        #expect(job.enabled == true)
        let root = DaemonConfiguration.builtInDefault(environment: [:], workingDirectory: "/")
        #expect(root.sync.jobs.first?.mirror?.source == "/.weavedi/example/source")
    }

    @Test func resolve_prefersExplicitThenDefaultPathThenBuiltIn() throws {
        let directory = try ConfigurationDirectory()
        let explicit = try directory.write(#"{"shutdownTimeout": 1}"#, to: "explicit.json")
        let fallback = try directory.write(#"{"shutdownTimeout": 2}"#, to: "default.json")
        let missing = directory.path + "/missing.json"
        func resolve(_ path: String?, defaultPath: String) throws -> DaemonConfiguration {
            try DaemonConfiguration.resolve(
                explicitPath: path, environment: systemdEnvironment, workingDirectory: "/w", defaultPath: defaultPath)
        }
        #expect(try resolve(explicit, defaultPath: fallback).shutdownTimeout == .seconds(1))
        #expect(try resolve(nil, defaultPath: fallback).shutdownTimeout == .seconds(2))
        #expect(try resolve(nil, defaultPath: missing).isBuiltInDefault)
        #expect(throws: ConfigurationError.self) { try resolve(missing, defaultPath: fallback) }
        #expect(DaemonConfiguration.defaultPath == "/etc/weavedi/weavedid.json")
    }

    /// A default file that is a symbolic link leading nowhere (its target moved, or the
    /// directory it is in is such a link) is reported, never taken for no file at all: the
    /// daemon would otherwise start on the built-in default, its example job and socket.
    @Test func resolve_aDanglingLinkAtTheDefaultPath_isAnError() throws {
        let directory = try ConfigurationDirectory()
        let link = directory.path + "/weavedid.json"
        #expect(symlink(directory.path + "/moved.json", link) == 0)
        let linkedDirectory = directory.path + "/etc-weavedi"
        #expect(symlink(directory.path + "/gone", linkedDirectory) == 0)
        for defaultPath in [link, linkedDirectory + "/weavedid.json"] {
            do {
                let configuration = try DaemonConfiguration.resolve(
                    explicitPath: nil, environment: systemdEnvironment, workingDirectory: "/w", defaultPath: defaultPath)
                Issue.record("\(defaultPath): loaded \(configuration.isBuiltInDefault ? "the built-in default" : "a file")")
            } catch {
                #expect(error.errno == ENOENT && error.file == defaultPath, "\(error)")
            }
        }
    }

    @Test func exampleFile_inTheRepositoryIsValid() throws {
        let repository = String(#filePath).split(separator: "/").dropLast(3).joined(separator: "/")
        let path = "/" + repository + "/etc/weavedi/weavedid.json"
        let configuration = try DaemonConfiguration.load(path: path, environment: [:], workingDirectory: "/")
        #expect(configuration.runtimeDirectory == "/run/weavedi")
        #expect(configuration.stateDirectory == "/var/lib/weavedi")
        #expect(configuration.control.socket == "/run/weavedi/control.sock")
        let job = try #require(configuration.sync.jobs.first)
        #expect(job.mirror?.source == "/srv/docs")
        #expect(job.mirror?.destination == "/var/lib/weavedi/mirror/docs")
        #expect(job.mirror?.destinationMountPoint == false)
    }
}
