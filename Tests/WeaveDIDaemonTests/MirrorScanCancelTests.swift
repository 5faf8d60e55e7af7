import Foundation
import Glibc
import Testing
import WeaveDIControl
import WeaveDIPosix

/// A run cancelled while it scans a large source directory stops at the next entry, in the
/// real daemon: it ends `cancelled` without looking at the rest of the directory's entries.
/// Before, its `lstat` of each entry went on to the end of the directory (a shutdown or a
/// reload waited for it, on a slow file system for long).
///
/// Each `lstat` of a name starting with `slow-` is made to last 2 ms, and counted in a file, by
/// a preloaded library (3,000 of them: 6 s at least).
@Suite struct MirrorScanCancelTests {
    static let files = 3000

    /// A reload that removes the job cancels its run while it scans the source's files: the
    /// run ends `cancelled`, without an error, having looked at fewer of the files than there are.
    @Test func aRunCancelledByAReload_whileScanning_stopsAtTheNextEntry() throws {
        let directory = TemporaryDirectory()
        let shim = try PreloadLibrary.holdingFstatat(#"""
            static void hold(const char *path) {
              const char *name = strrchr(path, '/');
              if (strncmp(name ? name + 1 : path, "slow-", 5) != 0) return;
              const char *counted = getenv("WEAVEDI_TEST_LOOKED_AT");
              if (counted) {
                int file = open(counted, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
                if (file >= 0) { (void)write(file, "x", 1); close(file); }
              }
              struct timespec pause = {0, 2000000};
              nanosleep(&pause, NULL);
            }
            """#, in: directory)
        try FileManager.default.createDirectory(atPath: directory.path + "/source", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        for file in 0..<Self.files {
            #expect(FileManager.default.createFile(atPath: directory.path + "/source/slow-\(file)", contents: Data("x".utf8)))
        }
        let lookedAt = directory.path + "/looked-at"
        func config(jobs: Bool) -> String {
            let job = """
                {"name": "docs", "source": "\(directory.path)/source", "destination": "\(directory.path)/mirror",
                  "interval": 3600, "runAtStart": true}
                """
            return #"{"shutdownTimeout": 2, "sync": {"jobs": [\#(jobs ? job : "")]}}"#
        }
        let path = directory.write("weavedid.json", config(jobs: true))
        let daemon = try DaemonProcess(
            ["--config", path], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0", "LD_PRELOAD": shim, "WEAVEDI_TEST_LOOKED_AT": lookedAt],
            directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        func looked() -> Int { (try? FileStatus(path: lookedAt, followSymlinks: false)).map { Int($0.size) } ?? 0 }
        let deadline = ContinuousClock.now + .seconds(30)
        while looked() < 20, ContinuousClock.now < deadline { usleep(10_000) }
        try #require(looked() >= 20, "the scan was not seen under way\n\(daemon.log)")
        directory.write("weavedid.json", config(jobs: false))
        #expect(try reloadFailure(daemon.defaultSocket) == nil)
        #expect(daemon.waitForLog("run docs-1 of a job removed by a reload cancelled"), "\(daemon.log)")
        #expect(daemon.log.contains("errors 0,"), "\(daemon.log)")
        #expect(looked() < Self.files, "each of the \(Self.files) files was looked at after the run was cancelled")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
