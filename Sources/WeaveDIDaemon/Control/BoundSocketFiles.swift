import WeaveDI
import WeaveDIPosix

/// The socket files a daemon bound and has not removed yet, each by its path and inode: what
/// an exit that cannot wait for the services to stop (a shutdown past `shutdownTimeout`)
/// removes all the same, so that no socket file without a listener is left behind. One per
/// daemon (`DaemonContext.socketFiles`).
public final class BoundSocketFiles: Sendable {
    /// None yet.
    public init() {}

    private let files = Locked<[ObjectIdentifier: (path: String, inode: UInt64)]>([:])

    /// Notes that `owner` bound the socket file at `path`, whose inode is `inode` (in place of
    /// the one it noted before, if any).
    func note(_ owner: AnyObject, path: String, inode: UInt64) {
        files.withLock { $0[ObjectIdentifier(owner)] = (path, inode) }
    }

    /// Forgets `owner`'s file: it removed the file itself.
    func forget(_ owner: AnyObject) {
        files.withLock { $0[ObjectIdentifier(owner)] = nil }
    }

    /// Removes each file noted, if the path still names it (not a socket another process bound
    /// there since); returns the paths removed.
    func removeAll() -> [String] {
        let noted = files.withLock { files in
            defer { files = [:] }
            return Array(files.values)
        }
        return noted.compactMap { Self.remove($0.path, ifInode: $0.inode) ? $0.path : nil }
    }

    /// Removes the file at `path` if its inode is `inode`; whether it did.
    static func remove(_ path: String, ifInode inode: UInt64) -> Bool {
        guard (try? FileStatus(path: path, followSymlinks: false))?.inode == inode else { return false }
        return (try? FileDescriptor.currentWorkingDirectory.unlink(at: path)) != nil
    }
}
