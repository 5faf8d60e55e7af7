import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// Under systemd (`INVOCATION_ID` set, `SYSTEMD_EXEC_PID` the daemon's pid), what the daemon says about a job's paths names the part
/// of the unit's sandbox that explains it: `ReadWritePaths=` for a read-only destination,
/// `ProtectHome=` for a path under /home, and `PrivateTmp=` for one under /tmp.
@Suite struct DaemonSandboxAdviceTests {
    @Test func underSystemd_aReadOnlyDestination_namesReadWritePaths_inTheWarningsAndTheRunsFailure() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("source/a.txt", "a")
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"health": {"interval": 3600}, "sync": {"jobs": [{"name": "docs", "source": "\(d)/source", "destination": "\(d)/mirror", "interval": 3600},
             {"name": "home", "source": "/home/weavedi-test-nobody/docs", "destination": "\(d)/mirror-home", "interval": 3600}]}}
            """)
        try FileManager.default.createDirectory(atPath: d + "/mirror-home", withIntermediateDirectories: true)
        let wrapper = try MountNamespace.requiredWrapper(binding: [(d + "/mirror", d + "/mirror")])
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["INVOCATION_ID": "0123456789abcdef", "WEAVEDI_REGISTRY_AUTO_FIX": "0"],
            directory: directory, prefix: Self.execPID, wrapper: wrapper)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        // The source under /home: ProtectHome=; the test's directory under /tmp: PrivateTmp=.
        #expect(daemon.log.contains(#"sync.jobs[1].source: the source "/home/weavedi-test-nobody/docs" of job "home" does not exist; the daemon starts, but each run of the job fails until it does; under systemd, the unit's ProtectHome=yes hides /home from the service"#), "\(daemon.log)")
        #expect(daemon.log.contains(#"sync.jobs[0].destination: the destination "\#(d)/mirror" of job "docs": it lies in /tmp, which under systemd is the service's own (the unit's PrivateTmp=yes)"#), "\(daemon.log)")

        // The destination turns read-only (as ProtectSystem=strict shows /srv): the reload's warning and the run's failure say what to do.
        try #require(try MountNamespace.run(["mount", "-o", "remount,bind,ro", d + "/mirror"], inNamespaceOf: daemon.pid) == nil)
        #expect(try reloadFailure(daemon.defaultSocket) == nil)
        #expect(daemon.log.contains(#"sync.jobs[0].destination: cannot write in the destination "\#(d)/mirror" of job "docs" (write and search access): Read-only file system (EROFS); the reload is in effect, but each run of the job fails until the daemon's user may write in it; \#(Self.readOnly)"#), "\(daemon.log)")
        let run = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
        let message = run?[member: "message"]?.stringValue ?? ""
        #expect(message.contains("(EROFS)") && message.hasSuffix("; " + Self.readOnly), "\(String(describing: run))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Shell code run before the daemon's exec that sets `SYSTEMD_EXEC_PID` as systemd does:
    /// to the pid of the process it starts, which `exec` keeps.
    static let execPID = "export SYSTEMD_EXEC_PID=$$;"

    /// `INVOCATION_ID` is inherited by every process a unit starts (a terminal run as a user
    /// service, tmux, a CI runner): a `--check-config` run by hand from one, which has no
    /// `SYSTEMD_EXEC_PID` or another process's, gives no advice about a sandbox it is not in;
    /// the same run as the process systemd started (`SYSTEMD_EXEC_PID` its own pid) does.
    @Test func checkConfig_withAnInheritedInvocationID_givesSandboxAdvice_onlyAsTheProcessSystemdStarted() throws {
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "home", "source": "/home/weavedi-test-nobody/docs", "destination": "\(directory.path)/m", "interval": 3600}]}}
            """)
        try FileManager.default.createDirectory(atPath: directory.path + "/m", withIntermediateDirectories: true)
        func checkConfig(_ environment: [String: String], prefix: String = "") throws -> String {
            let run = try DaemonProcess(["--check-config", "--config", config], environment: environment, directory: directory, prefix: prefix)
            #expect(run.wait() == .exited(0), "\(run.log)")
            #expect(run.log.contains(#"of job "home" does not exist"#), "\(run.log)")
            return run.log
        }
        let invocation = ["INVOCATION_ID": "0123456789abcdef"]
        #expect(!(try checkConfig(invocation)).contains("under systemd"))
        #expect(!(try checkConfig(invocation.merging(["SYSTEMD_EXEC_PID": "1"]) { $1 })).contains("under systemd"))
        #expect(!(try checkConfig(invocation.merging(["SYSTEMD_EXEC_PID": "x"]) { $1 })).contains("under systemd"))
        let underSystemd = try checkConfig(invocation, prefix: Self.execPID)
        #expect(underSystemd.contains("under systemd, the unit's ProtectHome=yes hides /home from the service"), "\(underSystemd)")
    }

    static let readOnly =
        "under systemd, the unit's ProtectSystem=strict makes it read-only unless a drop-in (systemctl edit weavedid) lists it in ReadWritePaths="

    @Test func withoutSystemd_noSandboxAdvice() throws {
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", """
            {"health": {"interval": 3600}, "sync": {"jobs": [{"name": "home", "source": "/home/weavedi-test-nobody/docs", "destination": "\(directory.path)/m", "interval": 3600}]}}
            """)
        try FileManager.default.createDirectory(atPath: directory.path + "/m", withIntermediateDirectories: true)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains(#"of job "home" does not exist; the daemon starts, but each run of the job fails until it does"#), "\(daemon.log)")
        #expect(!daemon.log.contains("under systemd"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
