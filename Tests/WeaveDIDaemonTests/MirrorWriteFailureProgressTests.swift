import Foundation
import Testing
import WeaveDIPosix

/// A run whose writes fail (`ENOSPC`, a full disk) says in its progress what it did, not 100 %:
/// the files that failed are not done. The failure is made by a preloaded library whose
/// `copy_file_range` refuses, with `ENOSPC`, to copy from a file whose name starts with `full-`.
@Suite struct MirrorWriteFailureProgressTests {
    @Test func aRunWhoseWritesFail_endsShortOfItsTotals() throws {
        let directory = TemporaryDirectory()
        let shim = try PreloadLibrary.build(#"""
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <errno.h>
            #include <stdio.h>
            #include <string.h>
            #include <sys/types.h>
            #include <unistd.h>
            ssize_t copy_file_range(int in, loff_t *inOffset, int out, loff_t *outOffset, size_t length, unsigned int flags) {
              static ssize_t (*next)(int, loff_t *, int, loff_t *, size_t, unsigned int);
              if (!next) next = (ssize_t (*)(int, loff_t *, int, loff_t *, size_t, unsigned int))dlsym(RTLD_NEXT, "copy_file_range");
              char link[64], path[4096];
              snprintf(link, sizeof link, "/proc/self/fd/%d", in);
              ssize_t size = readlink(link, path, sizeof path - 1);
              if (size > 0) {
                path[size] = 0;
                const char *name = strrchr(path, '/');
                if (name && strncmp(name + 1, "full-", 5) == 0) {
                  errno = ENOSPC;
                  return -1;
                }
              }
              return next(in, inOffset, out, outOffset, length, flags);
            }
            """#, in: directory, slowing: "copy_file_range")
        let mebibyte = String(repeating: "x", count: 1 << 20)
        directory.write("source/a.bin", mebibyte)
        directory.write("source/full-b.bin", mebibyte)
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(directory.path)/source", "destination": "\(directory.path)/mirror",
              "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], environment: ["LD_PRELOAD": shim], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")

        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", "docs", "--wait"], timeout: .seconds(120))
        #expect(run.code == 1, "\(run.all)\n\(daemon.log)")
        let lines = run.output.split(separator: "\n").map(String.init)
        let summary = lines.last { $0.hasPrefix("job docs: run docs-1 ") }
        #expect(summary?.hasPrefix("job docs: run docs-1 partial in ") == true, "\(run.all)")
        #expect(summary?.contains("copied 1,") == true && summary?.contains("errors 1,") == true, "\(run.all)")
        #expect(run.output.contains("copy_file_range: No space left on device (ENOSPC)"), "\(run.all)\n\(daemon.log)")
        // The last progress is what was done: one file of two, 1 MiB of 2, not 100 %; the
        // other failed.
        let progress = lines.last { $0.hasPrefix("progress: ") }
        #expect(progress == "progress: 1/2 files (1 failed), 1.0 MiB / 2.0 MiB (50%)", "\(run.all)")
        #expect(fileExists(directory.path + "/mirror/a.bin") && !fileExists(directory.path + "/mirror/full-b.bin"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
