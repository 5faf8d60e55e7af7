import Glibc

/// The type of a file system object, from `st_mode` or a directory entry's `d_type`.
public enum FileKind: Hashable, Sendable, CustomStringConvertible {
    /// A regular file.
    case regular
    /// A directory.
    case directory
    /// A symbolic link.
    case symbolicLink
    /// A Unix domain socket.
    case socket
    /// A named pipe.
    case fifo
    /// A character device.
    case characterDevice
    /// A block device.
    case blockDevice
    /// Not known: `DT_UNKNOWN` from file systems that do not fill `d_type`.
    case unknown

    /// Classifies the `S_IFMT` bits of a `mode_t`.
    public init(mode: UInt32) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFLNK: self = .symbolicLink
        case S_IFSOCK: self = .socket
        case S_IFIFO: self = .fifo
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        default: self = .unknown
        }
    }

    /// Classifies a `dirent.d_type` value.
    public init(directoryEntryType type: UInt8) {
        switch Int(type) {
        case DT_REG: self = .regular
        case DT_DIR: self = .directory
        case DT_LNK: self = .symbolicLink
        case DT_SOCK: self = .socket
        case DT_FIFO: self = .fifo
        case DT_CHR: self = .characterDevice
        case DT_BLK: self = .blockDevice
        default: self = .unknown
        }
    }

    /// A lowercase name such as `regular` or `symbolicLink`.
    public var description: String {
        switch self {
        case .regular: "regular"
        case .directory: "directory"
        case .symbolicLink: "symbolicLink"
        case .socket: "socket"
        case .fifo: "fifo"
        case .characterDevice: "characterDevice"
        case .blockDevice: "blockDevice"
        case .unknown: "unknown"
        }
    }
}

/// The metadata of a file from `stat(2)`, `lstat(2)`, `fstat(2)` or `fstatat(2)`.
public struct FileStatus: Hashable, Sendable {
    /// The kind of object, from the `S_IFMT` bits.
    public var kind: FileKind
    /// The full raw `st_mode`, type and permission bits.
    public var mode: UInt32
    /// The owning user id (`st_uid`).
    public var userID: UInt32
    /// The owning group id (`st_gid`).
    public var groupID: UInt32
    /// Size in bytes (`st_size`); for a symbolic link, the length of its target.
    public var size: Int64
    /// Last data modification (`st_mtim`), with nanoseconds.
    public var modificationTime: TimeSpec
    /// Last access (`st_atim`), with nanoseconds.
    public var accessTime: TimeSpec
    /// Last status change (`st_ctim`), with nanoseconds.
    public var changeTime: TimeSpec
    /// The inode number (`st_ino`).
    public var inode: UInt64
    /// The device holding the file (`st_dev`).
    public var device: UInt64
    /// The device number for character and block devices (`st_rdev`).
    public var representedDevice: UInt64
    /// Number of hard links (`st_nlink`).
    public var linkCount: UInt64

    /// The permission bits of `mode`.
    public var permissions: FilePermissions {
        FilePermissions(rawValue: mode)
    }

    /// Converts a C `struct stat`.
    public init(_ value: stat) {
        kind = FileKind(mode: value.st_mode)
        mode = value.st_mode
        userID = value.st_uid
        groupID = value.st_gid
        size = Int64(value.st_size)
        modificationTime = TimeSpec(value.st_mtim)
        accessTime = TimeSpec(value.st_atim)
        changeTime = TimeSpec(value.st_ctim)
        inode = UInt64(value.st_ino)
        device = UInt64(value.st_dev)
        representedDevice = UInt64(value.st_rdev)
        linkCount = UInt64(value.st_nlink)
    }

    /// Reads the status of `path`: `stat(2)`, or `lstat(2)` when `followSymlinks` is false.
    public init(path: String, followSymlinks: Bool = true) throws(Errno) {
        self = try FileDescriptor.currentWorkingDirectory.status(at: path, followSymlinks: followSymlinks)
    }
}

extension FileDescriptor {
    /// Reads the status of the open file (`fstat(2)`).
    public func status() throws(Errno) -> FileStatus {
        var value = stat()
        try nothingOrErrno { fstat(rawValue, &value) }
        return FileStatus(value)
    }

    /// Whether the open file is the root of a mount (`statx(2)`'s `STATX_ATTR_MOUNT_ROOT`):
    /// a file system mounted there, or a bind mount of a directory, even of one on the same
    /// file system (whose device number is its parent's). False where the kernel does not say
    /// (before Linux 5.8).
    public func isMountRoot() throws(Errno) -> Bool {
        try mountRoot() ?? false
    }

    /// Whether the open file is the root of a mount, as `isMountRoot` says, or nil where the
    /// kernel does not say (`STATX_ATTR_MOUNT_ROOT` missing from `stx_attributes_mask`: before
    /// Linux 5.8), for a caller that must not take "not said" for "no".
    public func mountRoot() throws(Errno) -> Bool? {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: LinuxSymbols.statxSize, alignment: 8)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: LinuxSymbols.statxSize)
        try nothingOrErrno { LinuxSymbols.statx(rawValue, "", LinuxSymbols.atEmptyPath, 0, buffer) }
        let attributes = buffer.load(fromByteOffset: LinuxSymbols.statxAttributesOffset, as: UInt64.self)
        let known = buffer.load(fromByteOffset: LinuxSymbols.statxAttributesMaskOffset, as: UInt64.self)
        guard known & LinuxSymbols.statxAttributeMountRoot != 0 else { return nil }
        return attributes & LinuxSymbols.statxAttributeMountRoot != 0
    }

    /// Reads the status of `path` relative to this directory (`fstatat(2)`),
    /// not following a final symbolic link when `followSymlinks` is false.
    public func status(at path: String, followSymlinks: Bool = true) throws(Errno) -> FileStatus {
        var value = stat()
        let flags = followSymlinks ? 0 : AT_SYMLINK_NOFOLLOW
        try path.withCStringTyped { (cPath) throws(Errno) in
            try nothingOrErrno { fstatat(rawValue, cPath, &value, flags) }
        }
        return FileStatus(value)
    }
}
