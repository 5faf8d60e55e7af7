import Foundation
import Testing
import WeaveDIPosix

/// A file system that stops answering, as a hard NFS mount does when its server is gone: a FUSE
/// mount that nothing serves, made in the mount namespace of a daemon started through
/// `MountNamespace.wrapper`. Every lookup below its root (`realpath`, `stat`, `open`, `mkdir`)
/// waits for an answer that never comes, and nothing but SIGKILL ends the wait (the daemon
/// blocks its other signals, so nothing does). The connection stays up as long as a process
/// holds `/dev/fuse` open for it: `revive()` ends that process, the kernel then aborts the
/// connection, and every waiting call returns with an error (`ECONNABORTED`), as calls on a
/// mount that answers again at last. No FUSE library is involved: the mount is made with
/// `mount -t fuse -o fd=3` on a descriptor of `/dev/fuse`.
final class DeadMount {
    /// The mount point.
    let path: String
    private var holder: Subprocess?

    /// Why such a mount cannot be made here, or nil when it can.
    static var unsupportedReason: String? {
        if let reason = MountNamespace.unsupportedReason { return reason }
        guard access("/dev/fuse", R_OK | W_OK) == 0 else { return "needs /dev/fuse, readable and writable" }
        return nil
    }

    /// Cancels the running test (reported skipped, not passed), saying why, where no such mount
    /// can be made here.
    static func requireSupport() throws {
        if let reason = unsupportedReason { try Test.cancel(Comment(rawValue: reason)) }
    }

    /// Mounts the dead file system on the directory `path`, in the namespace of `pid`; throws
    /// the mount's output when it fails.
    init(at path: String, inNamespaceOf pid: Int32, scratch: TemporaryDirectory) throws {
        self.path = path
        guard case let .success(tools) = MountNamespace.support else {
            throw MountFailure(description: MountNamespace.unsupportedReason ?? "no mount namespaces here")
        }
        let marker = scratch.path + "/dead-mount-\(UUID().uuidString)"
        // fd 3 is the connection; the shell that holds it ends as `sleep`, which holds it on.
        let script = #"exec 3<>/dev/fuse && mount -t fuse -o fd=3,rootmode=40000,user_id=0,group_id=0 weavedi-dead "$1" "#
            + #"&& : >"$2" && exec sleep 3600"#
        let holder = try Subprocess.spawn(
            tools.nsenter[0],
            arguments: Array(tools.nsenter.dropFirst()) + ["-t", "\(pid)", "/bin/sh", "-c", script, "sh", path, marker],
            environment: MountNamespace.environment, standardOutput: .file(marker + ".log"), standardError: .file(marker + ".log"))
        let deadline = ContinuousClock.now + .seconds(30)
        while access(marker, F_OK) != 0 {
            if let status = try? holder.waitIfExited() {
                let output = (try? String(contentsOfFile: marker + ".log", encoding: .utf8)) ?? ""
                throw MountFailure(description: "the dead mount on \(path) failed (\(status)): \(output)")
            }
            if ContinuousClock.now > deadline {
                try? holder.kill(.kill)
                _ = try? holder.wait()
                throw MountFailure(description: "the dead mount on \(path) was not made within 30 s")
            }
            usleep(10_000)
        }
        self.holder = consume holder
    }

    deinit { revive() }

    /// Ends the connection: every call waiting on the mount returns, with an error.
    func revive() {
        guard let holder = holder.take() else { return }
        try? holder.kill(.kill)
        _ = try? holder.wait()
    }

    /// The threads of process `pid` stuck on a dead mount: in an uninterruptible wait (state
    /// `D`) inside FUSE, or behind a lookup of the same name that waits there
    /// (`d_alloc_parallel`), once the count is `expected` in three samples in a row, or after
    /// 10 s. A thread in such a wait elsewhere (flushing the state file to the local disk, or
    /// paging in the daemon's own code on a busy machine) is not counted.
    static func threadsWaiting(in pid: Int32, expected: Int) -> Int {
        var count = threadsWaitingInFUSE(in: pid)
        var agreeing = count == expected ? 1 : 0
        // Three samples in a row, 50 ms apart: a thread on its way to the mount, or back from
        // it, does not make the count.
        for _ in 0..<200 where agreeing < 3 {
            usleep(50_000)
            count = threadsWaitingInFUSE(in: pid)
            agreeing = count == expected ? agreeing + 1 : 0
        }
        return count
    }

    private static func threadsWaitingInFUSE(in pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.filter { task in
            let directory = "/proc/\(pid)/task/\(task)"
            let stat = (try? String(contentsOfFile: directory + "/stat", encoding: .utf8)) ?? ""
            // `tid (name) STATE …`; the name may hold anything, so the state follows the last ')'.
            guard stat.split(separator: ")").last?.split(separator: " ").first == "D" else { return false }
            // Where in the kernel it waits: its stack where readable (root), else its wait channel.
            let stack = (try? String(contentsOfFile: directory + "/stack", encoding: .utf8)) ?? ""
            let channel = (try? String(contentsOfFile: directory + "/wchan", encoding: .utf8)) ?? ""
            return ["fuse_", "d_alloc_parallel"].contains { stack.contains($0) }
                || ["fuse", "d_alloc_parallel"].contains { channel.contains($0) }
        }.count
    }

    struct MountFailure: Error, CustomStringConvertible {
        let description: String
    }
}
