import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// A mirror destination that holds the state directory would delete (or overwrite) the
/// daemon's lock file and the jobs' state file: the real daemon refuses such a configuration at
/// `--check-config` and at a reload, which keeps the running configuration and those files.
@Suite struct ConfigurationStateDirectoryTests {
    /// A configuration with the job `docs` from `@/source` into `@/mirror`, and with `wipe`, a
    /// deleting job from `@/empty` into `@/var`, which holds the state directory `@/var/state`.
    static func config(_ directory: TemporaryDirectory, withWipe: Bool) -> String {
        let d = directory.path
        let wipe = withWipe
            ? #",\#n  {"name": "wipe", "source": "\#(d)/empty", "destination": "\#(d)/var", "delete": true, "interval": 3600}"#
            : ""
        return directory.write("weavedid.json", """
            {"sync": {"jobs": [
              {"name": "docs", "source": "\(d)/source", "destination": "\(d)/mirror", "interval": 3600}\(wipe)]}}
            """)
    }

    /// The problem the daemon names for `wipe`.
    static func problem(_ d: String) -> String {
        #"sync.jobs[1].destination: the destination "\#(d)/var" contains the state directory "\#(d)/var/state"; "#
            + "the job would overwrite or delete the daemon's lock (weavedid.lock) and the jobs' state file (jobs.json) there"
    }

    @Test func checkConfig_refusesADestinationHoldingTheStateDirectory_exit78() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let config = Self.config(directory, withWipe: true)
        // The state directory comes from STATE_DIRECTORY: the file sets none.
        let check = try DaemonProcess(["--check-config", "--config", config], environment: ["STATE_DIRECTORY": d + "/var/state"], directory: directory)
        #expect(check.wait() == .exited(78), "\(check.log)")
        #expect(check.log.contains("\(config): \(Self.problem(d))"), "\(check.log)")
        #expect(!fileExists(d + "/var"))
    }

    /// Without a file, the built-in default's example job mirrors into
    /// `.weavedi/example/mirror`: a STATE_DIRECTORY there is refused as well, as written (no
    /// link leads there: none is named).
    @Test func theBuiltInDefault_withTheStateDirectoryAsItsDestination_isRefused() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let state = d + "/.weavedi/example/mirror"
        let check = try DaemonProcess(["--check-config"], environment: ["STATE_DIRECTORY": state], directory: directory)
        #expect(check.wait() == .exited(78), "\(check.log)")
        #expect(check.log.contains(#"built-in default: sync.jobs[0].destination: the destination "\#(state)" of job "example" is the state directory "\#(state)"; "#
            + "the job would overwrite or delete the daemon's lock (weavedid.lock) and the jobs' state file (jobs.json) there\n"), "\(check.log)")
    }

    @Test func aReloadAddingADestinationHoldingTheStateDirectory_isRefused_andTheStateKept() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("source/a.txt", "a")
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: d + "/empty", withIntermediateDirectories: true)
        let config = Self.config(directory, withWipe: false)
        let daemon = try DaemonProcess(["--config", config], environment: ["STATE_DIRECTORY": d + "/var/state"], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let run = daemon.sendCallReply("RunJob", #"{"name": "docs"}"#)?.parameter("run")
        #expect(run?[member: "result"]?.stringValue == "success", "\(daemon.log)")
        // Written as the run starts and again as it ends: the snapshot is of the second write.
        try #require(directory.read("var/state/jobs.json", once: #""lastRun":{"id":"docs-1""#) != nil, "\(daemon.log)")
        let before = try DaemonStateDirectoryLockTests.snapshot(d + "/var/state")

        _ = Self.config(directory, withWipe: true)
        let reload = daemon.sendCallReply("Reload")
        #expect(reload?.error == "io.weavedi.Daemon.ReloadRefused", "\(daemon.log)")
        #expect(reload?.parameter("reason")?.stringValue
            == "\(config): \(Self.problem(d))")
        let jobs = daemon.sendCallReply("ListJobs")?.parameter("jobs")?.arrayValue
        #expect(jobs?.compactMap { $0[member: "name"]?.stringValue } == ["docs"])
        #expect(try DaemonStateDirectoryLockTests.snapshot(d + "/var/state") == before)
        #expect(directory.read("var/state/weavedid.lock") == "\(daemon.pid)\n")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}

extension DaemonProcess {
    /// The reply to a call of the daemon's interface, sent on a connection of its own; nil when
    /// none came within 10 s.
    func sendCallReply(_ method: String, _ parameters: String = "{}") -> VarlinkReply? {
        (try? sendCall(method, parameters))?.varlinkReply()
    }
}
