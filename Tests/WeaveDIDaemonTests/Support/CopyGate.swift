import Foundation
import Glibc
import Testing
import WeaveDIPosix

/// A preloaded library (`PreloadLibrary`) that holds the daemon's runs at known points, and
/// counts the ends of file it reads from sockets: facts to wait for instead of bets on time.
///
/// - `copy_file_range` of a file whose name starts with `slow-` creates `reached-NAME` in the
///   directory `WEAVEDI_TEST_GATE` names, then waits (300 s at most) for `release-NAME` there.
///   Hold briefly: the run's walk watch fails a copy step that has not moved on within 5 s plus
///   1 s per MiB (7 s for a 2 MiB file).
/// - `recv` that returns 0 (a peer's end of file) appends one byte to the file
///   `WEAVEDI_TEST_EOFS` names.
struct CopyGate {
    static let code = #"""
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/socket.h>
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
              close(open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
              snprintf(marker, sizeof marker, "%s/release-%s", gate, name + 1);
              for (int i = 0; i < 30000 && access(marker, F_OK) != 0; i++) usleep(10000);
            }
          }
          return next(in, inOffset, out, outOffset, length, flags);
        }
        ssize_t recv(int socket, void *buffer, size_t length, int flags) {
          static ssize_t (*next)(int, void *, size_t, int);
          if (!next) next = (ssize_t (*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "recv");
          ssize_t count = next(socket, buffer, length, flags);
          const char *eofs = getenv("WEAVEDI_TEST_EOFS");
          if (count == 0 && length > 0 && eofs) {
            int file = open(eofs, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (file >= 0) { (void)write(file, "e", 1); close(file); }
          }
          return count;
        }
        """#

    /// The library, built in `directory`.
    let library: String
    /// The gate's directory (`WEAVEDI_TEST_GATE`).
    let gate: String
    /// The file counting ends of file (`WEAVEDI_TEST_EOFS`).
    let eofs: String

    /// Builds the library in `directory`; without a C compiler, cancels the running test
    /// (reported skipped).
    static func build(in directory: TemporaryDirectory) throws -> CopyGate {
        let library = try PreloadLibrary.build(code, in: directory, slowing: "copy_file_range")
        let gate = directory.path + "/gate"
        try FileManager.default.createDirectory(atPath: gate, withIntermediateDirectories: true)
        return CopyGate(library: library, gate: gate, eofs: directory.path + "/eofs")
    }

    /// The daemon's environment for the library.
    var environment: [String: String] {
        ["LD_PRELOAD": library, "WEAVEDI_TEST_GATE": gate, "WEAVEDI_TEST_EOFS": eofs]
    }

    /// Whether the copy of `name` has reached the gate within a generous deadline.
    func waitForReached(_ name: String) -> Bool { waitForAny([name]) != nil }

    /// The first of `names` whose copy reached the gate within a generous deadline, or nil.
    func waitForAny(_ names: [String]) -> String? {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let name = names.first(where: hasReached) { return name }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    /// Whether the copy of `name` has reached the gate.
    func hasReached(_ name: String) -> Bool { access(gate + "/reached-" + name, F_OK) == 0 }

    /// Lets the copy of `name` go on.
    func release(_ name: String) {
        close(open(gate + "/release-" + name, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644))
    }

    /// How many ends of file the daemon has read from sockets.
    var endsOfFileRead: Int {
        (try? FileManager.default.attributesOfItem(atPath: eofs)[.size] as? Int) ?? 0
    }
}
