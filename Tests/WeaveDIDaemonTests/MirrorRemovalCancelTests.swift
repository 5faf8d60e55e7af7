import Foundation
import Glibc
import Testing
import WeaveDIControl
import WeaveDIPosix

/// A run with `delete` that is cancelled while it removes a large tree from the destination
/// stops at the next entry, in the real daemon: the run ends `cancelled`, what it removed is
/// counted, the rest of the tree stays, and the read-only directories it made writable to
/// empty them get their modes back; the next run goes on. Before, the removal only told the
/// step watchdog it was moving, and went on until the whole tree was gone: a reload removing
/// the job waited for it, a shutdown overran its timeout.
///
/// The tree's removal is made to last by a preloaded library that has `unlinkat` pause 2 ms
/// on each name starting with `slow-` (3,000 of them: 6 s at least), and modes stop only a
/// user who is not root, so the daemon runs as `nobody` (through `setpriv`), as the service's
/// `weavedi` user would.
@Suite struct MirrorRemovalCancelTests {
    /// What the destination holds that the run removes, every directory read-only (mode 0555).
    enum Layout: CaseIterable, Sendable {
        /// `extra`, which the source does not have, holding `subdirectories` directories of
        /// `files / subdirectories` files.
        case tree
        /// The same tree in the way of a file of the source named `extra`.
        case treeInTheWay
        /// `files` files in the destination root itself.
        case flat
    }

    static let subdirectories = 20
    static let files = 3000

    private struct Setup {
        let directory: TemporaryDirectory
        let shim: String
        let layout: Layout
        var source: String { directory.path + "/source" }
        var destination: String { directory.path + "/mirror" }
        /// The directory holding what goes.
        var extra: String { layout == .flat ? destination : destination + "/extra" }
        var subdirectories: Int { layout == .flat ? 0 : MirrorRemovalCancelTests.subdirectories }
        var asNobody: [String] { ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] }

        func config(jobs: Bool = true, runAtStart: Bool = true) -> String {
            let job = """
                {"name": "docs", "source": "\(source)", "destination": "\(destination)", "interval": 3600,
                  "runAtStart": \(runAtStart), "delete": true}
                """
            // The call limit is raised from its 10 s: the next run's `RunJob` (a call without
            // `more`, answered at the run's end) removes 3,000 files, longer than 10 s on a busy
            // machine.
            return """
                {"shutdownTimeout": 2, "control": {"callTimeout": 300}, "sync": {"jobs": [\(jobs ? job : "")]}}
                """
        }

        /// Starts the daemon as `nobody`, `slowed` with the shim preloaded.
        func start(_ config: String, slowed: Bool = true) throws -> DaemonProcess {
            let path = directory.write("weavedid.json", config)
            let daemon = try DaemonProcess(
                ["--config", path], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0", "LD_PRELOAD": slowed ? shim : ""],
                directory: directory, wrapper: asNobody)
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            return daemon
        }

        /// The files left to remove, and the subdirectories left.
        func remaining() throws -> (files: Int, subdirectories: [String]) {
            guard fileExists(extra) else { return (0, []) }
            let names = try FileDescriptor.currentWorkingDirectory.directoryEntries(at: extra).map(\.name)
            if layout == .flat { return (names.filter { $0.hasPrefix("slow-") }.count, []) }
            let files = try names.reduce(0) { $0 + (try FileDescriptor.currentWorkingDirectory.directoryEntries(at: extra + "/" + $1).count) }
            return (files, names)
        }

        /// Waits until the run has removed some of the tree's files, but not all.
        func waitUntilRemoving() throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                let files = try remaining().files
                if files < MirrorRemovalCancelTests.files - 20 { return files > 0 }
                usleep(20_000)
            }
            return false
        }

        /// The directories left whose mode is not 0555, with their mode.
        func modesNotGivenBack() throws -> [String] {
            guard fileExists(extra) else { return [] }
            return try ([""] + remaining().subdirectories.map { "/" + $0 }).compactMap { name in
                let mode = try FileStatus(path: extra + name, followSymlinks: false).permissions.rawValue
                return mode == 0o555 ? nil : "\(extra)\(name): \(String(mode, radix: 8))"
            }
        }
    }

    /// The fixture; where the test cannot run (not root, no `setpriv`, no C compiler), cancels
    /// it (skipped).
    private func setUp(_ layout: Layout = .tree) throws -> Setup {
        try ChildAsNobody.requirePossible()
        let directory = TemporaryDirectory()
        let shim = try PreloadLibrary.build(#"""
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <string.h>
            #include <time.h>
            int unlinkat(int directory, const char *path, int flags) {
              static int (*next)(int, const char *, int);
              if (!next) next = (int (*)(int, const char *, int))dlsym(RTLD_NEXT, "unlinkat");
              const char *name = strrchr(path, '/');
              if (strncmp(name ? name + 1 : path, "slow-", 5) == 0) {
                struct timespec pause = {0, 2000000};
                nanosleep(&pause, NULL);
              }
              return next(directory, path, flags);
            }
            """#, in: directory, slowing: "unlinkat")
        let setup = Setup(directory: directory, shim: shim, layout: layout)
        directory.write("source/keep.txt", "kept")
        if layout == .treeInTheWay { directory.write("source/extra", "a file where the destination has the tree") }
        let holders = setup.subdirectories == 0 ? [setup.extra] : (0..<setup.subdirectories).map { setup.extra + "/s\($0)" }
        for (index, holder) in holders.enumerated() {
            try FileManager.default.createDirectory(atPath: holder, withIntermediateDirectories: true)
            for file in 0..<Self.files / holders.count {
                #expect(FileManager.default.createFile(atPath: holder + "/slow-\(index)-\(file)", contents: Data("x".utf8)))
            }
        }
        let owned = try Subprocess.run("/bin/chown", arguments: ["-R", "65534:65534", directory.path], environment: [:])
        try #require(owned.status == .exited(0), "\(owned.standardErrorText)")
        for holder in Set(holders + [setup.extra]) { #expect(chmod(holder, 0o555) == 0) }
        return setup
    }

    /// A reload that removes the job cancels its run while it removes a tree (one the source
    /// no longer has, or one in the way of a file the source has now under its name) or many
    /// files of one directory: the run ends `cancelled` there, counting what went, the rest
    /// still there and the directories' modes given back, and no error (what was being
    /// removed was reported `cancelled`, as though it could not be removed).
    /// (Parameterized: a test case cancelled is reported passed, so the conditions are traits.)
    @Test(
        .enabled(if: ChildAsNobody.isPossible, ChildAsNobody.unsupportedReason),
        .enabled(if: PreloadLibrary.isPossible, "needs a C compiler (cc) to build the library that slows unlinkat"),
        arguments: Layout.allCases)
    func aRunCancelledByAReload_whileRemoving_stopsThere_andGivesTheModesBack(layout: Layout) throws {
        let setup = try setUp(layout)
        let daemon = try setup.start(setup.config(runAtStart: false))
        // Followed to its end (`weavedictl run-job --wait`), which the reply gives with its counts.
        let follower = try RawClient(daemon.defaultSocket)
        try follower.send(call("io.weavedi.Daemon.RunJob", #"{"name":"docs"}"#, extra: #","more":true"#))
        try #require(try setup.waitUntilRemoving(), "the removal was not seen under way\n\(daemon.log)")
        setup.directory.write("weavedid.json", setup.config(jobs: false))
        #expect(try reloadFailure(daemon.defaultSocket) == nil)
        var last: VarlinkReply?
        repeat { last = follower.varlinkReply(timeout: .seconds(30)) } while last?.continues == true
        let run = last?.parameter("run")
        #expect(run?[member: "result"]?.stringValue == "cancelled", "\(String(describing: last))\n\(daemon.log)")
        #expect(run?[member: "errors"]?.intValue == 0, "\(String(describing: run))")
        #expect(daemon.waitForLog("run docs-1 of a job removed by a reload cancelled"), "\(daemon.log)")
        let left = try setup.remaining()
        #expect(left.files > 0, "the whole tree was removed after the run was cancelled")
        #expect(try setup.modesNotGivenBack() == [])
        // Each file and directory removed counted: the subdirectories emptied went too.
        let gone = Self.files - left.files + setup.subdirectories - left.subdirectories.count
        #expect(run?[member: "filesDeleted"]?.intValue == gone, "\(String(describing: run))")
        // The log says so in the line of every run's end, with its counts and message.
        let ended = daemon.log.split(separator: "\n").first { $0.contains("run docs-1 of a job removed by a reload cancelled") }
        #expect(
            ended?.contains(" cancelled in ") == true
                && ended?.contains("(copied 0, updated 0, deleted \(gone), skipped 0, errors 0, ") == true
                && ended?.hasSuffix("): the job was removed from the configuration by a reload; stopped at a safe point") == true,
            "\(ended ?? "-")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// SIGTERM while a run removes the tree: the run stops there, `cancelled`, and the daemon
    /// exits within its `shutdownTimeout` (2 s), not after the whole tree (which overran it:
    /// exit status 1). The next run, which the next start makes at once as the last one was
    /// cancelled, removes the rest.
    @Test func sigtermWhileARunRemovesATree_stopsTheRemoval_andTheNextRunGoesOn() throws {
        let setup = try setUp()
        let daemon = try setup.start(setup.config())
        try #require(daemon.waitForLog("run docs-1 started"), "\(daemon.log)")
        try #require(try setup.waitUntilRemoving(), "the removal was not seen under way\n\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(daemon.log.contains("run docs-1 cancelled"), "\(daemon.log)")
        let left = try setup.remaining()
        #expect(left.files > 0, "the whole tree was removed after the run was cancelled")
        #expect(try setup.modesNotGivenBack() == [])

        let again = try setup.start(setup.config(runAtStart: false), slowed: false)
        #expect(again.waitForLog("docs: its last run docs-1 was cancelled (the destination may be behind): it runs again now"), "\(again.log)")
        try #require(again.waitForLog("run docs-2 success"), "\(again.log)")
        let deleted = left.files + left.subdirectories.count + 1
        let ended = again.log.split(separator: "\n").first { $0.contains("run docs-2 success in ") }
        #expect(ended?.contains(", deleted \(deleted), ") == true, "\(again.log)")
        #expect(!fileExists(setup.extra))
        #expect(setup.directory.read("mirror/keep.txt") == "kept")
        again.send(.terminate)
        #expect(again.wait() == .exited(0), "\(again.log)")
    }
}
