import Glibc
import WeaveDIPosix

/// Looks along a socket's path, after `connect` failed, for what on it is the cause: a
/// directory this user may not search (`EACCES` that is not the socket's), or a symbolic link
/// whose target does not exist (`ENOENT` for a path that seems to be there).
enum SocketPathCheck {
    /// A directory on the path that this user may not search, and what it is.
    struct UnsearchableDirectory {
        /// The directory, as a prefix of the socket's path.
        var path: String
        /// Its status (mode, owner, group), if it could be read.
        var status: FileStatus?
    }

    /// A symbolic link on the path (the socket's own, or a directory's) whose target is missing.
    struct DanglingLink {
        /// The link, as a prefix of the socket's path.
        var path: String
        /// What it points to, as written in it; nil if it could not be read.
        var target: String?
    }

    /// The directories the path goes through, from the top: `/a/b/c.sock` gives `/`, `/a`,
    /// `/a/b`; a relative `a/c.sock` gives `.` (the working directory) and `a`.
    static func directories(of path: String) -> [String] {
        let absolute = path.hasPrefix("/")
        let components = path.split(separator: "/", omittingEmptySubsequences: true).dropLast()
        var directories = [absolute ? "/" : "."]
        var prefix = absolute ? "" : "."
        for component in components {
            prefix = absolute || prefix != "." ? prefix + "/" + component : String(component)
            directories.append(prefix)
        }
        return directories
    }

    /// The first directory on the way to `path` that this user (its effective ids) may not
    /// search, if any: with it, nothing below can be reached, whatever the socket's own mode.
    /// Symbolic links on the way (the socket's own included) are followed to find it.
    static func unsearchableDirectory(on path: String) -> UnsearchableDirectory? {
        unsearchableDirectory(on: path, itself: false, links: 0)
    }

    /// `unsearchableDirectory(on:)`, `path` included when `itself` (a link's target directory),
    /// after `links` links (at most 8, against loops).
    private static func unsearchableDirectory(on path: String, itself: Bool, links: Int) -> UnsearchableDirectory? {
        guard links <= 8 else { return nil }
        for directory in directories(of: path) + (itself ? [path] : []) {
            if faccessat(AT_FDCWD, directory, X_OK, AT_EACCESS) == 0 { continue }
            // A directory that does not exist, or any other failure: not a search permission.
            guard Errno.current == .permissionDenied else { return nil }
            // A link to a directory: the one that may not be searched may be on its way.
            if let target = linkTarget(directory), let found = unsearchableDirectory(on: target, itself: true, links: links + 1) {
                return found
            }
            return UnsearchableDirectory(path: directory, status: try? FileStatus(path: directory, followSymlinks: true))
        }
        guard !itself, let target = linkTarget(path) else { return nil }
        return unsearchableDirectory(on: target, itself: false, links: links + 1)
    }

    /// The first symbolic link on `path` (its directories', then its own) whose target does
    /// not exist, if any; nil when the path is simply missing.
    static func danglingLink(on path: String) -> DanglingLink? {
        for prefix in directories(of: path).dropFirst() + [path] {
            guard let status = try? FileStatus(path: prefix, followSymlinks: false) else { return nil }
            guard status.kind == .symbolicLink else { continue }
            do {
                _ = try FileStatus(path: prefix, followSymlinks: true)
            } catch {
                guard error == .noSuchFileOrDirectory else { return nil }
                return DanglingLink(path: prefix, target: try? FileDescriptor.currentWorkingDirectory.readSymbolicLink(at: prefix))
            }
        }
        return nil
    }

    /// What `path` points to when it is a symbolic link, made relative to the working
    /// directory as the link's is; nil for anything else.
    private static func linkTarget(_ path: String) -> String? {
        guard let target = try? FileDescriptor.currentWorkingDirectory.readSymbolicLink(at: path) else { return nil }
        if target.hasPrefix("/") { return target }
        let parent = directories(of: path).last ?? "."
        return parent == "/" ? "/" + target : parent + "/" + target
    }
}
