import Foundation
import Glibc
import Testing
import WeaveDIPosix

/// A library for `LD_PRELOAD`, built from C by the machine's compiler, that wraps a C library
/// call of the daemon (to slow it, count it): how the mirror tests make a step last without
/// timing anything.
enum PreloadLibrary {
    /// Builds `code` into `slow.so` in `directory`; returns its path, or nil (saying that
    /// `test` is skipped) without a C compiler. `slowing` names the call, for that message.
    static func build(_ code: String, in directory: TemporaryDirectory, slowing call: String, test: String) throws -> String? {
        guard access("/usr/bin/cc", X_OK) == 0 else {
            print("SKIPPED \(test): needs a C compiler (cc) to build the library that slows \(call)")
            return nil
        }
        let source = directory.write("slow.c", code)
        let library = directory.path + "/slow.so"
        let build = try Subprocess.run(
            "/usr/bin/cc", arguments: ["-O", "-shared", "-fPIC", "-o", library, source, "-ldl"], environment: ["PATH": "/usr/bin:/bin"])
        try #require(build.status == .exited(0), "\(build.standardErrorText)")
        return library
    }
}
