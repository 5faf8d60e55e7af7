import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// A file system mounted below a deleting job's source that is not mounted at a later run (a
/// mount that failed after a reboot) leaves an empty directory: the run deleted that part of
/// the backup. The real daemon, in a mount namespace of its own where the test mounts a tmpfs
/// below the source, remembers the mount point in `jobs.json`, and a later run, in that
/// process after an `umount` or in the next one (whose namespace has no mount, as after a
/// reboot), deletes nothing under it and is partial, naming it.
@Suite struct DaemonSourceMountTests {
    static let unmounted = "was a mount point at the last run and is now an empty directory on the parent's file system "
        + "(is it mounted?); nothing under it deleted"

    private struct Setup {
        let directory = TemporaryDirectory("weavedi-source-mount")
        var d: String { directory.path }
        var stateFile: String { d + "/state/jobs.json" }

        init() throws {
            directory.write("src/keep.txt", "k")
            try FileManager.default.createDirectory(atPath: d + "/src/photos", withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: d + "/bk", withIntermediateDirectories: false)
            directory.write("weavedid.json", """
                {"sync": {"jobs": [{"name": "m", "source": "\(d)/src", "destination": "\(d)/bk", "interval": 3600,
                  "delete": true}]}}
                """)
        }

        func start(wrapper: [String] = []) throws -> DaemonProcess {
            let daemon = try DaemonProcess(
                ["--config", d + "/weavedid.json"], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory,
                wrapper: wrapper)
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            return daemon
        }

        func run(_ daemon: DaemonProcess) throws -> JSONValue? {
            try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.RunJob", [("name", .string("m"))]).parameter("run")
        }

        func stop(_ daemon: DaemonProcess) {
            daemon.send(.terminate)
            #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        }

        func photos() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: d + "/bk/photos")) ?? []).sorted()
        }

        func remembered() throws -> JSONValue? {
            let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: stateFile))))
            return saved[member: "jobs"]?[member: "m"]?[member: "sourceMounts"]
        }
    }

    @Test func aFileSystemNotMountedBelowTheSource_isNotDeletedFromTheBackup_thenOrAfterARestart() throws {
        let setup = try Setup()
        let d = setup.d
        let wrapper = try MountNamespace.requiredWrapper()
        var daemon = try setup.start(wrapper: wrapper)
        func inNamespace(_ command: [String]) throws {
            let failed = try MountNamespace.run(command, inNamespaceOf: daemon.pid)
            try #require(failed == nil, "\(failed ?? "")")
        }
        try inNamespace(["mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", d + "/src/photos"])
        try inNamespace(["/bin/sh", "-c", "for n in a b c; do echo $n > \"$1/$n.jpg\"; done", "sh", d + "/src/photos"])
        let first = try setup.run(daemon)
        #expect(first?[member: "result"]?.stringValue == "success", "\(String(describing: first))\n\(daemon.log)")
        #expect(first?[member: "filesCopied"]?.intValue == 4)
        #expect(setup.photos() == ["a.jpg", "b.jpg", "c.jpg"])

        // Unmounted while the daemon runs.
        try inNamespace(["umount", d + "/src/photos"])
        let unmounted = try setup.run(daemon)
        #expect(unmounted?[member: "result"]?.stringValue == "partial", "\(String(describing: unmounted))\n\(daemon.log)")
        #expect(unmounted?[member: "filesDeleted"]?.intValue == 0)
        #expect(unmounted?[member: "message"]?.stringValue == "1 item(s) failed; first: \"photos\": \(Self.unmounted)",
                "\(String(describing: unmounted))")
        #expect(setup.photos() == ["a.jpg", "b.jpg", "c.jpg"])
        setup.stop(daemon)
        // Kept across the restart (whose namespace has no mount: the reboot after which the
        // mount failed).
        #expect(try setup.remembered() == .object([("source", .string(d + "/src")), ("paths", .array([.string("photos")]))]))

        daemon = try setup.start()
        let afterRestart = try setup.run(daemon)
        #expect(afterRestart?[member: "result"]?.stringValue == "partial", "\(String(describing: afterRestart))\n\(daemon.log)")
        #expect(afterRestart?[member: "failedItems"] == .array([.object([("path", .string("photos")), ("reason", .string(Self.unmounted))])]),
                "\(String(describing: afterRestart))")
        #expect(afterRestart?[member: "filesDeleted"]?.intValue == 0)
        #expect(setup.photos() == ["a.jpg", "b.jpg", "c.jpg"])

        // Unmounted for good: the operator removes the directory from the source, and its part
        // of the backup goes, forgotten.
        try FileManager.default.removeItem(atPath: d + "/src/photos")
        let removed = try setup.run(daemon)
        #expect(removed?[member: "result"]?.stringValue == "success", "\(String(describing: removed))\n\(daemon.log)")
        #expect(removed?[member: "filesDeleted"]?.intValue == 4)
        #expect(!FileManager.default.fileExists(atPath: d + "/bk/photos"))
        setup.stop(daemon)
        #expect(try setup.remembered() == .null)
    }

    /// `sourceMounts` no run writes is dropped alone and said in the log: the job keeps the
    /// rest of its entry (its pause), and remembers no mount point until its next run looks.
    @Test(arguments: [
        (#""sourceMounts": 5"#, "sourceMounts: expected an object or null, got 5"),
        (#""sourceMounts": {"paths": []}"#, "sourceMounts.source: expected a string, got nothing"),
        (#""sourceMounts": {"source": "srv", "paths": []}"#, #"sourceMounts.source: expected an absolute path, got "srv""#),
        (#""sourceMounts": {"source": "/srv"}"#, "sourceMounts.paths: expected an array, got nothing"),
        (#""sourceMounts": {"source": "/srv", "paths": [\#((0...64).map { "\"p\($0)\"" }.joined(separator: ", "))]}"#,
         "sourceMounts.paths: expected at most 64 items, got 65"),
        (#""sourceMounts": {"source": "/srv", "paths": [1]}"#, "sourceMounts.paths[0]: expected a string, got 1"),
        (#""sourceMounts": {"source": "/srv", "paths": ["a", "../etc"]}"#,
         #"sourceMounts.paths[1]: expected a path relative to the source, of names that are not empty, . or .., got "../etc""#),
        (#""sourceMounts": {"source": "/srv", "paths": ["\#(String(repeating: "a", count: 1025))"]}"#,
         "sourceMounts.paths[0]: expected at most 1024 bytes, got 1025"),
        (#""cleanupDue": "yes""#, #"cleanupDue: expected true or false, got "yes""#),
        (#""sourceMounts": {"source": "/srv", "paths": ["a", "b/c"]}, "cleanupDue": false"#, nil),
    ] as [(String, String?)])
    func valuesNoRunWrites_areDroppedAlone(field: String, problem: String?) throws {
        let setup = try Setup()
        setup.directory.write("state/jobs.json", #"""
            {"jobs": {"m": {"consecutiveFailures": 2, "paused": true, "firstSeenAt": 1700000000, \#(field)}}}
            """#)
        let daemon = try setup.start()
        if let problem {
            #expect(daemon.log.contains(#"warning sync: \#(setup.stateFile): job "m": \#(problem); that field is dropped, "#
                + "the job keeps the rest of its previous results"), "\(daemon.log)")
        } else {
            #expect(!daemon.log.contains(setup.stateFile), "\(daemon.log)")
        }
        #expect(daemon.log.contains("m: paused, as it was when the daemon stopped"), "\(daemon.log)")
        setup.stop(daemon)
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: setup.stateFile))))
        let entry = saved[member: "jobs"]?[member: "m"]
        #expect(entry?[member: "paused"] == .bool(true), "\(saved.serialized)")
        #expect(entry?[member: "consecutiveFailures"]?.intValue == 2)
        if problem == nil {
            #expect(entry?[member: "sourceMounts"]?[member: "paths"] == .array([.string("a"), .string("b/c")]), "\(saved.serialized)")
        }
    }
}
