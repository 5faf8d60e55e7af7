import Glibc

/// Linux-only libc entry points and constants that the Swift `Glibc` module does not import.
///
/// The module map compiles glibc headers without `_GNU_SOURCE`, so `accept4`, `dup3`,
/// `pipe2`, `signalfd`, `copy_file_range`, `sync_file_range`, `syncfs`, `fstatfs`, `prlimit`, `struct ucred`, `O_NOATIME` and the `UTIME_*`
/// markers are missing.
/// Functions are resolved once with `dlsym` and called through C-convention
/// function pointers, which keeps the C calling convention exact without a C target.
internal enum LinuxSymbols {
    typealias Accept4 = @convention(c) @Sendable (
        Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32
    ) -> Int32
    typealias Dup3 = @convention(c) @Sendable (Int32, Int32, Int32) -> Int32
    typealias Pipe2 = @convention(c) @Sendable (UnsafeMutablePointer<Int32>?, Int32) -> Int32
    typealias SignalFD = @convention(c) @Sendable (Int32, UnsafePointer<sigset_t>?, Int32) -> Int32
    typealias AddChdir = @convention(c) @Sendable (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
    typealias AddCloseFrom = @convention(c) @Sendable (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    typealias CopyFileRange = @convention(c) @Sendable (
        Int32, UnsafeMutablePointer<Int64>?, Int32, UnsafeMutablePointer<Int64>?, Int, UInt32
    ) -> Int
    typealias SyncFileRange = @convention(c) @Sendable (Int32, Int64, Int64, UInt32) -> Int32
    typealias SyncFS = @convention(c) @Sendable (Int32) -> Int32
    typealias FStatFS = @convention(c) @Sendable (Int32, UnsafeMutableRawPointer?) -> Int32
    typealias PRLimit = @convention(c) @Sendable (Int32, Int32, UnsafePointer<rlimit>?, UnsafeMutablePointer<rlimit>?) -> Int32
    typealias Statx = @convention(c) @Sendable (Int32, UnsafePointer<CChar>, Int32, UInt32, UnsafeMutableRawPointer) -> Int32

    /// `statx(2)` (glibc 2.28 and later), whose `struct statx` is 256 bytes: `stx_attributes`
    /// at offset 8 and `stx_attributes_mask` at offset 56, both 64 bits.
    static let statx: Statx = resolve("statx", as: Statx.self)
    static let statxSize = 256
    static let statxAttributesOffset = 8
    static let statxAttributesMaskOffset = 56
    /// `STATX_ATTR_MOUNT_ROOT` (Linux 5.8): the file is the root of a mount.
    static let statxAttributeMountRoot: UInt64 = 0x2000

    /// `accept4(2)`.
    static let accept4: Accept4 = resolve("accept4", as: Accept4.self)
    /// `dup3(2)`.
    static let dup3: Dup3 = resolve("dup3", as: Dup3.self)
    /// `pipe2(2)`.
    static let pipe2: Pipe2 = resolve("pipe2", as: Pipe2.self)
    /// `signalfd(2)`.
    static let signalfd: SignalFD = resolve("signalfd", as: SignalFD.self)
    /// `posix_spawn_file_actions_addchdir_np(3)` (glibc 2.29 and later).
    static let addChdir: AddChdir = resolve("posix_spawn_file_actions_addchdir_np", as: AddChdir.self)
    /// `posix_spawn_file_actions_addclosefrom_np(3)` (glibc 2.34 and later), nil before.
    static let addCloseFrom: AddCloseFrom? = resolveIfPresent("posix_spawn_file_actions_addclosefrom_np", as: AddCloseFrom.self)
    /// `copy_file_range(2)` (glibc 2.27 and later).
    static let copyFileRange: CopyFileRange = resolve("copy_file_range", as: CopyFileRange.self)
    /// `sync_file_range(2)`.
    static let syncFileRange: SyncFileRange = resolve("sync_file_range", as: SyncFileRange.self)
    /// `syncfs(2)`.
    static let syncfs: SyncFS = resolve("syncfs", as: SyncFS.self)
    /// `fstatfs(2)`, with `struct statfs` as raw memory (`<sys/vfs.h>` is not in the module).
    static let fstatfs: FStatFS = resolve("fstatfs", as: FStatFS.self)
    /// `prlimit(2)` (glibc 2.13 and later): the `prlimit64` system call itself, whatever
    /// system call this glibc's `setrlimit` makes.
    static let prlimit: PRLimit = resolve("prlimit", as: PRLimit.self)
    /// `SYNC_FILE_RANGE_WRITE` from `<fcntl.h>`.
    static let syncFileRangeWrite: UInt32 = 2

    /// `SFD_CLOEXEC`, equal to `O_CLOEXEC`.
    static let signalFDCloseOnExec: Int32 = O_CLOEXEC
    /// `SFD_NONBLOCK`, equal to `O_NONBLOCK`.
    static let signalFDNonBlocking: Int32 = O_NONBLOCK
    /// `UTIME_NOW` from `<sys/stat.h>`: `(1l << 30) - 1l`.
    static let utimeNow: Int = (1 << 30) - 1
    /// `UTIME_OMIT` from `<sys/stat.h>`: `(1l << 30) - 2l`.
    static let utimeOmit: Int = (1 << 30) - 2
    /// `O_NOATIME` from `<fcntl.h>` (`_GNU_SOURCE`): `01000000` on x86-64, ARM and most others.
    static let openNoAccessTime: Int32 = 0o1000000
    /// `O_PATH` from `<fcntl.h>` (`_GNU_SOURCE`): `010000000` on x86-64, ARM and most others.
    static let openPathOnly: Int32 = 0o10000000
    /// `AT_EMPTY_PATH`: an `*at` call on the descriptor itself (an `O_PATH` handle's file).
    static let atEmptyPath: Int32 = 0x1000
    /// Size of `struct signalfd_siginfo`, fixed by the kernel ABI.
    static let signalFDSiginfoSize = 128
    /// `F_OFD_SETLK` from `<fcntl.h>` (`_GNU_SOURCE`, Linux 3.15): 37 on every architecture.
    static let openFileDescriptionSetLock: Int32 = 37

    private static func resolve<F>(_ name: String, as type: F.Type) -> F {
        guard let function = resolveIfPresent(name, as: type) else {
            fatalError("WeaveDIPosix: libc symbol \(name) is missing")
        }
        return function
    }

    private static func resolveIfPresent<F>(_ name: String, as type: F.Type) -> F? {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }
}

/// The layout of Linux `struct ucred` (`SO_PEERCRED`): pid, uid, gid.
internal struct LinuxUcred {
    var pid: pid_t = 0
    var uid: uid_t = 0
    var gid: gid_t = 0
}

extension String {
    /// Calls `body` with a NUL-terminated copy of the string, keeping typed throws.
    internal func withCStringTyped<R>(
        _ body: (UnsafePointer<CChar>) throws(Errno) -> R
    ) throws(Errno) -> R {
        let result = withCString { pointer in
            Result { () throws(Errno) -> R in try body(pointer) }
        }
        return try result.get()
    }
}

extension Array where Element == UInt8 {
    /// Calls `body` with the array's bytes, keeping typed throws.
    internal func withBytesTyped<R>(
        _ body: (UnsafeRawBufferPointer) throws(Errno) -> R
    ) throws(Errno) -> R {
        try withUnsafeBufferPointer { (buffer) throws(Errno) -> R in
            try body(UnsafeRawBufferPointer(buffer))
        }
    }
}
