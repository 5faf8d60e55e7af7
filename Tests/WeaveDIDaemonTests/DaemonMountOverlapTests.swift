import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Mirror trees that overlap only through bind mounts, which make two real paths name one
/// directory: the real daemon, in a mount namespace of its own (`MountNamespace`), refuses them
/// by device and inode at `--check-config`, at its start, and at a run's start.
@Suite struct DaemonMountOverlapTests {
    /// A configuration, and what the check says of it. In every path `@` stands for the test's
    /// directory.
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        /// Directories made before the daemon starts.
        let directories: [String]
        /// `(source, target)`: `mount --bind source target` in the daemon's namespace.
        let binds: [(String, String)]
        /// `(name, source, destination)`, all deleting.
        let jobs: [(String, String, String)]
        /// Sets `control.socket` to `@/run/control.sock`.
        var socketInRun = false
        /// Sets `stateDirectory` to this path below `@`.
        var stateDirectory: String? = nil
        /// The refusal after the file's name; nil when the file passes.
        let problem: String?

        var testDescription: String { name }

        func document(_ d: String) -> String {
            let entries = jobs.map {
                #"{"name": "\#($0.0)", "source": "\#(d)/\#($0.1)", "destination": "\#(d)/\#($0.2)", "delete": true, "interval": 3600}"#
            }
            let control = socketInRun ? #""control": {"socket": "\#(d)/run/control.sock"}, "# : ""
            let state = stateDirectory.map { #""stateDirectory": "\#(d)/\#($0)", "# } ?? ""
            return #"{\#(control)\#(state)"sync": {"jobs": [\#(entries.joined(separator: ", "))]}}"#
        }
    }

    static let cases: [Case] = [
        Case(
            name: "one directory at two paths",
            directories: ["a-src", "b-src", "backup", "alias"], binds: [("backup", "alias")],
            jobs: [("a", "a-src", "backup"), ("b", "b-src", "alias")],
            problem: #"sync.jobs[1].destination: the destination "@/alias" of job "b" is the destination "@/backup" of job "a" (sync.jobs[0]) through a mount: "@/alias" and "@/backup" are the same directory (same device and inode); the jobs would overwrite or delete each other's files"#),
        Case(
            name: "a destination not made yet, below a mount of another job's source",
            directories: ["data/src", "b-src", "backup", "mnt/alias"], binds: [("data/src", "mnt/alias")],
            jobs: [("a", "data/src", "backup"), ("b", "b-src", "mnt/alias/x")],
            problem: #"sync.jobs[1].destination: the destination "@/mnt/alias/x" of job "b" is inside the source "@/data/src" of job "a" (sync.jobs[0]) through a mount: "@/mnt/alias" and "@/data/src" are the same directory (same device and inode); the jobs would overwrite or delete each other's files"#),
        Case(
            name: "a mount of a directory inside another job's destination",
            directories: ["a-src", "data/src", "b-src", "mnt/alias"], binds: [("data/src", "mnt/alias")],
            jobs: [("a", "a-src", "data"), ("b", "b-src", "mnt/alias")],
            problem: #"sync.jobs[1].destination: the destination "@/mnt/alias" of job "b" is inside the destination "@/data" of job "a" (sync.jobs[0]) through a mount: "@/mnt/alias" and "@/data/src" are the same directory (same device and inode); the jobs would overwrite or delete each other's files"#),
        Case(
            name: "a source mounted inside another job's destination",
            directories: ["a-src", "data/src", "mnt/alias", "backup"], binds: [("data/src", "mnt/alias")],
            jobs: [("a", "a-src", "mnt"), ("b", "data/src", "backup")],
            problem: #"sync.jobs[1].source: the source "@/data/src" of job "b" is inside the destination "@/mnt" of job "a" (sync.jobs[0]) through a mount: "@/data/src" and "@/mnt/alias" are the same directory (same device and inode); the jobs would overwrite or delete each other's files"#),
        Case(
            name: "a destination inside its own source",
            directories: ["docs", "alias"], binds: [("docs", "alias")],
            jobs: [("docs", "docs", "alias/copy")],
            problem: #"sync.jobs[0].destination: the destination "@/alias/copy" of job "docs" is inside its source "@/docs" through a mount: "@/alias" and "@/docs" are the same directory (same device and inode)"#),
        Case(
            name: "a destination that holds the control socket",
            directories: ["a-src", "run", "alias"], binds: [("run", "alias")],
            jobs: [("a", "a-src", "alias")], socketInRun: true,
            problem: #"sync.jobs[0].destination: the destination "@/alias" of job "a" contains the control socket "@/run/control.sock" through a mount: "@/alias" and "@/run" are the same directory (same device and inode)"#),
        Case(
            name: "a destination that holds the state directory",
            directories: ["a-src", "var/state", "alias"], binds: [("var", "alias")],
            jobs: [("a", "a-src", "alias")], stateDirectory: "var/state",
            problem: #"sync.jobs[0].destination: the destination "@/alias" of job "a" contains the state directory "@/var/state" through a mount: "@/alias" and "@/var" are the same directory (same device and inode); the job would overwrite or delete the daemon's lock (weavedid.lock) and the jobs' state file (jobs.json) there"#),
        Case(
            name: "a destination at the jobs' state file, not made yet",
            directories: ["a-src", "state", "alias"], binds: [("state", "alias")],
            jobs: [("a", "a-src", "alias/jobs.json")], stateDirectory: "state",
            problem: #"sync.jobs[0].destination: the destination "@/alias/jobs.json" of job "a" is the jobs' state file "@/state/jobs.json" through a mount: "@/alias" and "@/state" are the same directory (same device and inode); a destination may lie inside the state directory, but not at the daemon's own files there"#),
        Case(
            name: "a destination inside the state directory, beside the daemon's files",
            directories: ["a-src", "state/mirror", "alias"], binds: [("state", "alias")],
            jobs: [("a", "a-src", "alias/mirror")], stateDirectory: "state",
            problem: nil),
        Case(
            name: "jobs apart, whatever is mounted",
            directories: ["a-src", "b-src", "backup", "other", "alias", "mnt/elsewhere"],
            binds: [("other", "alias"), ("a-src", "mnt/elsewhere")],
            jobs: [("a", "a-src", "backup"), ("b", "b-src", "alias")],
            problem: nil),
    ]

    /// Makes the case's directories in `directory`; the wrapper that starts a command in a
    /// namespace with its mounts; when there is none, cancels the test (skipped), saying why.
    static func prepare(_ testCase: Case, in directory: TemporaryDirectory) throws -> [String] {
        let wrapper = try MountNamespace.requiredWrapper(
            binding: testCase.binds.map { (directory.path + "/" + $0.0, directory.path + "/" + $0.1) })
        for path in testCase.directories {
            try FileManager.default.createDirectory(atPath: directory.path + "/" + path, withIntermediateDirectories: true)
        }
        return wrapper
    }

    /// (Parameterized: a test case cancelled is reported passed, so the condition is a trait.)
    @Test(.enabled(if: MountNamespace.unsupportedReason == nil, "needs a mount namespace with bind mounts"), arguments: cases)
    func checkConfig_refusesTreesThatOverlapThroughAMount(_ testCase: Case) throws {
        let directory = TemporaryDirectory()
        let wrapper = try Self.prepare(testCase, in: directory)
        let d = directory.path
        let config = directory.write("weavedid.json", testCase.document(d))
        let checked = try Subprocess.run(
            wrapper[0], arguments: Array(wrapper.dropFirst()) + [DaemonProcess.binary, "--check-config", "--config", config],
            environment: MountNamespace.environment)
        if let problem = testCase.problem?.replacingOccurrences(of: "@", with: d) {
            #expect(checked.status == .exited(78), "\(checked.standardErrorText)")
            #expect(checked.standardErrorText.contains("weavedid: \(config): \(problem)\n"), "\(checked.standardErrorText)")
        } else {
            #expect(checked.status == .exited(0), "\(checked.standardErrorText)")
            #expect(checked.standardOutputText == "weavedid: configuration OK (\(config))\n")
        }
        // Without the mounts, the same file passes: only the mounts join the trees.
        let unmounted = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
        #expect(unmounted.status == .exited(0), "\(unmounted.standardErrorText)")
    }

    @Test func theStart_refusesTreesThatOverlapThroughAMount_exit78() throws {
        let directory = TemporaryDirectory()
        let testCase = Self.cases[0]
        let wrapper = try Self.prepare(testCase, in: directory)
        let d = directory.path
        let config = directory.write("weavedid.json", testCase.document(d))
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify, wrapper: wrapper)
        #expect(daemon.wait() == .exited(78), "\(daemon.log)")
        let problem = try #require(testCase.problem).replacingOccurrences(of: "@", with: d)
        #expect(daemon.log.contains("\(config): \(problem)"), "\(daemon.log)")
        #expect(notify.wait { $0.contains("ERRNO=22") })
    }

    @Test func aRunIntoAnotherJobsTree_throughAMountMadeAfterTheStart_isRefused() throws {
        // b's destination was a directory of its own when the configuration was read; now a's
        // destination is mounted on it.
        let directory = TemporaryDirectory()
        let wrapper = try MountNamespace.requiredWrapper()
        let d = directory.path
        directory.write("a-source/a.txt", "a")
        directory.write("b-source/b.txt", "b")
        for path in ["backup", "later"] {
            try FileManager.default.createDirectory(atPath: d + "/" + path, withIntermediateDirectories: false)
        }
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [
              {"name": "a", "source": "\(d)/a-source", "destination": "\(d)/backup", "delete": true, "interval": 3600},
              {"name": "b", "source": "\(d)/b-source", "destination": "\(d)/later", "delete": true, "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], directory: directory, wrapper: wrapper)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        func run(_ name: String) throws -> JSONValue? {
            try client.call("io.weavedi.Daemon.RunJob", [("name", .string(name))]).parameter("run")
        }
        #expect(try run("a")?[member: "result"]?.stringValue == "success")
        #expect(try run("b")?[member: "result"]?.stringValue == "success")
        #expect(directory.read("later/b.txt") == "b")
        let failure = try MountNamespace.bind(d + "/backup", d + "/later", inNamespaceOf: daemon.pid)
        try #require(failure == nil, "\(failure ?? "")")
        let b = try run("b")
        #expect(b?[member: "result"]?.stringValue == "failed")
        #expect(b?[member: "message"]?.stringValue == "\"\(d)/later\": the destination \"\(d)/later\" is the destination \"\(d)/backup\" of job \"a\" (configured as \"\(d)/backup\") through a mount: \"\(d)/later\" and \"\(d)/backup\" are the same directory (same device and inode); the jobs would overwrite or delete each other's files")
        #expect(directory.read("backup/a.txt") == "a")
        #expect(directory.read("backup/b.txt") == nil)
        // a, for its part, no longer runs into b's tree either.
        let a = try run("a")
        #expect(a?[member: "result"]?.stringValue == "failed")
        #expect(a?[member: "message"]?.stringValue == "\"\(d)/backup\": the destination \"\(d)/backup\" is the destination \"\(d)/later\" of job \"b\" (configured as \"\(d)/later\") through a mount: \"\(d)/backup\" and \"\(d)/later\" are the same directory (same device and inode); the jobs would overwrite or delete each other's files")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aRunOverTheStateDirectory_throughAMountMadeAfterTheStart_isRefused() throws {
        // The state directory is in a directory of its own, clear of the destination when the
        // configuration was read; now that directory is mounted on the destination.
        let directory = TemporaryDirectory()
        let wrapper = try MountNamespace.requiredWrapper()
        let d = directory.path
        directory.write("source/a.txt", "a")
        for path in ["holder", "later"] {
            try FileManager.default.createDirectory(atPath: d + "/" + path, withIntermediateDirectories: false)
        }
        let state = d + "/holder/state"
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [
              {"name": "docs", "source": "\(d)/source", "destination": "\(d)/later", "delete": true, "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["STATE_DIRECTORY": state], directory: directory, wrapper: wrapper)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        func run() throws -> JSONValue? {
            try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
        }
        #expect(try run()?[member: "result"]?.stringValue == "success")
        let failure = try MountNamespace.bind(d + "/holder", d + "/later", inNamespaceOf: daemon.pid)
        try #require(failure == nil, "\(failure ?? "")")
        let refused = try run()
        #expect(refused?[member: "result"]?.stringValue == "failed")
        #expect(refused?[member: "message"]?.stringValue == "\"\(d)/later\": the destination \"\(d)/later\" of job \"docs\" contains the state directory \"\(state)\" through a mount: \"\(d)/later\" and \"\(d)/holder\" are the same directory (same device and inode); the job would overwrite or delete the daemon's lock (weavedid.lock) and the jobs' state file (jobs.json) there")
        // Nothing was copied there, and the daemon's files are where they were.
        #expect(directory.read("holder/a.txt") == nil)
        #expect(FileManager.default.fileExists(atPath: state + "/weavedid.lock"))
        #expect(directory.read("holder/state/jobs.json", once: "\"docs\"") != nil)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }
}
