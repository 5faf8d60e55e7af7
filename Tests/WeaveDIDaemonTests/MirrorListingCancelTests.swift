import Foundation
import Glibc
import Testing
import WeaveDIControl
import WeaveDIPosix

/// A run cancelled while it lists one huge directory stops listing at its next batch of names,
/// in the real daemon: it ends `cancelled` without reading the rest of the directory's names,
/// nothing done in it, and a directory it made writable to list it gets its mode back. Before,
/// the listing only told the step watchdog it was moving and went on to the directory's end (a
/// shutdown overran its timeout, a reload waited for it).
///
/// The listing is made to last by a preloaded library that has `readdir` pause
/// `WEAVEDI_TEST_LISTING_PAUSE` microseconds on each name starting with `slow-`, and count it
/// in the file `WEAVEDI_TEST_LISTED` (10,000 of them at 500 µs: 5 s at least).
@Suite struct MirrorListingCancelTests {
    static let files = 10_000

    /// Where the huge directory is, and what lists it.
    enum Layout: CaseIterable, Sendable {
        /// `extra`, mode 0555, which the source does not have: the removal (`delete`) makes it
        /// writable, then lists it.
        case removedTree
        /// `sub`, which the source has too: mode 0311 in the destination, which its owner may not
        /// list, so the scan opens it as its owner may (its `rwx` added) and lists it.
        case unreadableSubdirectory

        var name: String { self == .removedTree ? "extra" : "sub" }
        var mode: mode_t { self == .removedTree ? 0o555 : 0o311 }
    }

    private struct Setup {
        let directory: TemporaryDirectory
        let shim: String
        var source: String { directory.path + "/source" }
        var destination: String { directory.path + "/mirror" }
        var listed: String { directory.path + "/listed" }

        func config(jobs: Bool = true, runAtStart: Bool = true, delete: Bool = false) -> String {
            let job = """
                {"name": "docs", "source": "\(source)", "destination": "\(destination)", "interval": 3600,
                  "runAtStart": \(runAtStart), "delete": \(delete)}
                """
            return """
                {"shutdownTimeout": 2, "control": {"callTimeout": 300}, "sync": {"jobs": [\(jobs ? job : "")]}}
                """
        }

        /// Starts the daemon with the shim preloaded, each `slow-` name listed pausing `pause`
        /// microseconds; as `nobody` (through `setpriv`) when `asNobody`, for modes to stop it.
        func start(_ config: String, pause: Int = 500, asNobody: Bool = false) throws -> DaemonProcess {
            let path = directory.write("weavedid.json", config)
            let daemon = try DaemonProcess(
                ["--config", path],
                environment: [
                    "WEAVEDI_REGISTRY_AUTO_FIX": "0", "LD_PRELOAD": shim, "WEAVEDI_TEST_LISTED": listed,
                    "WEAVEDI_TEST_LISTING_PAUSE": String(pause),
                ],
                directory: directory, wrapper: asNobody ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [])
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            return daemon
        }

        /// How many `slow-` names were listed so far.
        func listedCount() -> Int {
            (try? FileStatus(path: listed, followSymlinks: false)).map { Int($0.size) } ?? 0
        }

        /// Waits until the daemon is seen listing `slow-` names.
        func waitUntilListing() -> Bool {
            let deadline = ContinuousClock.now + .seconds(30)
            while listedCount() < 20, ContinuousClock.now < deadline { usleep(10_000) }
            return listedCount() >= 20
        }

        /// Makes `count` files `slow-…` in `path`.
        func fill(_ path: String, count: Int = MirrorListingCancelTests.files) throws {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            for file in 0..<count {
                #expect(FileManager.default.createFile(atPath: path + "/slow-\(file)", contents: Data("x".utf8)))
            }
        }
    }

    /// The fixture, with the shim built; without a C compiler, cancels the test (skipped).
    private func setUp() throws -> Setup {
        let directory = TemporaryDirectory()
        let shim = try PreloadLibrary.build(#"""
            #define _GNU_SOURCE
            #include <dirent.h>
            #include <dlfcn.h>
            #include <fcntl.h>
            #include <stdlib.h>
            #include <string.h>
            #include <time.h>
            #include <unistd.h>
            static void slow(const char *name) {
              if (strncmp(name, "slow-", 5) != 0) return;
              const char *counted = getenv("WEAVEDI_TEST_LISTED");
              if (counted) {
                int file = open(counted, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
                if (file >= 0) { (void)write(file, "x", 1); close(file); }
              }
              const char *pause = getenv("WEAVEDI_TEST_LISTING_PAUSE");
              long microseconds = pause ? atol(pause) : 0;
              if (microseconds > 0) {
                struct timespec span = {microseconds / 1000000, (microseconds % 1000000) * 1000};
                nanosleep(&span, NULL);
              }
            }
            struct dirent *readdir(DIR *stream) {
              static struct dirent *(*next)(DIR *);
              if (!next) next = (struct dirent *(*)(DIR *))dlsym(RTLD_NEXT, "readdir");
              struct dirent *entry = next(stream);
              if (entry) slow(entry->d_name);
              return entry;
            }
            struct dirent64 *readdir64(DIR *stream) {
              static struct dirent64 *(*next)(DIR *);
              if (!next) next = (struct dirent64 *(*)(DIR *))dlsym(RTLD_NEXT, "readdir64");
              struct dirent64 *entry = next(stream);
              if (entry) slow(entry->d_name);
              return entry;
            }
            """#, in: directory, slowing: "readdir")
        return Setup(directory: directory, shim: shim)
    }

    /// SIGTERM while a run lists a source directory of 10,000 names: the listing stops at its
    /// next batch, the run ends `cancelled` having copied nothing, and the daemon exits within
    /// its `shutdownTimeout` (2 s; it overran it, exit status 1, listing to the end).
    @Test func sigtermWhileListingAHugeSourceDirectory_stopsTheListing() throws {
        let setup = try setUp()
        try setup.fill(setup.source)
        try FileManager.default.createDirectory(atPath: setup.destination, withIntermediateDirectories: true)
        let daemon = try setup.start(setup.config())
        try #require(setup.waitUntilListing(), "the listing was not seen under way\n\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(daemon.log.contains("run docs-1 cancelled"), "\(daemon.log)")
        #expect(setup.listedCount() < Self.files, "each of the \(Self.files) names was listed after the run was cancelled")
        #expect(try FileDescriptor.currentWorkingDirectory.directoryEntries(at: setup.destination).isEmpty)
    }

    /// A reload that removes the job cancels its run while it lists a huge destination
    /// directory it made writable to (a tree the source no longer has, which it removes; a
    /// subdirectory its owner may not list): the listing stops at its next batch, the run ends
    /// `cancelled` without an error, nothing in the directory removed, and its mode given back.
    /// (Parameterized: a test case cancelled is reported passed, so the conditions are traits.)
    @Test(
        .enabled(if: ChildAsNobody.isPossible, ChildAsNobody.unsupportedReason),
        .enabled(if: PreloadLibrary.isPossible, "needs a C compiler (cc) to build the library that slows readdir"),
        arguments: Layout.allCases)
    func aRunCancelledByAReload_whileListingAHugeDestinationDirectory_stopsThere_andGivesTheModeBack(layout: Layout) throws {
        let setup = try setUp()
        setup.directory.write("source/keep.txt", "kept")
        if layout == .unreadableSubdirectory { setup.directory.write("source/sub/keep.txt", "kept") }
        let huge = setup.destination + "/" + layout.name
        try setup.fill(huge)
        let owned = try Subprocess.run("/bin/chown", arguments: ["-R", "65534:65534", setup.directory.path], environment: [:])
        try #require(owned.status == .exited(0), "\(owned.standardErrorText)")
        #expect(chmod(huge, layout.mode) == 0)
        let daemon = try setup.start(setup.config(delete: layout == .removedTree), asNobody: true)
        try #require(setup.waitUntilListing(), "the listing was not seen under way\n\(daemon.log)")
        setup.directory.write("weavedid.json", setup.config(jobs: false))
        #expect(try reloadFailure(daemon.defaultSocket) == nil)
        #expect(daemon.waitForLog("run docs-1 of a job removed by a reload cancelled", timeout: .seconds(60)), "\(daemon.log)")
        let ended = daemon.log.split(separator: "\n").first { $0.contains("run docs-1 of a job removed by a reload cancelled") }
        #expect(ended?.contains("errors 0,") == true, "\(daemon.log)")
        #expect(setup.listedCount() < Self.files, "each of the \(Self.files) names was listed after the run was cancelled")
        #expect(try FileStatus(path: huge, followSymlinks: false).permissions.rawValue == layout.mode)
        #expect(chmod(huge, 0o755) == 0)
        #expect(try FileDescriptor.currentWorkingDirectory.directoryEntries(at: huge).count == Self.files)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A run with `delete` reads the source root's names once: its start's check for an empty
    /// source (whose disk may not be mounted) stops at the first name, instead of reading (and
    /// holding) all of them before the walk reads them again.
    @Test func aRunWithDelete_readsTheSourceRootsNamesOnce() throws {
        let setup = try setUp()
        let files = 1_000
        try setup.fill(setup.source, count: files)
        try FileManager.default.createDirectory(atPath: setup.destination, withIntermediateDirectories: true)
        let daemon = try setup.start(setup.config(runAtStart: false, delete: true), pause: 0)
        let run = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))])
            .parameter("run")
        #expect(run?[member: "result"]?.stringValue == "success", "\(String(describing: run))\n\(daemon.log)")
        #expect(run?[member: "filesCopied"]?.intValue == files, "\(String(describing: run))")
        // The walk's listing, and at most the first name for the check.
        #expect(setup.listedCount() <= files + 1, "\(setup.listedCount()) names listed")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
