import Foundation
import Glibc
import Testing
import WeaveDIPosix

/// A library for `LD_PRELOAD`, built from C by the machine's compiler, that wraps a C library
/// call of the daemon (to slow it, count it): how the mirror tests make a step last without
/// timing anything.
enum PreloadLibrary {
    /// Whether there is a C compiler to build such a library with.
    static var isPossible: Bool { access("/usr/bin/cc", X_OK) == 0 }

    /// Builds `code` into `slow.so` in `directory`; returns its path. Without a C compiler,
    /// cancels the running test (reported skipped, not passed); `slowing` names the call, for
    /// that reason.
    static func build(_ code: String, in directory: TemporaryDirectory, slowing call: String) throws -> String {
        guard isPossible else {
            try Test.cancel("needs a C compiler (cc) to build the library that slows \(call)")
        }
        let source = directory.write("slow.c", code)
        let library = directory.path + "/slow.so"
        let build = try Subprocess.run(
            "/usr/bin/cc", arguments: ["-O", "-shared", "-fPIC", "-o", library, source, "-ldl"], environment: ["PATH": "/usr/bin:/bin"])
        try #require(build.status == .exited(0), "\(build.standardErrorText)")
        return library
    }

    /// A library whose `openat` and `openat64` call `static void hold(const char *path)`, the C
    /// function `hold` defines (with what it needs before it: `includes`, helpers), before
    /// they open: a test holds a daemon at the open of a file of its choosing.
    static func holdingOpenat(_ hold: String, in directory: TemporaryDirectory) throws -> String {
        try build(#"""
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <fcntl.h>
            #include <stdarg.h>
            #include <stdlib.h>
            #include <string.h>
            #include <time.h>
            #include <unistd.h>
            """# + "\n" + hold + "\n" + #"""
            int openat(int directory, const char *path, int flags, ...) {
              static int (*next)(int, const char *, int, ...);
              if (!next) next = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
              va_list arguments; va_start(arguments, flags); mode_t mode = va_arg(arguments, mode_t); va_end(arguments);
              hold(path);
              return next(directory, path, flags, mode);
            }
            int openat64(int directory, const char *path, int flags, ...) {
              static int (*next)(int, const char *, int, ...);
              if (!next) next = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat64");
              va_list arguments; va_start(arguments, flags); mode_t mode = va_arg(arguments, mode_t); va_end(arguments);
              hold(path);
              return next(directory, path, flags, mode);
            }
            """#, in: directory, slowing: "openat")
    }

    /// A library whose `fstatat` and `fstatat64` (what `lstat` and `stat` come down to) call
    /// `static void hold(const char *path)`, the C function `hold` defines (with what it needs
    /// before it: helpers, state), before they look: a test holds or slows a daemon at the look
    /// at a file of its choosing.
    static func holdingFstatat(_ hold: String, in directory: TemporaryDirectory) throws -> String {
        try build(#"""
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <fcntl.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #include <sys/stat.h>
            #include <time.h>
            #include <unistd.h>
            """# + "\n" + hold + "\n" + #"""
            int fstatat(int directory, const char *path, struct stat *status, int flags) {
              static int (*next)(int, const char *, struct stat *, int);
              if (!next) next = (int (*)(int, const char *, struct stat *, int))dlsym(RTLD_NEXT, "fstatat");
              hold(path);
              return next(directory, path, status, flags);
            }
            int fstatat64(int directory, const char *path, struct stat64 *status, int flags) {
              static int (*next)(int, const char *, struct stat64 *, int);
              if (!next) next = (int (*)(int, const char *, struct stat64 *, int))dlsym(RTLD_NEXT, "fstatat64");
              hold(path);
              return next(directory, path, status, flags);
            }
            """#, in: directory, slowing: "fstatat")
    }
}
