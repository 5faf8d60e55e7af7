import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// One daemon per state directory: a second one started on it (with another control socket)
/// refuses to start, naming the directory and the first one's pid, and touches nothing there;
/// once the first has exited, another starts.
@Suite struct DaemonStateDirectoryLockTests {
    /// A configuration with its own control socket `socket`, the state directory `state`, and
    /// one mirror job `docs` from `source` into `<directory>/mirror`.
    static func config(_ directory: TemporaryDirectory, name: String, socket: String, state: String, source: String) -> String {
        let d = directory.path
        try? FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        return directory.write(name, """
            {"stateDirectory": "\(state)", "control": {"socket": "\(socket)"},
             "sync": {"jobs": [{"name": "docs", "source": "\(source)", "destination": "\(d)/mirror", "interval": 3600}]}}
            """)
    }

    /// Every file in `path`, with its content.
    static func snapshot(_ path: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            files[name] = FileManager.default.contents(atPath: path + "/" + name) ?? Data()
        }
        return files
    }

    /// Waits until `path` exists.
    static func waitForFile(_ path: String, timeout: Duration = .seconds(30)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if fileExists(path) { return true }
            usleep(10_000)
        }
        return false
    }

    @Test func aSecondDaemonOnTheSameStateDirectory_refusesToStart_touchingNothingThere() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("source/a.txt", "a")
        // Not there yet: the first daemon makes it (0750), as it takes the lock.
        let state = d + "/shared/state"
        let firstConfig = Self.config(directory, name: "one.json", socket: d + "/one.sock", state: state, source: d + "/source")
        let first = try DaemonProcess(["--config", firstConfig], directory: directory)
        try #require(first.waitForLog("ready;"), "\(first.log)")
        #expect(((try? FileStatus(path: state, followSymlinks: false))?.permissions.rawValue).map { $0 & 0o777 } == 0o750)
        let run = try VarlinkClient(path: d + "/one.sock").call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
        #expect(run?[member: "result"]?.stringValue == "success", "\(first.log)")
        // Written as the run starts and again as it ends: the snapshot is of the second write.
        try #require(directory.read("shared/state/jobs.json", once: #""lastRun":{"id":"docs-1""#) != nil, "\(first.log)")
        // As a write of the first daemon's in progress would look to the second.
        directory.write("shared/state/.jobs.json.tmp.123", "{\"jobs\"")
        let before = try Self.snapshot(state)

        let refusal = "error   daemon: the state directory \"\(state)\" is in use by another weavedid (pid \(first.pid); "
            + "it holds the lock on \"\(state)/weavedid.lock\"); stop that daemon first, or give this one another state directory"
        // Named by the configuration, with a socket of its own.
        let secondConfig = Self.config(directory, name: "two.json", socket: d + "/two.sock", state: state, source: d + "/source")
        let second = try DaemonProcess(["--config", secondConfig], directory: directory)
        #expect(second.wait() == .exited(1), "\(second.log)")
        #expect(second.log.contains(refusal), "\(second.log)")
        #expect(!fileExists(d + "/two.sock"), "the refused daemon bound its socket")
        // Named by STATE_DIRECTORY, under the built-in default.
        let third = try DaemonProcess(environment: ["STATE_DIRECTORY": state, "RUNTIME_DIRECTORY": d + "/run3"], directory: directory)
        #expect(third.wait() == .exited(1), "\(third.log)")
        #expect(third.log.contains(refusal), "\(third.log)")
        #expect(!third.log.contains("example"), "\(third.log)")
        // `--check-config` takes no lock: it checks while the first daemon runs.
        let check = try DaemonProcess(["--config", secondConfig, "--check-config"], directory: directory)
        #expect(check.wait() == .exited(0), "\(check.log)")
        #expect(try Self.snapshot(state) == before, "the refused daemons touched the state directory")

        first.send(.terminate)
        #expect(first.wait() == .exited(0), "\(first.log)")
        // The lock went with the first daemon: the next one starts, and takes the temporary
        // file, now left by nobody, for what it is.
        let next = try DaemonProcess(["--config", secondConfig], directory: directory)
        try #require(next.waitForLog("ready;"), "\(next.log)")
        #expect(next.log.contains("removed 1 temporary file left by an interrupted write of the jobs' state file (.jobs.json.tmp.123)"), "\(next.log)")
        #expect(try String(contentsOfFile: state + "/weavedid.lock", encoding: .utf8) == "\(next.pid)\n")
        next.send(.terminate)
        #expect(next.wait() == .exited(0), "\(next.log)")
    }

    /// The daemon reads the lock file itself when a mirror job's source holds the state
    /// directory; closing that file does not release the lock (as it would a classic POSIX
    /// record lock, which any close of the file by its process drops).
    @Test func aMirrorRunThatReadsTheLockFile_keepsTheLock() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let state = d + "/state"
        let firstConfig = Self.config(directory, name: "one.json", socket: d + "/one.sock", state: state, source: state)
        let first = try DaemonProcess(["--config", firstConfig], directory: directory)
        try #require(first.waitForLog("ready;"), "\(first.log)")
        let run = try VarlinkClient(path: d + "/one.sock").call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
        #expect(run?[member: "result"]?.stringValue == "success", "\(first.log)")
        #expect(try String(contentsOfFile: d + "/mirror/weavedid.lock", encoding: .utf8) == "\(first.pid)\n")
        let secondConfig = Self.config(directory, name: "two.json", socket: d + "/two.sock", state: state, source: d + "/elsewhere")
        let second = try DaemonProcess(["--config", secondConfig], directory: directory)
        #expect(second.wait() == .exited(1), "\(second.log)")
        #expect(second.log.contains("the state directory \"\(state)\" is in use by another weavedid (pid \(first.pid);"), "\(second.log)")
        first.send(.terminate)
        #expect(first.wait() == .exited(0), "\(first.log)")
    }

    /// A state directory the daemon cannot make (below a regular file here) refuses the start,
    /// naming the path and the error: without the lock, nothing keeps a second daemon out.
    @Test func aStateDirectoryThatCannotBeMade_refusesTheStart_namingIt() throws {
        let directory = TemporaryDirectory()
        let file = directory.write("file", "")
        let daemon = try DaemonProcess(environment: ["STATE_DIRECTORY": file + "/state"], directory: directory)
        #expect(daemon.wait() == .exited(1), "\(daemon.log)")
        #expect(daemon.log.contains("error   daemon: cannot lock the state directory \"\(file)/state\": creating \"\(file)/state\": "
            + "Not a directory (ENOTDIR); the daemon needs a state directory it may create and write in"), "\(daemon.log)")
        #expect(!fileExists(daemon.defaultSocket))
    }

    /// The `daemon.stateLock` check of the daemon at `socket`, as `RunChecks` runs it.
    static func lockCheck(_ socket: String) throws -> JSONValue? {
        try VarlinkClient(path: socket).check("daemon.stateLock")
    }

    /// `weavedid.lock` deleted while the daemon runs, then the whole state directory: the
    /// health loop's next round finds it gone, its fix makes it again (the directory too),
    /// locks it and writes the pid, and a second daemon started then is refused as before.
    @Test func aDeletedLockFile_isMadeAgainAndLocked_byTheHealthLoop() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let state = d + "/state"
        let config = directory.write("one.json", """
            {"stateDirectory": "\(state)", "control": {"socket": "\(d)/one.sock"}, "health": {"interval": 0.2}}
            """)
        let first = try DaemonProcess(["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_HEALTH": "1"], directory: directory)
        try #require(first.waitForLog("ready;"), "\(first.log)")
        let healthy = try Self.lockCheck(d + "/one.sock")
        #expect(healthy?[member: "status"]?.stringValue == "healthy", "\(healthy.map { "\($0)" } ?? "no check")")
        #expect(healthy?[member: "message"]?.stringValue == "holding the lock on \"\(state)/weavedid.lock\"")
        let second = d + "/two.json"
        _ = directory.write("two.json", #"{"stateDirectory": "\#(state)", "control": {"socket": "\#(d)/two.sock"}}"#)

        for (round, removed) in [state + "/weavedid.lock", state].enumerated() {
            try FileManager.default.removeItem(atPath: removed)
            #expect(first.waitForLog("\"daemon.stateLock\": healthy -> unhealthy: the lock file \"\(state)/weavedid.lock\" is gone "
                + "(deleted, or the state directory with it), so nothing keeps another weavedid off the state directory \"\(state)\" "
                + "(it would run the same jobs and write the same jobs.json); the check's fix makes the lock file again and locks it "
                + "(weavedictl fix daemon.stateLock)", count: round + 1), "\(first.log)")
            // This round's lines: the first round's are in the log already.
            #expect(first.waitForLog("fix of \"daemon.stateLock\" (automatic) succeeded: made \"\(state)/weavedid.lock\" again and locked it",
                                     count: round + 1), "\(first.log)")
            #expect(Self.waitForFile(state + "/weavedid.lock"))
            #expect(try String(contentsOfFile: state + "/weavedid.lock", encoding: .utf8) == "\(first.pid)\n")
            let refused = try DaemonProcess(["--config", second], directory: directory)
            #expect(refused.wait() == .exited(1), "round \(round): \(refused.log)")
            #expect(refused.log.contains("is in use by another weavedid (pid \(first.pid);"), "\(refused.log)")
            #expect(!fileExists(d + "/two.sock"))
        }
        #expect(((try? FileStatus(path: state, followSymlinks: false))?.permissions.rawValue).map { $0 & 0o777 } == 0o750)
        first.send(.terminate)
        #expect(first.wait() == .exited(0), "\(first.log)")
    }

    /// The lock file deleted, and a second daemon started before the check's fix ran (the
    /// health loop is off here): the second daemon made and locked a new file. The check says
    /// the file is not the one held; the fix fails, naming the second daemon's pid, takes
    /// nothing from it (its file and lock stay), and the check says two daemons share the
    /// directory. Once the second is stopped, the fix locks the file it left.
    @Test func aSecondDaemonThatLockedANewFile_isNamed_andKeepsItsLock() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let state = d + "/state"
        let lock = state + "/weavedid.lock"
        let one = directory.write("one.json", #"{"stateDirectory": "\#(state)", "control": {"socket": "\#(d)/one.sock"}}"#)
        let two = directory.write("two.json", #"{"stateDirectory": "\#(state)", "control": {"socket": "\#(d)/two.sock"}}"#)
        let first = try DaemonProcess(["--config", one], directory: directory)
        try #require(first.waitForLog("ready;"), "\(first.log)")
        try FileManager.default.removeItem(atPath: lock)
        let second = try DaemonProcess(["--config", two], directory: directory)
        try #require(second.waitForLog("ready;"), "\(second.log)")
        let inode = try FileStatus(path: lock, followSymlinks: false).inode

        let replaced = try Self.lockCheck(d + "/one.sock")
        #expect(replaced?[member: "status"]?.stringValue == "unhealthy", "\(replaced.map { "\($0)" } ?? "no check")")
        #expect(replaced?[member: "message"]?.stringValue == "the lock file \"\(lock)\" is not the file this daemon holds the lock on "
            + "(it was replaced), so nothing keeps another weavedid off the state directory \"\(state)\" (it would run the same jobs "
            + "and write the same jobs.json); the check's fix makes the lock file again and locks it (weavedictl fix daemon.stateLock)")
        let shared = "another weavedid (pid \(second.pid)) holds the lock on \"\(lock)\", made after the one this daemon (pid \(first.pid)) "
            + "locked was deleted or replaced: two daemons now share the state directory \"\(state)\", running the same jobs and "
            + "writing the same jobs.json; stop one of them"
        let client = try VarlinkClient(path: d + "/one.sock")
        let failed = try client.call("io.weavedi.Daemon.Fix", [("check", .string("daemon.stateLock"))]).parameter("fixes")?.arrayValue?.first
        #expect(failed?[member: "outcome"]?.stringValue == "failed", "\(failed.map { "\($0)" } ?? "no fix")")
        #expect(failed?[member: "error"]?.stringValue == shared, "\(failed.map { "\($0)" } ?? "no fix")")
        let named = try Self.lockCheck(d + "/one.sock")
        #expect(named?[member: "status"]?.stringValue == "unhealthy")
        #expect(named?[member: "message"]?.stringValue == shared, "\(named.map { "\($0)" } ?? "no check")")
        // The second daemon's file and lock are its own still.
        #expect(try FileStatus(path: lock, followSymlinks: false).inode == inode)
        #expect(try String(contentsOfFile: lock, encoding: .utf8) == "\(second.pid)\n")
        let three = directory.write("three.json", #"{"stateDirectory": "\#(state)", "control": {"socket": "\#(d)/three.sock"}}"#)
        let third = try DaemonProcess(["--config", three], directory: directory)
        #expect(third.wait() == .exited(1), "\(third.log)")
        #expect(third.log.contains("is in use by another weavedid (pid \(second.pid);"), "\(third.log)")

        second.send(.terminate)
        #expect(second.wait() == .exited(0), "\(second.log)")
        // Stopped, it is named no more: its file is merely another file.
        #expect(try Self.lockCheck(d + "/one.sock")?[member: "message"]?.stringValue == replaced?[member: "message"]?.stringValue)
        let fixed = try client.call("io.weavedi.Daemon.Fix", [("check", .string("daemon.stateLock"))]).parameter("fixes")?.arrayValue?.first
        #expect(fixed?[member: "outcome"]?.stringValue == "succeeded", "\(fixed.map { "\($0)" } ?? "no fix")")
        #expect(fixed?[member: "message"]?.stringValue == "locked the file now at \"\(lock)\"")
        #expect(try Self.lockCheck(d + "/one.sock")?[member: "status"]?.stringValue == "healthy")
        #expect(try String(contentsOfFile: lock, encoding: .utf8) == "\(first.pid)\n")
        let fourth = try DaemonProcess(["--config", three], directory: directory)
        #expect(fourth.wait() == .exited(1), "\(fourth.log)")
        #expect(fourth.log.contains("is in use by another weavedid (pid \(first.pid);"), "\(fourth.log)")
        first.send(.terminate)
        #expect(first.wait() == .exited(0), "\(first.log)")
    }
}
