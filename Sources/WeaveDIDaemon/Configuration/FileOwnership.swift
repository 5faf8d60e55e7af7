import Glibc
import WeaveDI
import WeaveDIPosix

/// Who the daemon runs as, and whose a file is, for a message about a permission refused:
/// `uid 1001 (ciuser)`, `mode 0600, owner root, group root`. Names come from the user and group
/// databases; a number stays a number where there is none. Control characters in a name are
/// escaped, as everything from outside a message quotes.
enum FileOwnership {
    /// `uid 1001 (ciuser)`: the process's effective user.
    static var currentUser: String {
        let uid = CurrentProcess.effectiveUserID
        return "uid \(uid)" + ((try? UserDatabase.user(id: uid))?.map { " (\($0.name.escapingControlCharacters))" } ?? "")
    }

    /// `root`, or `uid 1234` without an entry in the user database.
    static func userName(_ uid: UInt32) -> String {
        (try? UserDatabase.user(id: uid))?.map { $0.name.escapingControlCharacters } ?? "uid \(uid)"
    }

    /// The user's name for a command (`chown -R weavedi: …`, `usermod … weavedi`), or its
    /// number without an entry in the user database (which those commands take too).
    static func nameForCommand(_ uid: UInt32) -> String {
        (try? UserDatabase.user(id: uid))?.map(\.name) ?? "\(uid)"
    }

    /// `weavedi`, or `gid 1234` without an entry in the group database.
    static func groupName(_ gid: UInt32) -> String {
        (try? UserDatabase.group(id: gid))?.map { $0.name.escapingControlCharacters } ?? "gid \(gid)"
    }

    /// `mode 0600, owner root, group root`.
    static func describe(_ status: FileStatus) -> String {
        "mode \(status.permissions), owner \(userName(status.userID)), group \(groupName(status.groupID))"
    }

    /// Whether `errno` says the daemon's user may not do what it tried there, for good: a
    /// permission (`EACCES`, `EPERM`) or a read-only file system (`EROFS`). Restarting does not
    /// mend it: the start exits 78 (EX_CONFIG), which the unit does not restart.
    static func isPermanentRefusal(_ errno: Int32) -> Bool {
        errno == EACCES || errno == EPERM || errno == EROFS
    }
}
