import Glibc

/// An entry of the user database (`struct passwd`).
public struct UserRecord: Hashable, Sendable {
    /// The login name (`pw_name`).
    public var name: String
    /// The user id (`pw_uid`).
    public var uid: UInt32
    /// The primary group id (`pw_gid`).
    public var gid: UInt32
    /// The home directory (`pw_dir`).
    public var homeDirectory: String
    /// The login shell (`pw_shell`).
    public var shell: String
}

/// An entry of the group database (`struct group`).
public struct GroupRecord: Hashable, Sendable {
    /// The group name (`gr_name`).
    public var name: String
    /// The group id (`gr_gid`).
    public var gid: UInt32
    /// The user names listed as members (`gr_mem`); primary members are not listed.
    public var members: [String]
}

/// Thread-safe user and group lookups through the reentrant `get*_r` functions (NSS aware).
public enum UserDatabase {
    /// Looks up a user by name (`getpwnam_r`); `nil` when there is no such user.
    public static func user(named name: String) throws(Errno) -> UserRecord? {
        try lookupUser { entry, buffer, size, result in getpwnam_r(name, entry, buffer, size, result) }
    }

    /// Looks up a user by id (`getpwuid_r`); `nil` when there is no such user.
    public static func user(id: UInt32) throws(Errno) -> UserRecord? {
        try lookupUser { entry, buffer, size, result in getpwuid_r(id, entry, buffer, size, result) }
    }

    /// Looks up a group by name (`getgrnam_r`); `nil` when there is no such group.
    public static func group(named name: String) throws(Errno) -> GroupRecord? {
        try lookupGroup { entry, buffer, size, result in getgrnam_r(name, entry, buffer, size, result) }
    }

    /// Looks up a group by id (`getgrgid_r`); `nil` when there is no such group.
    public static func group(id: UInt32) throws(Errno) -> GroupRecord? {
        try lookupGroup { entry, buffer, size, result in getgrgid_r(id, entry, buffer, size, result) }
    }

    private typealias Lookup<Entry> = (
        UnsafeMutablePointer<Entry>, UnsafeMutablePointer<CChar>, Int,
        UnsafeMutablePointer<UnsafeMutablePointer<Entry>?>
    ) -> Int32

    private static func lookupUser(_ call: Lookup<passwd>) throws(Errno) -> UserRecord? {
        try lookup(call) { entry in
            UserRecord(
                name: String(cString: entry.pw_name), uid: entry.pw_uid, gid: entry.pw_gid,
                homeDirectory: String(cString: entry.pw_dir), shell: String(cString: entry.pw_shell))
        }
    }

    private static func lookupGroup(_ call: Lookup<group>) throws(Errno) -> GroupRecord? {
        try lookup(call) { entry in
            var members: [String] = []
            if var member = entry.gr_mem {
                while let name = member.pointee {
                    members.append(String(cString: name))
                    member += 1
                }
            }
            return GroupRecord(name: String(cString: entry.gr_name), gid: entry.gr_gid, members: members)
        }
    }

    /// Calls a `get*_r` function, growing the string buffer while it reports `ERANGE`.
    private static func lookup<Entry, Record>(
        _ call: Lookup<Entry>,
        _ convert: (Entry) -> Record
    ) throws(Errno) -> Record? {
        var size = 1024
        while true {
            let entry = UnsafeMutablePointer<Entry>.allocate(capacity: 1)
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
            var result: UnsafeMutablePointer<Entry>? = nil
            defer {
                entry.deallocate()
                buffer.deallocate()
            }
            let status = call(entry, buffer, size, &result)
            if status == ERANGE && size < 1 << 24 {
                size *= 4
                continue
            }
            if status == EINTR { continue }
            // "Not found" is status 0 (or ENOENT/ESRCH from some NSS modules) with a nil result.
            if status == 0 || status == ENOENT || status == ESRCH {
                guard let found = result else { return nil }
                return convert(found.pointee)
            }
            throw Errno(rawValue: status)
        }
    }
}
