import Testing
import WeaveDIDaemon

@Suite struct ConfigurationDirectoryTests {
    private func directories(_ environment: [String: String], workingDirectory: String = "/home/dev/project")
        -> (runtime: String, state: String, socket: String)
    {
        let configuration = DaemonConfiguration.builtInDefault(environment: environment, workingDirectory: workingDirectory)
        return (configuration.runtimeDirectory, configuration.stateDirectory, configuration.control.socket)
    }

    @Test func runtimeDirectory_comesFromSystemd() {
        let result = directories(["RUNTIME_DIRECTORY": "/run/weavedi", "XDG_RUNTIME_DIR": "/run/user/1000"])
        #expect(result.runtime == "/run/weavedi")
        #expect(result.socket == "/run/weavedi/control.sock")
    }

    @Test func runtimeDirectoryList_usesItsFirstEntry() {
        let result = directories(["RUNTIME_DIRECTORY": "/run/weavedi:/run/weavedi-extra:/run/third"])
        #expect(result.runtime == "/run/weavedi")
        #expect(result.socket == "/run/weavedi/control.sock")
    }

    @Test func xdgRuntimeDirectory_getsAWeavediSubdirectory() {
        let result = directories(["XDG_RUNTIME_DIR": "/run/user/1000"])
        #expect(result.runtime == "/run/user/1000/weavedi")
        #expect(result.socket == "/run/user/1000/weavedi/control.sock")
        #expect(directories(["XDG_RUNTIME_DIR": "/run/user/1000/"]).runtime == "/run/user/1000/weavedi")
    }

    @Test func withoutEnvironment_directoriesGoBelowTheWorkingDirectory() {
        let result = directories([:])
        #expect(result.runtime == "/home/dev/project/.weavedi/run")
        #expect(result.state == "/home/dev/project/.weavedi/state")
        #expect(directories([:], workingDirectory: "/srv/x/").runtime == "/srv/x/.weavedi/run")
    }

    @Test func emptyOrRelativeValues_countAsUnset() {
        let empty = directories(["RUNTIME_DIRECTORY": "", "XDG_RUNTIME_DIR": "", "STATE_DIRECTORY": ""])
        #expect(empty.runtime == "/home/dev/project/.weavedi/run")
        #expect(empty.state == "/home/dev/project/.weavedi/state")
        #expect(directories(["RUNTIME_DIRECTORY": "", "XDG_RUNTIME_DIR": "/run/user/7"]).runtime == "/run/user/7/weavedi")
        #expect(directories(["XDG_RUNTIME_DIR": "run/user/7"]).runtime == "/home/dev/project/.weavedi/run")
    }

    @Test func stateDirectory_comesFromSystemd() {
        #expect(directories(["STATE_DIRECTORY": "/var/lib/weavedi"]).state == "/var/lib/weavedi")
        #expect(directories(["STATE_DIRECTORY": "/var/lib/weavedi:/var/lib/other"]).state == "/var/lib/weavedi")
    }

    @Test func fileWithoutDirectories_usesTheSameRules() throws {
        let xdg = try loadConfiguration("{}", environment: ["XDG_RUNTIME_DIR": "/run/user/1000"])
        #expect(xdg.runtimeDirectory == "/run/user/1000/weavedi")
        #expect(xdg.stateDirectory == "/home/dev/project/.weavedi/state")
        #expect(xdg.control.socket == "/run/user/1000/weavedi/control.sock")
        #expect(xdg.sync.jobs.isEmpty)
        let fallback = try loadConfiguration("{}", environment: [:], workingDirectory: "/opt/w")
        #expect(fallback.runtimeDirectory == "/opt/w/.weavedi/run")
        #expect(fallback.control.socket == "/opt/w/.weavedi/run/control.sock")
    }
}
