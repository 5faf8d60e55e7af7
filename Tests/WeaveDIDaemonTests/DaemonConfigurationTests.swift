import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Bad configurations refuse the start with exit 78; SIGHUP reloads or refuses and keeps the old.
@Suite struct DaemonConfigurationTests {
    /// What a `socketGroup` this machine does not know is told to do.
    static let noGroupAdvice = " on this machine: create it (the package's weavedi group comes with systemd/sysusers.d/weavedi.conf), "
        + "name another group, or remove the field"

    static let goodConfig = #"{"shutdownTimeout": 5, "health": {"interval": 60}}"#

    @Test(arguments: [
        ("syntax", #"{"shutdownTimeout": 5,, }"#, "line 1, column 23: "),
        ("unknown field", #"{"control": {"maxClient": 3}}"#, "control.maxClient: unknown field"),
        ("wrong type", #"{"control": {"maxClients": "64"}}"#, "control.maxClients: expected an integer"),
        ("impossible value", #"{"control": {"maxClients": -3}}"#, "control.maxClients: expected an integer from 1 to 4096, got -3"),
    ])
    func badConfiguration_exits78_withFileFieldAndProblem(kind: String, text: String, expected: String) throws {
        let directory = TemporaryDirectory()
        let path = directory.write("weavedid.json", text)
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", path], directory: directory, notify: notify)
        #expect(daemon.wait() == .exited(78), "\(kind)")
        #expect(daemon.log.contains("\(path): \(expected)"), "\(kind): \(daemon.log)")
        #expect(notify.wait { $0.contains("ERRNO=22") }, "\(kind)")
        #expect(notify.lines.contains { $0.hasPrefix("STATUS=configuration error: \(path): ") })
    }

    @Test func missingConfigFile_exits78_withENOENT() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", directory.path + "/none.json"], directory: directory, notify: notify)
        #expect(daemon.wait() == .exited(78))
        #expect(daemon.log.contains("none.json: cannot read"))
        #expect(notify.wait { $0.contains("ERRNO=2") })
    }

    @Test func checkConfig_validatesAndExits() throws {
        let directory = TemporaryDirectory()
        let good = directory.write("good.json", Self.goodConfig)
        let bad = directory.write("bad.json", #"{"health": {"interval": 0}}"#)
        let ok = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", good], environment: [:])
        #expect(ok.status == .exited(0))
        #expect(ok.standardOutputText == "weavedid: configuration OK (\(good))\n")
        let refused = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", bad], environment: [:])
        #expect(refused.status == .exited(78))
        // Said once: the check's answer, not a log line as well.
        #expect(refused.standardErrorText.hasPrefix("weavedid: \(bad): health.interval: "), "\(refused.standardErrorText)")
        #expect(refused.standardErrorText.split(separator: "\n").count == 1, "\(refused.standardErrorText)")
        // The example's socket group comes with the package (systemd/sysusers.d): where it
        // is not installed, the check says so.
        let example = SystemdUnitTests.packageRoot + "/etc/weavedi/weavedid.json"
        let checked = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", example], environment: [:])
        if getgrnam("weavedi") != nil {
            #expect(checked.status == .exited(0))
        } else {
            #expect(checked.status == .exited(78))
            #expect(checked.standardErrorText == "weavedid: \(example): control.socketGroup: no group named \"weavedi\"\(Self.noGroupAdvice)\n")
        }
    }

    /// What `--check-config` prints for people quotes the file's path as given: its control
    /// characters are escaped, never sent to the terminal.
    @Test func checkConfig_escapesControlCharactersInThePath() throws {
        let directory = TemporaryDirectory()
        let bad = directory.write("b\u{1B}[31mad.json", #"{"health": {"interval": 0}}"#)
        let refused = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", bad], environment: [:])
        #expect(refused.status == .exited(78))
        #expect(refused.standardErrorText.contains("weavedid: \(directory.path)/b\\u{1B}[31mad.json: health.interval: "),
                "\(refused.standardErrorText)")
        #expect(!refused.standardErrorText.contains("\u{1B}"))
        let good = directory.write("g\u{1B}ood.json", Self.goodConfig)
        let ok = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", good], environment: [:])
        #expect(ok.standardOutputText == "weavedid: configuration OK (\(directory.path)/g\\u{1B}ood.json)\n")
    }

    @Test func checkConfig_refusesASocketGroupThatDoesNotExist() throws {
        // Valid as a name, but the daemon could not start with it.
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", #"{"control": {"socketGroup": "no-such-group-weavedi"}}"#)
        let refused = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
        #expect(refused.status == .exited(78))
        #expect(refused.standardErrorText == "weavedid: \(config): control.socketGroup: no group named \"no-such-group-weavedi\"\(Self.noGroupAdvice)\n")
    }

    @Test func checkConfig_warnsAboutAdministratorsThisMachineDoesNotKnow_andPasses() throws {
        // The start ignores them (with the same warning): they can only give rights.
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", """
            {"control": {"adminUsers": ["root", "no-such-user-weavedi", 1000],
                         "adminGroups": [0, "no-such-group-weavedi"]}}
            """)
        let checked = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
        #expect(checked.status == .exited(0), "\(checked.standardErrorText)")
        #expect(checked.standardErrorText == """
            weavedid: warning: \(config): control.adminUsers[1]: no user named \"no-such-user-weavedi\" on this machine; ignored, it gives nobody administrator rights
            weavedid: warning: \(config): control.adminGroups[1]: no group named \"no-such-group-weavedi\" on this machine; ignored, it gives nobody administrator rights

            """)
        #expect(checked.standardOutputText == "weavedid: configuration OK, with 2 warnings (\(config))\n")
    }

    @Test func start_withAnAdministratorThisMachineDoesNotKnow_warnsAndRuns() throws {
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", #"{"control": {"adminUsers": ["no-such-user-weavedi", "root"]}}"#)
        let daemon = try readyDaemon(["--config", config], directory: directory)
        #expect(daemon.log.contains(
            "\(config): control.adminUsers[0]: no user named \"no-such-user-weavedi\" on this machine; ignored, it gives nobody administrator rights"),
            "\(daemon.log)")
        let reload = try CtlRun.run(["--socket", daemon.defaultSocket, "reload"])
        #expect(reload.code == 0, "root is still an administrator: \(reload.all)")
    }

    @Test func builtInDefault_inADeepWorkingDirectory_isRefusedByTheCheckAndTheStart() throws {
        // Without RUNTIME_DIRECTORY and XDG_RUNTIME_DIR the default socket lies below the
        // working directory; from deep enough it cannot be bound.
        let deep = String(repeating: "d", count: 60) + "/" + String(repeating: "e", count: 40)
        let socket = "/" + deep + "/.weavedi/run/control.sock"
        let prefix = "mkdir -p \(deep) && cd \(deep) &&"
        for arguments in [["--check-config"], []] {
            let daemon = try DaemonProcess(arguments, environment: ["RUNTIME_DIRECTORY": ""], prefix: prefix)
            #expect(daemon.wait() == .exited(78), "\(arguments): \(daemon.log)")
            let path = daemon.directory.path + socket
            #expect(daemon.log.contains(
                "built-in default: control.socket: the default socket path \"\(path)\" is \(path.utf8.count) bytes long, but a Unix socket path may have at most 107 bytes (sun_path); start weavedid in a shorter working directory"),
                "\(arguments): \(daemon.log)")
        }
    }

    /// Two mirror jobs in `directory`: `a` from `a-source` into `backup`, `b` from `b-source`
    /// into `bDestination` (`alias`, a link to `backup`, makes them one tree). Both delete.
    static func linkedJobs(_ directory: TemporaryDirectory, bDestination: String = "alias", runAtStart: Bool = false) -> String {
        let d = directory.path
        return """
            {"sync": {"jobs": [
              {"name": "a", "source": "\(d)/a-source", "destination": "\(d)/backup", "delete": true, "interval": 3600},
              {"name": "b", "source": "\(d)/b-source", "destination": "\(d)/\(bDestination)", "delete": true,
               "interval": 3600, "runAtStart": \(runAtStart)}]}}
            """
    }

    /// The refusal for `linkedJobs` with `alias -> backup`.
    static func linkedJobsProblem(_ directory: TemporaryDirectory) -> String {
        let d = directory.path
        return #"sync.jobs[1].destination: the destination "\#(d)/alias" of job "b" is the destination "\#(d)/backup" of job "a" (sync.jobs[0]) through symbolic links ("\#(d)/alias" resolves to "\#(d)/backup", "\#(d)/backup" to "\#(d)/backup"); the jobs would overwrite or delete each other's files"#
    }

    /// The trees of `linkedJobs` in `directory`: both sources, a's backup with its file, and
    /// `alias`, a link to the backup.
    static func linkedTree(_ directory: TemporaryDirectory) throws {
        directory.write("a-source/a.txt", "a")
        directory.write("b-source/b.txt", "b")
        directory.write("backup/a.txt", "a")
        try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: directory.path + "/alias", pointingTo: "backup")
    }

    @Test func mirrorTreesThatOverlapThroughALink_failTheCheckAndTheStart() throws {
        let directory = TemporaryDirectory()
        try Self.linkedTree(directory)
        let config = directory.write("weavedid.json", Self.linkedJobs(directory))
        let refused = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
        #expect(refused.status == .exited(78))
        #expect(refused.standardErrorText == "weavedid: \(config): \(Self.linkedJobsProblem(directory))\n", "\(refused.standardErrorText)")
        #expect(refused.standardOutputText.isEmpty)
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
        #expect(daemon.wait() == .exited(78))
        #expect(daemon.log.contains("\(config): \(Self.linkedJobsProblem(directory))"), "\(daemon.log)")
        #expect(notify.wait { $0.contains("ERRNO=22") })
        // Where the link leads elsewhere, the same file is fine.
        try FileManager.default.removeItem(atPath: directory.path + "/alias")
        try FileManager.default.createDirectory(atPath: directory.path + "/alias", withIntermediateDirectories: false)
        let ok = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
        #expect(ok.status == .exited(0), "\(ok.standardErrorText)")
    }

    @Test func sighup_refusesJobsThatOverlapThroughALink_andKeepsTheRunningOnes() throws {
        let directory = TemporaryDirectory()
        try Self.linkedTree(directory)
        let path = directory.write("weavedid.json", Self.linkedJobs(directory, bDestination: "b-backup"))
        try FileManager.default.createDirectory(atPath: directory.path + "/b-backup", withIntermediateDirectories: false)
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", path], directory: directory, notify: notify)
        #expect(notify.wait(forLine: "READY=1"))
        // b now writes into a's tree through the link, at once: the reload must be refused.
        directory.write("weavedid.json", Self.linkedJobs(directory, runAtStart: true))
        daemon.send(.hangup)
        let problem = "reload refused: \(path): \(Self.linkedJobsProblem(directory)); keeping the previous configuration"
        #expect(notify.wait(forLine: "STATUS=running; \(problem)"), "\(notify.lines)")
        #expect(daemon.waitForLog(problem))
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let health = try client.call("io.weavedi.Daemon.RunChecks", [("tags", .array([.string("readiness")]))])
        let checks = health.parameter("health")?[member: "checks"]?.arrayValue ?? []
        let configuration = checks.first { $0[member: "name"]?.stringValue == "daemon.configuration" }
        #expect(configuration?[member: "status"]?.stringValue == "degraded")
        #expect(configuration?[member: "message"]?.stringValue == problem)
        // The running jobs are the old ones: b still mirrors into b-backup, and a's tree is whole.
        let b = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("b"))]).parameter("run")
        #expect(b?[member: "result"]?.stringValue == "success")
        #expect(directory.read("b-backup/b.txt") == "b")
        #expect(directory.read("backup/a.txt") == "a")
        #expect(directory.read("backup/b.txt") == nil)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// The daemon, ready, on `goodConfig` written to weavedid.json in a directory of its own.
    func startedOnTheGoodConfig() throws -> (TemporaryDirectory, NotifyListener, DaemonProcess) {
        let directory = TemporaryDirectory()
        let path = directory.write("weavedid.json", Self.goodConfig)
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", path], directory: directory, notify: notify)
        #expect(notify.wait(forLine: "READY=1"))
        return (directory, notify, daemon)
    }

    @Test func sighup_reloadsAGoodConfiguration() throws {
        let (directory, notify, daemon) = try startedOnTheGoodConfig()
        directory.write("weavedid.json", #"{"shutdownTimeout": 7, "health": {"interval": 30}}"#)
        let before = SystemClock.monotonicMicroseconds()
        daemon.send(.hangup)
        #expect(notify.wait(forLine: "STATUS=running; configuration reloaded"))
        let lines = notify.lines
        let reloading = try #require(lines.firstIndex(of: "RELOADING=1"))
        let usec = try #require(lines.first { $0.hasPrefix("MONOTONIC_USEC=") }.flatMap { UInt64($0.dropFirst(15)) })
        #expect(usec >= before && usec <= SystemClock.monotonicMicroseconds())
        #expect(lines[(reloading + 1)...].contains("READY=1"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func sighup_refusesABadConfiguration_keepsTheOld_andHealthSaysSo() throws {
        let (directory, notify, daemon) = try startedOnTheGoodConfig()
        directory.write("weavedid.json", #"{"health": {"interval": "soon"}}"#)
        daemon.send(.hangup)
        #expect(notify.wait { $0.contains("reload refused") })
        #expect(notify.lines.last { $0 == "READY=1" } != nil)
        let client = try VarlinkClient(path: daemon.defaultSocket)
        #expect(try client.call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        let health = try client.call("io.weavedi.Daemon.RunChecks", [("tags", .array([.string("readiness")]))])
        let checks = health.parameter("health")?[member: "checks"]?.arrayValue ?? []
        let configuration = checks.first { $0[member: "name"]?.stringValue == "daemon.configuration" }
        #expect(configuration?[member: "status"]?.stringValue == "degraded")
        #expect(configuration?[member: "message"]?.stringValue?.contains("health.interval: expected a number of seconds") == true)
        #expect(daemon.log.contains("reload refused"))
        // The Reload method says the same, as an error.
        #expect(throws: VarlinkFailure.self) { try client.call("io.weavedi.Daemon.Reload") }
        directory.write("weavedid.json", Self.goodConfig)
        #expect(try client.call("io.weavedi.Daemon.Reload").parameter("status")?.stringValue == "configuration reloaded")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// `daemon.configuration` as `GetHealth` gives it (the last round's results, not run for
    /// the call) says how the reload just finished went, refused or in effect, not what the
    /// round before it found: the check runs again as each reload ends. The health loop's
    /// rounds are an hour apart here, so only that can change it.
    @Test func getHealth_rightAfterAReload_saysHowThatReloadWent() throws {
        let directory = TemporaryDirectory()
        let good = #"{"health": {"interval": 3600}}"#
        let path = directory.write("weavedid.json", good)
        let daemon = try DaemonProcess(["--config", path], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        func configurationCheck() throws -> (status: String?, message: String?) {
            let checks = try client.call("io.weavedi.Daemon.GetHealth").parameter("health")?[member: "checks"]?.arrayValue ?? []
            let check = checks.first { $0[member: "name"]?.stringValue == "daemon.configuration" }
            return (check?[member: "status"]?.stringValue, check?[member: "message"]?.stringValue)
        }
        #expect(try configurationCheck().status != "degraded", "\(daemon.log)")
        directory.write("weavedid.json", #"{"health": {"interval": "soon"}}"#)
        #expect(throws: VarlinkFailure.self) { try client.call("io.weavedi.Daemon.Reload") }
        let refused = try configurationCheck()
        #expect(refused.status == "degraded", "\(refused) \(daemon.log)")
        #expect(refused.message?.contains("health.interval: expected a number of seconds") == true, "\(refused)")
        directory.write("weavedid.json", good)
        #expect(try client.call("io.weavedi.Daemon.Reload").parameter("status")?.stringValue == "configuration reloaded")
        let reloaded = try configurationCheck()
        #expect(reloaded.status == "healthy" && reloaded.message == "configuration in effect", "\(reloaded)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// `systemctl reload weavedid` runs the unit's `ExecReload=`: the control socket's `Reload`
    /// call (here with the test daemon's socket for `%t/weavedi/control.sock`), not a signal. It
    /// returns when the new configuration is in effect, and fails, saying why, when the daemon
    /// refuses it.
    @Test func unitsExecReload_returnsOnceReloaded_andFailsWhenRefused() throws {
        let unit = try String(contentsOfFile: SystemdUnitTests.packageRoot + "/systemd/weavedid.service", encoding: .utf8)
        let line = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecReload=") })
        var argv = line.dropFirst("ExecReload=".count).split(separator: " ").map(String.init)
        #expect(argv.first == "/usr/bin/weavedictl", "\(line)")
        let (directory, _, daemon) = try startedOnTheGoodConfig()
        argv[0] = CtlRun.binary
        argv = argv.map { $0 == "%t/weavedi/control.sock" ? daemon.defaultSocket : $0 }

        directory.write("weavedid.json", #"{"health": {"interval": "soon"}}"#)
        let refused = try CtlRun.execute(argv)
        #expect(refused.code == 1, "\(refused.all)")
        #expect(refused.error.contains("health.interval: expected a number of seconds"), "\(refused.all)")

        try FileManager.default.createDirectory(atPath: directory.path + "/source", withIntermediateDirectories: true)
        directory.write("weavedid.json", #"{"sync": {"jobs": [{"name": "added", "source": "\#(directory.path)/source", "destination": "\#(directory.path)/mirror", "enabled": false}]}}"#)
        let reloaded = try CtlRun.execute(argv)
        #expect(reloaded.code == 0 && reloaded.output == "configuration reloaded\n", "\(reloaded.all)")
        let jobs = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue ?? []
        #expect(jobs.map { $0[member: "name"]?.stringValue } == ["added"])
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func reloadCallsAtOnce_eachAnswerForAReloadThatBeganAfterIt() throws {
        let (directory, _, daemon) = try startedOnTheGoodConfig()
        directory.write("weavedid.json", #"{"health": {"interval": "soon"}}"#)
        // Twelve clients ask at once: the calls that arrive while a reload runs share the next
        // one, and each answer is about a read of the file as it is now: refused, every one.
        let socket = daemon.defaultSocket
        let answers = Locked<[String]>([])
        let finished = DispatchSemaphore(value: 0)
        for _ in 0..<12 {
            Thread {
                let answer: String
                do {
                    let client = try VarlinkClient(path: socket)
                    answer = "reloaded: " + (try client.call("io.weavedi.Daemon.Reload").parameter("status")?.stringValue ?? "")
                } catch let failure as VarlinkFailure {
                    answer = failure.name == "io.weavedi.Daemon.ReloadRefused" && failure.reason?.contains("health.interval") == true
                        ? "refused" : "\(failure)"
                } catch {
                    answer = "\(error)"
                }
                answers.withLock { $0.append(answer) }
                finished.signal()
            }.start()
        }
        for _ in 0..<12 { #expect(finished.wait(timeout: .now() + .seconds(20)) == .success) }
        #expect(answers.withLock { $0 } == Array(repeating: "refused", count: 12), "\(answers.withLock { $0 })")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }
}
