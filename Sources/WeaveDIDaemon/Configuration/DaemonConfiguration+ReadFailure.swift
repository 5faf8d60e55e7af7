import Glibc
import WeaveDI
import WeaveDIPosix

extension DaemonConfiguration {
    /// What follows `cannot read: Permission denied (EACCES)` (or another error) about the
    /// configuration file at `path`, so that the line says what to do:
    ///
    /// - `EACCES`: who reads it (the daemon's user, or weavedictl's offline), and the file's
    ///   owner, group and mode, or those of the directory on its way that may not be searched,
    ///   with a remedy: the file readable by the reader's group, as the unit suggests
    ///   (`root:weavedi 0640`: `chgrp weavedi FILE; chmod 0640 FILE`);
    /// - `ENOENT` of a path that is a symbolic link: the link, and its target, which does not
    ///   exist;
    ///
    /// nothing for other errors.
    static func readFailureDetail(path: String, error: Errno) -> String {
        let cwd = FileDescriptor.currentWorkingDirectory
        if error == .noSuchFileOrDirectory {
            guard let status = try? FileStatus(path: path, followSymlinks: false), status.kind == .symbolicLink else { return "" }
            let target = (try? cwd.readSymbolicLink(at: path)).map { " to \(JSONValue.quotedPathForMessage($0))" } ?? ""
            return "; it is a symbolic link\(target), which does not exist: point the link at the configuration file, or give "
                + "the file's real path"
        }
        guard error == .permissionDenied else { return "" }
        let user = FileOwnership.currentUser
        let group = FileOwnership.groupName(getegid())
        // The first directory on the way that may not be searched: nothing below it is reached.
        let components = path.split(separator: "/", omittingEmptySubsequences: true).dropLast()
        var directory = path.hasPrefix("/") ? "" : "."
        for component in components {
            directory += "/" + component
            guard (try? cwd.checkAccess(at: directory, .execute)) == nil else { continue }
            let found = (try? FileStatus(path: directory, followSymlinks: true)).map { " (\(FileOwnership.describe($0)))" } ?? ""
            let shown = directory.shellWord.escapingControlCharacters
            return "; the user reading it (\(user)) may not search the directory \(JSONValue.quotedPathForMessage(directory))\(found) "
                + "on its way: let it pass (chgrp \(group) \(shown); chmod g+x \(shown)), or keep the file where it may"
        }
        let found = (try? FileStatus(path: path, followSymlinks: true)).map { " (\(FileOwnership.describe($0)))" } ?? ""
        let shown = path.shellWord.escapingControlCharacters
        return "; the user reading it (\(user)) may not read the file\(found): give it that user's group, readable by the group "
            + "and not by others if it holds anything secret (chgrp \(group) \(shown); chmod 0640 \(shown))"
    }
}
