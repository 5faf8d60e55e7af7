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
}
