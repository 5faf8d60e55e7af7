import Glibc
import WeaveDI
import WeaveDIPosix

extension DaemonConfiguration {
    /// What follows `cannot read: Permission denied (EACCES)` (or another error) about the
    /// configuration file at `path`, so that the line says what to do:
    ///
    /// - `EACCES`: who reads it (the daemon's user, or weavedictl's offline), and the file's
    ///   owner, group and mode, or those of the directory on its way that may not be searched,
    ///   with a remedy: the file readable by the service's group, as the unit suggests
    ///   (`root:weavedi 0640`: `chgrp weavedi FILE; chmod 0640 FILE`), and the reader in that
    ///   group when it is not. The service's group is `weavedi` where this machine has one (the
    ///   reader may be someone running `weavedictl --offline`, whose own group would shut the
    ///   daemon out), else the reader's own;
    /// - `ENOENT` of a path that is a symbolic link: the link, and its target, which does not
    ///   exist;
    ///
    /// nothing for other errors.
    static func readFailureDetail(path: String, error: Errno) -> String {
        let cwd = FileDescriptor.currentWorkingDirectory
        if error == .noSuchFileOrDirectory {
            guard let status = try? FileStatus(path: path, followSymlinks: false), status.kind == .symbolicLink else { return "" }
            return "; it is a symbolic link\(linkTarget(of: path)), which does not exist: point the link at the configuration file, or give "
                + "the file's real path"
        }
        guard error == .permissionDenied else { return "" }
        let user = FileOwnership.currentUser
        let (group, joining) = serviceGroupAdvice()
        // The first directory on the way that may not be searched: nothing below it is reached.
        let components = path.split(separator: "/", omittingEmptySubsequences: true).dropLast()
        var directory = path.hasPrefix("/") ? "" : "."
        for component in components {
            directory += "/" + component
            guard (try? cwd.checkAccess(at: directory, .execute)) == nil else { continue }
            let found = (try? FileStatus(path: directory, followSymlinks: true)).map { " (\(FileOwnership.describe($0)))" } ?? ""
            let shown = directory.shellWord.escapingControlCharacters
            return "; the user reading it (\(user)) may not search the directory \(JSONValue.quotedPathForMessage(directory))\(found) "
                + "on its way: let the group \(group) pass (chgrp \(group) \(shown); chmod g+x \(shown))\(joining), or keep the file "
                + "where it may"
        }
        let found = (try? FileStatus(path: path, followSymlinks: true)).map { " (\(FileOwnership.describe($0)))" } ?? ""
        let shown = path.shellWord.escapingControlCharacters
        return "; the user reading it (\(user)) may not read the file\(found): give it the group \(group), readable by the group "
            + "and not by others if it holds anything secret (chgrp \(group) \(shown); chmod 0640 \(shown))\(joining)"
    }

    /// The group a configuration file is to be readable by: `weavedi`, the service's, where
    /// the group database has it, else the reader's effective group; and, when the reader is
    /// not in it, how to add it (`; and add ciuser to the group weavedi (usermod -aG weavedi
    /// ciuser)`), else "".
    static func serviceGroupAdvice(named serviceGroup: String = "weavedi") -> (group: String, joining: String) {
        let service = (try? UserDatabase.group(named: serviceGroup)) ?? nil
        guard let service else { return (FileOwnership.groupName(getegid()), "") }
        let group = service.name.escapingControlCharacters
        let groups = ((try? CurrentProcess.supplementaryGroups()) ?? []) + [getegid()]
        guard !groups.contains(service.gid) else { return (group, "") }
        let name = FileOwnership.userName(CurrentProcess.effectiveUserID)
        let login = FileOwnership.nameForCommand(CurrentProcess.effectiveUserID).shellWord.escapingControlCharacters
        return (group, "; and add \(name) to the group \(group) (usermod -aG \(group) \(login))")
    }
}
