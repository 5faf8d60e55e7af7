import Glibc

/// The permission bits of a file mode (`mode_t` & 0o7777), written as an octal literal.
///
/// ```swift
/// let mode: FilePermissions = 0o600
/// ```
public struct FilePermissions: OptionSet, Hashable, Sendable, ExpressibleByIntegerLiteral,
    CustomStringConvertible
{
    /// The raw `mode_t` permission bits.
    public let rawValue: UInt32

    /// Wraps raw permission bits; bits outside 0o7777 are dropped.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue & 0o7777
    }

    /// Creates permissions from an octal literal such as `0o644`.
    public init(integerLiteral value: UInt32) {
        self.init(rawValue: value)
    }

    /// Owner may read (`S_IRUSR`).
    public static var ownerRead: FilePermissions { 0o400 }
    /// Owner may write (`S_IWUSR`).
    public static var ownerWrite: FilePermissions { 0o200 }
    /// Owner may execute or search (`S_IXUSR`).
    public static var ownerExecute: FilePermissions { 0o100 }
    /// Group may read (`S_IRGRP`).
    public static var groupRead: FilePermissions { 0o040 }
    /// Group may write (`S_IWGRP`).
    public static var groupWrite: FilePermissions { 0o020 }
    /// Group may execute or search (`S_IXGRP`).
    public static var groupExecute: FilePermissions { 0o010 }
    /// Others may read (`S_IROTH`).
    public static var otherRead: FilePermissions { 0o004 }
    /// Others may write (`S_IWOTH`).
    public static var otherWrite: FilePermissions { 0o002 }
    /// Others may execute or search (`S_IXOTH`).
    public static var otherExecute: FilePermissions { 0o001 }
    /// Set-user-ID on execution (`S_ISUID`).
    public static var setUserID: FilePermissions { 0o4000 }
    /// Set-group-ID on execution, or inherit group in directories (`S_ISGID`).
    public static var setGroupID: FilePermissions { 0o2000 }
    /// Restricted deletion in directories (`S_ISVTX`).
    public static var sticky: FilePermissions { 0o1000 }

    /// The usual mode for new regular files, `0o644` before the umask.
    public static var defaultFile: FilePermissions { 0o644 }
    /// The usual mode for new directories, `0o755` before the umask.
    public static var defaultDirectory: FilePermissions { 0o755 }

    /// The mode as messages show it: four octal digits, such as `0644`, `0750` or `1777`, as
    /// `chmod(1)` takes a mode and systemd's `UMask=` and `*Mode=` settings write one. Every
    /// message that shows a mode shows it so: the leading digit (the set-id and sticky bits)
    /// is always there, so `0755` and `1777` line up and a mode never reads as a decimal.
    public var description: String {
        let digits = String(rawValue, radix: 8)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }
}

extension FileDescriptor {
    /// Changes the permission bits of the open file (`fchmod(2)`), unaffected by the umask.
    public func setPermissions(_ permissions: FilePermissions) throws(Errno) {
        try nothingOrErrno { fchmod(rawValue, mode_t(permissions.rawValue)) }
    }

    /// Changes the permission bits of the file this `pathOnly` handle (`O_PATH`) is open on,
    /// where `fchmod` fails (`EBADF`): through `/proc/self/fd`, whose entry leads to the
    /// handle's own file, never to what its path names now.
    public func setPermissionsOfPathHandle(_ permissions: FilePermissions) throws(Errno) {
        try "/proc/self/fd/\(rawValue)".withCStringTyped { (cPath) throws(Errno) in
            try nothingOrErrno { chmod(cPath, mode_t(permissions.rawValue)) }
        }
    }

    /// Changes the group of the file this `pathOnly` handle (`O_PATH`) is open on, leaving its
    /// owner (`fchownat(2)` with `AT_EMPTY_PATH`): the handle's own file, never what its path
    /// names now.
    public func setGroupOfPathHandle(_ group: UInt32) throws(Errno) {
        try nothingOrErrno { fchownat(rawValue, "", uid_t.max, gid_t(group), LinuxSymbols.atEmptyPath) }
    }

    /// Changes the permission bits of `path` relative to this directory (`fchmodat(2)`), following links.
    public func setPermissions(at path: String, _ permissions: FilePermissions) throws(Errno) {
        try path.withCStringTyped { (cPath) throws(Errno) in
            try nothingOrErrno { fchmodat(rawValue, cPath, mode_t(permissions.rawValue), 0) }
        }
    }
}

extension FileDescriptor {
    /// Changes the group of `path` relative to this directory, leaving the owner
    /// (`fchownat(2)`, not following a final symbolic link).
    public func changeOwner(at path: String, group: UInt32) throws(Errno) {
        try path.withCStringTyped { (cPath) throws(Errno) in
            try nothingOrErrno { fchownat(rawValue, cPath, uid_t.max, gid_t(group), AT_SYMLINK_NOFOLLOW) }
        }
    }
}
