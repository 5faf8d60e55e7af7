import Foundation
import Testing
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
}
