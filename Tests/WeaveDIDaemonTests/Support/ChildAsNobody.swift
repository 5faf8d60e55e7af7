import Foundation
import Testing
import WeaveDIPosix

/// Child tests run as `nobody`: permission bits do not stop root, so a test that needs them to
/// runs this test binary again as uid and gid 65534 through `setpriv`, filtered to one of its
/// `child…` tests (enabled only where the parent sets `variable`, to the fixture's `root`).
enum ChildAsNobody {
    /// Whether the child tests can run as `nobody`: this test binary runs as root, and `setpriv`
    /// is there.
    static var isPossible: Bool {
        CurrentProcess.effectiveUserID == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
    }

    /// Why the child tests cannot run as `nobody`, for a test's `.enabled(if:)` trait.
    static let unsupportedReason: Comment = "needs root and setpriv"

    /// Cancels the running test (reported skipped, not passed) when the child tests cannot run
    /// as `nobody`.
    static func requirePossible() throws {
        if !isPossible { try Test.cancel(unsupportedReason) }
    }

    /// Runs the child test `suite/name` as `nobody`, under the program `wrapper` (the set-ID
    /// filter) when given.
    static func run(
        _ suite: String, _ name: String, _ variable: String, root: String, wrapper: String? = nil
    ) throws -> SubprocessResult {
        try Subprocess.run(
            "/usr/bin/setpriv",
            arguments: ["--reuid=65534", "--regid=65534", "--clear-groups"] + (wrapper.map { [$0] } ?? [])
                + [CommandLine.arguments[0], "--testing-library", "swift-testing", "--filter", "\(suite)/\(name)"],
            environment: ["PATH": "/usr/bin:/bin", variable: root])
    }
}
