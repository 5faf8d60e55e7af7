import Foundation
import Testing
import WeaveDIPosix

/// Bind mounts for tests of the real daemon, made in a mount namespace of the daemon's own
/// (`unshare`): they need no privilege where user namespaces are allowed (`unshare -Urm`), the
/// rest of the machine never sees them, and they vanish with the daemon. As root without user
/// namespaces, `unshare -m` does the same. Elsewhere the tests are skipped (cancelled), saying why.
enum MountNamespace {
    /// The way to get a namespace here: `unshare` with its options, and the options `nsenter`
    /// needs to enter one; or why there is none.
    static let support: Result<(unshare: [String], nsenter: [String]), Unsupported> = probe()

    struct Unsupported: Error, CustomStringConvertible {
        let description: String
    }

    static let environment = ["PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"]

    /// Why bind mounts cannot be made here, or nil when they can.
    static var unsupportedReason: String? {
        if case let .failure(reason) = support { return reason.description }
        return nil
    }

    /// Cancels the running test (reported skipped, not passed), saying why, where bind mounts
    /// cannot be made here.
    static func requireSupport() throws {
        if let reason = unsupportedReason { try Test.cancel(Comment(rawValue: reason)) }
    }

    /// `wrapper(binding:)`; where there is none, cancels the running test (skipped), saying why.
    static func requiredWrapper(binding binds: [(String, String)] = []) throws -> [String] {
        try requireSupport()
        return try #require(wrapper(binding: binds))
    }

    /// Arguments that run a command (appended after them) in a namespace of its own where
    /// each `(source, target)` of `binds` is bind-mounted first; nil when there is no way.
    static func wrapper(binding binds: [(String, String)] = []) -> [String]? {
        guard case let .success(tools) = support else { return nil }
        var script = ""
        var arguments: [String] = []
        for (index, (source, target)) in binds.enumerated() {
            script += "mount --bind \"$\(2 * index + 1)\" \"$\(2 * index + 2)\" && "
            arguments += [source, target]
        }
        script += "shift \(arguments.count) && exec \"$@\""
        return tools.unshare + ["/bin/sh", "-c", script, "sh"] + arguments
    }

    /// Bind-mounts `source` on `target` in the mount namespace of the running process `pid`
    /// (one started through `wrapper`); the mount's output when it fails.
    static func bind(_ source: String, _ target: String, inNamespaceOf pid: Int32) throws -> String? {
        guard case let .success(tools) = support else { return "no mount namespaces here" }
        let result = try Subprocess.run(
            tools.nsenter[0], arguments: Array(tools.nsenter.dropFirst()) + ["-t", "\(pid)", "mount", "--bind", source, target],
            environment: environment)
        return result.status == .exited(0) ? nil : result.standardErrorText
    }

    /// Runs `command` (`mount -t tmpfs tmpfs /x`, `umount /x`) in the mount namespace of the
    /// running process `pid` (one started through `wrapper`); its output when it fails.
    static func run(_ command: [String], inNamespaceOf pid: Int32) throws -> String? {
        guard case let .success(tools) = support else { return "no mount namespaces here" }
        let result = try Subprocess.run(
            tools.nsenter[0], arguments: Array(tools.nsenter.dropFirst()) + ["-t", "\(pid)"] + command, environment: environment)
        return result.status == .exited(0) ? nil : result.standardErrorText
    }

    private static func probe() -> Result<(unshare: [String], nsenter: [String]), Unsupported> {
        guard let unshare = executable("unshare"), let nsenter = executable("nsenter") else {
            return .failure(Unsupported(description: "needs unshare and nsenter (util-linux)"))
        }
        let scratch = TemporaryDirectory("weavedi-mount-probe")
        scratch.write("source/file", "x")
        try? FileManager.default.createDirectory(atPath: scratch.path + "/target", withIntermediateDirectories: false)
        var ways = [([unshare, "-Urm"], [nsenter, "--preserve-credentials", "-U", "-m"])]
        if CurrentProcess.effectiveUserID == 0 { ways.append(([unshare, "-m"], [nsenter, "-m"])) }
        var failures: [String] = []
        for (unshareArguments, nsenterArguments) in ways {
            let run = try? Subprocess.run(
                unshareArguments[0],
                arguments: Array(unshareArguments.dropFirst())
                    + ["/bin/sh", "-c", "mount --bind \"$1\" \"$2\" && test -f \"$2\"/file", "sh",
                       scratch.path + "/source", scratch.path + "/target"],
                environment: environment)
            if run?.status == .exited(0) { return .success((unshareArguments, nsenterArguments)) }
            failures.append("\(unshareArguments.joined(separator: " ")): \(run?.standardErrorText.trimmingCharacters(in: .whitespacesAndNewlines) ?? "cannot run")")
        }
        return .failure(Unsupported(description: "needs a mount namespace with bind mounts, which neither root nor unshare gives here ("
            + failures.joined(separator: "; ") + ")"))
    }

    private static func executable(_ name: String) -> String? {
        ["/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/"].map { $0 + name }.first { access($0, X_OK) == 0 }
    }
}
