import Glibc

/// Directory-relative (`*at`) path operations, the building blocks of an atomic mirror.
///
/// Call them on an open directory descriptor to resolve `path` inside it, or on
/// `FileDescriptor.currentWorkingDirectory` (`AT_FDCWD`) for plain path operations.
/// Absolute paths ignore the directory descriptor, as in C.
extension FileDescriptor {
    /// Opens `path` relative to this directory (`openat(2)`), adding `O_CLOEXEC` unless `closeOnExec` is false.
    public func open(
        at path: String,
        _ mode: AccessMode,
        options: OpenOptions = [],
        permissions: FilePermissions = .defaultFile,
        closeOnExec: Bool = true
    ) throws(Errno) -> OwnedDescriptor {
        let flags = mode.rawValue | options.rawValue | (closeOnExec ? O_CLOEXEC : 0)
        let raw = try path.withCStringTyped { (cPath) throws(Errno) in
            try DescriptorReserve.admit(valueOrErrno { openat(rawValue, cPath, flags, mode_t(permissions.rawValue)) })
        }
        return OwnedDescriptor(taking: FileDescriptor(rawValue: raw))
    }

    /// Opens the directory `path` relative to this one for `*at` calls and listing (`O_DIRECTORY`).
    public func openDirectory(at path: String, noFollow: Bool = false) throws(Errno) -> OwnedDescriptor {
        try open(at: path, .readOnly, options: noFollow ? [.directory, .noFollow] : [.directory])
    }

    /// Creates the directory `path` relative to this one (`mkdirat(2)`), subject to the umask.
    public func makeDirectory(
        at path: String,
        permissions: FilePermissions = .defaultDirectory
    ) throws(Errno) {
        try path.withCStringTyped { (cPath) throws(Errno) in
            try nothingOrErrno { mkdirat(rawValue, cPath, mode_t(permissions.rawValue)) }
        }
    }

    /// Atomically renames `path` in this directory to `newPath` in `newDirectory` (`renameat(2)`),
    /// replacing an existing file; `nil` means this same directory.
    public func rename(
        at path: String,
        to newPath: String,
        in newDirectory: FileDescriptor? = nil
    ) throws(Errno) {
        let target = newDirectory ?? self
        try path.withCStringTyped { (oldC) throws(Errno) in
            try newPath.withCStringTyped { (newC) throws(Errno) in
                try nothingOrErrno { renameat(rawValue, oldC, target.rawValue, newC) }
            }
        }
    }

    /// Removes the non-directory `path` relative to this directory (`unlinkat(2)`).
    public func unlink(at path: String) throws(Errno) {
        try unlink(at: path, flags: 0)
    }

    /// Removes the empty directory `path` relative to this directory (`unlinkat(2)` with `AT_REMOVEDIR`).
    public func removeDirectory(at path: String) throws(Errno) {
        try unlink(at: path, flags: AT_REMOVEDIR)
    }

    private func unlink(at path: String, flags: Int32) throws(Errno) {
        try path.withCStringTyped { (cPath) throws(Errno) in
            try nothingOrErrno { unlinkat(rawValue, cPath, flags) }
        }
    }

    /// Creates a symbolic link at `path` in this directory pointing to `target` (`symlinkat(2)`).
    public func createSymbolicLink(at path: String, pointingTo target: String) throws(Errno) {
        try target.withCStringTyped { (targetC) throws(Errno) in
            try path.withCStringTyped { (pathC) throws(Errno) in
                try nothingOrErrno { symlinkat(targetC, rawValue, pathC) }
            }
        }
    }

    /// Reads the target of the symbolic link `path` relative to this directory (`readlinkat(2)`);
    /// throws `illegalByteSequence` (`EILSEQ`) when the target is not valid UTF-8.
    public func readSymbolicLink(at path: String) throws(Errno) -> String {
        var capacity = 256
        while true {
            let bytes = try path.withCStringTyped { (cPath) throws(Errno) -> [UInt8] in
                try [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count throws(Errno) in
                    count = try valueOrErrno {
                        buffer.withMemoryRebound(to: CChar.self) { chars in
                            readlinkat(rawValue, cPath, chars.baseAddress!, chars.count)
                        }
                    }
                }
            }
            // A result that fills the buffer may have been truncated: retry larger.
            if bytes.count < capacity {
                // Never repaired: a target with U+FFFD in place of its bytes is another target.
                guard let target = String(validating: bytes, as: UTF8.self) else { throw .illegalByteSequence }
                return target
            }
            capacity *= 4
        }
    }

    /// Sets access and modification times of the open file with nanosecond precision (`futimens(2)`);
    /// `nil` leaves that time unchanged (`UTIME_OMIT`).
    public func setTimes(access: TimeSpec?, modification: TimeSpec?) throws(Errno) {
        var times = (Self.utimeValue(access), Self.utimeValue(modification))
        try withUnsafePointer(to: &times) { (pointer) throws(Errno) in
            try pointer.withMemoryRebound(to: timespec.self, capacity: 2) { (array) throws(Errno) in
                try nothingOrErrno { futimens(rawValue, array) }
            }
        }
    }

    /// Sets times of `path` relative to this directory (`utimensat(2)`); with `followSymlinks`
    /// false a symbolic link itself is changed (`AT_SYMLINK_NOFOLLOW`). `nil` leaves a time unchanged.
    public func setTimes(
        at path: String,
        access: TimeSpec?,
        modification: TimeSpec?,
        followSymlinks: Bool = true
    ) throws(Errno) {
        var times = (Self.utimeValue(access), Self.utimeValue(modification))
        let flags = followSymlinks ? 0 : AT_SYMLINK_NOFOLLOW
        try path.withCStringTyped { (cPath) throws(Errno) in
            try withUnsafePointer(to: &times) { (pointer) throws(Errno) in
                try pointer.withMemoryRebound(to: timespec.self, capacity: 2) { (array) throws(Errno) in
                    try nothingOrErrno { utimensat(rawValue, cPath, array, flags) }
                }
            }
        }
    }

    /// Sets the times of the file this `pathOnly` handle (`O_PATH`) is open on, where
    /// `futimens` fails (`EBADF`): `utimensat(2)` on its `/proc/self/fd` entry, which leads to
    /// the handle's own file, never to what its path names now. `nil` leaves a time unchanged.
    public func setTimesOfPathHandle(access: TimeSpec?, modification: TimeSpec?) throws(Errno) {
        try FileDescriptor.currentWorkingDirectory.setTimes(
            at: "/proc/self/fd/\(rawValue)", access: access, modification: modification, followSymlinks: true)
    }

    /// Opens the file this `pathOnly` handle (`O_PATH`) is open on again, for `mode`: its
    /// `/proc/self/fd` entry, which leads to the handle's own file, never to what its path
    /// names now. The file's mode is checked as for any `open` (`EACCES`).
    public func reopenPathHandle(_ mode: AccessMode, options: OpenOptions = []) throws(Errno) -> OwnedDescriptor {
        try FileDescriptor.open("/proc/self/fd/\(rawValue)", mode, options: options)
    }

    private static func utimeValue(_ time: TimeSpec?) -> timespec {
        time?.timespecValue ?? timespec(tv_sec: 0, tv_nsec: LinuxSymbols.utimeOmit)
    }

    /// The canonical absolute form of `path` (`realpath(3)`): symbolic links, `.` and `..`
    /// resolved; every component must exist. Throws `EILSEQ` when the canonical form is not
    /// valid UTF-8 (a link to a name that is not): a `String` would repair it into a path that
    /// names another file, or none.
    public static func realPath(_ path: String) throws(Errno) -> String {
        let resolved: UnsafeMutablePointer<CChar>? = path.withCString { realpath($0, nil) }
        guard let resolved else { throw Errno.current }
        defer { free(resolved) }
        guard let exact = String(validatingCString: resolved) else { throw .illegalByteSequence }
        return exact
    }

    /// Creates a fresh directory from a template ending in `XXXXXX` (`mkdtemp(3)`), returning its path.
    public static func makeTemporaryDirectory(template: String = "/tmp/weavedi.XXXXXX") throws(Errno) -> String {
        var bytes = Array(template.utf8CString)
        let made = bytes.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) != nil }
        guard made else { throw Errno.current }
        return String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension FileDescriptor {
    /// Creates `path` and any missing parent directories relative to this directory
    /// (`mkdir -p`); directories that already exist are left as they are.
    public func makeDirectories(at path: String, permissions: FilePermissions = .defaultDirectory) throws(Errno) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            do { try makeDirectory(at: prefix, permissions: permissions) } catch {
                if error != .fileExists { throw error }
            }
        }
    }
}

/// What `FileDescriptor.checkAccess(at:_:)` asks about: `R_OK`, `W_OK`, `X_OK` (search, for a
/// directory).
public struct AccessCheck: OptionSet, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// `R_OK`.
    public static let read = AccessCheck(rawValue: R_OK)
    /// `W_OK`.
    public static let write = AccessCheck(rawValue: W_OK)
    /// `X_OK`: execute, or search a directory.
    public static let execute = AccessCheck(rawValue: X_OK)
}

extension FileDescriptor {
    /// Throws unless this process may access `path` (relative to this directory) as `check`
    /// says (`faccessat(2)` with `AT_EACCESS`): asked of the kernel for the effective user and
    /// groups, so ACLs, capabilities and a read-only file system (`EROFS`) count.
    public func checkAccess(at path: String, _ check: AccessCheck) throws(Errno) {
        try path.withCStringTyped { (cPath) throws(Errno) in
            try nothingOrErrno { faccessat(rawValue, cPath, check.rawValue, AT_EACCESS) }
        }
    }
}
