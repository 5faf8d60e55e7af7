import Glibc

/// The type of a file system, as `statfs(2)` reports it in `f_type` (the magic numbers of
/// `<linux/magic.h>`).
public struct FileSystemType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The raw `f_type` value.
    public let rawValue: UInt64
    /// Wraps a raw `f_type` value.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// ext2, ext3 and ext4 (one magic number for all three).
    public static let ext4 = FileSystemType(rawValue: 0xEF53)
    /// XFS.
    public static let xfs = FileSystemType(rawValue: 0x5846_5342)
    /// Btrfs.
    public static let btrfs = FileSystemType(rawValue: 0x9123_683E)
    /// tmpfs (and shmem).
    public static let tmpfs = FileSystemType(rawValue: 0x0102_1994)
    /// FUSE file systems.
    public static let fuse = FileSystemType(rawValue: 0x6573_5546)
    /// NFS.
    public static let nfs = FileSystemType(rawValue: 0x6969)
    /// overlayfs.
    public static let overlay = FileSystemType(rawValue: 0x794C_7630)

    /// The name for the known types, else the magic number in hexadecimal.
    public var description: String {
        switch self {
        case .ext4: "ext4"
        case .xfs: "xfs"
        case .btrfs: "btrfs"
        case .tmpfs: "tmpfs"
        case .fuse: "fuse"
        case .nfs: "nfs"
        case .overlay: "overlay"
        default: "0x" + String(rawValue, radix: 16)
        }
    }
}

extension FileDescriptor {
    /// The type of the file system that holds this descriptor's file (`fstatfs(2)`).
    public func fileSystemType() throws(Errno) -> FileSystemType {
        // struct statfs is 120 bytes on 64-bit Linux (x86-64, arm64, riscv64); `f_type`, a
        // `long`, comes first. The buffer leaves room to spare.
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 16)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: 256)
        try nothingOrErrno { LinuxSymbols.fstatfs(rawValue, buffer) }
        return FileSystemType(rawValue: UInt64(UInt(bitPattern: buffer.load(as: Int.self))))
    }

    /// Writes out every dirty page and inode of the file system that holds this descriptor's
    /// file, waits for it and asks the device to flush its cache (`syncfs(2)`).
    ///
    /// Since Linux 5.8 it reports a writeback error that happened anywhere on that file system
    /// after this descriptor was opened (or after its previous `syncFileSystem`), once per
    /// descriptor; before 5.8 it reports none. It also writes other processes' dirty data on
    /// the same file system. How completely the file system honours it is its own business
    /// (FUSE, for one, may do nothing): see ``FileSystemType``.
    public func syncFileSystem() throws(Errno) {
        try nothingOrErrno { LinuxSymbols.syncfs(rawValue) }
    }
}

/// The running kernel's release (`uname(2)`).
public struct KernelRelease: Comparable, Sendable, CustomStringConvertible {
    /// The leading numbers of the release string, as in 6.18 of "6.18.44-fc".
    public let major: Int
    public let minor: Int

    /// A release number for comparisons.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// Parses the leading `MAJOR.MINOR` of a release string such as "6.18.44-fc-v657".
    public init?(parsing release: String) {
        let numbers = release.split(separator: ".", maxSplits: 2).prefix(2).map { part in
            Int(part.prefix { $0.isASCII && $0.isNumber })
        }
        guard numbers.count == 2, let major = numbers[0], let minor = numbers[1] else { return nil }
        self.init(major: major, minor: minor)
    }

    /// The running kernel's release, nil when `uname` fails or the release cannot be parsed.
    public static let current: KernelRelease? = {
        var names = utsname()
        guard uname(&names) == 0 else { return nil }
        let release = withUnsafeBytes(of: &names.release) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return KernelRelease(parsing: release)
    }()

    public var description: String { "\(major).\(minor)" }

    public static func < (lhs: KernelRelease, rhs: KernelRelease) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }
}
