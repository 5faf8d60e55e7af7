import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// A running job's progress counts the files that failed (`filesFailed`), as they fail, not
/// only the done ones. The run is held at known points by a preloaded library whose
/// `copy_file_range`, for a file whose name starts with `slow-`, creates `reached-NAME` in the
/// directory `WEAVEDI_TEST_GATE` names, then waits for `release-NAME` there.
@Suite struct MirrorFailedProgressTests {
    static let gate = #"""
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/types.h>
        #include <unistd.h>
        ssize_t copy_file_range(int in, loff_t *inOffset, int out, loff_t *outOffset, size_t length, unsigned int flags) {
          static ssize_t (*next)(int, loff_t *, int, loff_t *, size_t, unsigned int);
          if (!next) next = (ssize_t (*)(int, loff_t *, int, loff_t *, size_t, unsigned int))dlsym(RTLD_NEXT, "copy_file_range");
          const char *gate = getenv("WEAVEDI_TEST_GATE");
          char link[64], path[4096], marker[8192];
          snprintf(link, sizeof link, "/proc/self/fd/%d", in);
          ssize_t size = readlink(link, path, sizeof path - 1);
          if (gate && size > 0) {
            path[size] = 0;
            const char *name = strrchr(path, '/');
            if (name && strncmp(name + 1, "slow-", 5) == 0) {
              snprintf(marker, sizeof marker, "%s/reached-%s", gate, name + 1);
              close(open(marker, O_WRONLY | O_CREAT, 0644));
              snprintf(marker, sizeof marker, "%s/release-%s", gate, name + 1);
              for (int i = 0; i < 30000 && access(marker, F_OK) != 0; i++) usleep(10000);  /* 300 s at most */
            }
          }
          return next(in, inOffset, out, outOffset, length, flags);
        }
        """#

    @Test func aFileThatFails_countsInTheProgress_whileTheRunGoesOn() throws {
        let directory = TemporaryDirectory()
        let shim = try PreloadLibrary.build(Self.gate, in: directory, slowing: "copy_file_range")
        let d = directory.path
        let gate = d + "/gate"
        try FileManager.default.createDirectory(atPath: gate, withIntermediateDirectories: true)
        // Two large files (each a batch of its own), copied one after the other (one worker),
        // and a file whose name is not valid UTF-8: an error of the scan of the root.
        let large = String(repeating: "x", count: 2 << 20)
        directory.write("source/slow-1.bin", large)
        directory.write("source/slow-2.bin", large)
        let badName = Array((d + "/source/bad-").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF), 0]
        let made = open(badName, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(made >= 0, "cannot create a file with a name that is not UTF-8: errno \(errno)")
        close(made)
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(d)/source", "destination": "\(d)/mirror",
              "interval": 3600, "workers": 1}]}}
            """)
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["LD_PRELOAD": shim, "WEAVEDI_TEST_GATE": gate], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")

        let client = try RawClient(daemon.defaultSocket)
        try client.send(call("io.weavedi.Daemon.RunJob", #"{"name":"docs"}"#, extra: #","more":true"#))
        // One large file is being copied (which comes first is the file system's listing
        // order: tmpfs lists the newest first): the scan of the root, its error among it, is
        // done. The meter sends progress at most once per interval (50 ms, a lower bound the
        // wait below passes whatever the load), so the end of that file's batch sends
        // progress; the other file then holds the run, so that progress reaches us.
        let first = try #require(waitForAny([gate + "/reached-slow-1.bin", gate + "/reached-slow-2.bin"]), "\(daemon.log)")
        let firstName = String(first.dropFirst((gate + "/reached-").count))
        let secondName = firstName == "slow-1.bin" ? "slow-2.bin" : "slow-1.bin"
        Thread.sleep(forTimeInterval: 0.2)
        directory.write("gate/release-" + firstName, "")
        try #require(waitFor(gate + "/reached-" + secondName), "\(daemon.log)")
        // The progress that counts the first file done (sent as its batch ended) came after the
        // scan's error: it counts that too.
        var seen: [JSONValue] = []
        var afterFirst: JSONValue?
        while afterFirst == nil, let reply = client.varlinkReply() {
            guard let progress = reply.parameter("progress"), !progress.isNull else { continue }
            seen.append(progress)
            if progress[member: "filesDone"]?.intValue == 1 { afterFirst = progress }
        }
        let progress = try #require(afterFirst, "no progress counted the first file: \(seen)\n\(daemon.log)")
        #expect(progress[member: "filesFailed"]?.intValue == 1, "\(progress)")
        #expect(progress[member: "filesTotal"]?.intValue == 3, "\(progress)")
        directory.write("gate/release-" + secondName, "")
        var run: JSONValue?
        while run == nil, let reply = client.varlinkReply() {
            if let value = reply.parameter("run"), !value.isNull { run = value }
        }
        #expect(run?[member: "result"]?.stringValue == "partial", "\(String(describing: run))")
        #expect(run?[member: "errors"]?.intValue == 1, "\(String(describing: run))")
        #expect(fileExists(d + "/mirror/slow-1.bin") && fileExists(d + "/mirror/slow-2.bin"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Whether `path` exists within a generous deadline: the run reaches it at its own pace.
    private func waitFor(_ path: String) -> Bool { waitForAny([path]) != nil }

    /// The first of `paths` found to exist within a generous deadline, or nil.
    private func waitForAny(_ paths: [String]) -> String? {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let path = paths.first(where: { access($0, F_OK) == 0 }) { return path }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }
}
