import Glibc

/// An error number reported by a system call, with Swift names for the common codes.
///
/// Every throwing function in this module throws `Errno`, so callers can
/// match on the exact failure (`catch Errno.wouldBlock`) without string parsing.
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw C `errno` value.
    public let rawValue: Int32

    /// Wraps a raw C `errno` value.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The calling thread's current `errno` value.
    public static var current: Errno {
        Errno(rawValue: errno)
    }

    /// Interrupted system call (`EINTR`).
    public static var interrupted: Errno { Errno(rawValue: EINTR) }
    /// Resource temporarily unavailable (`EAGAIN`).
    public static var resourceTemporarilyUnavailable: Errno { Errno(rawValue: EAGAIN) }
    /// Operation would block (`EWOULDBLOCK`, the same value as `EAGAIN` on Linux).
    public static var wouldBlock: Errno { Errno(rawValue: EWOULDBLOCK) }
    /// No such file or directory (`ENOENT`).
    public static var noSuchFileOrDirectory: Errno { Errno(rawValue: ENOENT) }
    /// File exists (`EEXIST`).
    public static var fileExists: Errno { Errno(rawValue: EEXIST) }
    /// Permission denied (`EACCES`).
    public static var permissionDenied: Errno { Errno(rawValue: EACCES) }
    /// Operation not permitted (`EPERM`).
    public static var notPermitted: Errno { Errno(rawValue: EPERM) }
    /// Connection refused (`ECONNREFUSED`).
    public static var connectionRefused: Errno { Errno(rawValue: ECONNREFUSED) }
    /// Software caused connection abort, as `accept(2)` reports a connection that went away
    /// while queued (`ECONNABORTED`).
    public static var connectionAborted: Errno { Errno(rawValue: ECONNABORTED) }
    /// Connection reset by peer (`ECONNRESET`).
    public static var connectionReset: Errno { Errno(rawValue: ECONNRESET) }
    /// Broken pipe (`EPIPE`).
    public static var brokenPipe: Errno { Errno(rawValue: EPIPE) }
    /// Bad file descriptor (`EBADF`).
    public static var badFileDescriptor: Errno { Errno(rawValue: EBADF) }
    /// Invalid argument (`EINVAL`).
    public static var invalidArgument: Errno { Errno(rawValue: EINVAL) }
    /// Not a directory (`ENOTDIR`).
    public static var notDirectory: Errno { Errno(rawValue: ENOTDIR) }
    /// Is a directory (`EISDIR`).
    public static var isDirectory: Errno { Errno(rawValue: EISDIR) }
    /// Too many levels of symbolic links, also returned for `O_NOFOLLOW` on a link (`ELOOP`).
    public static var tooManySymbolicLinkLevels: Errno { Errno(rawValue: ELOOP) }
    /// Cross-device link (`EXDEV`).
    public static var crossDeviceLink: Errno { Errno(rawValue: EXDEV) }
    /// No space left on device (`ENOSPC`).
    public static var noSpace: Errno { Errno(rawValue: ENOSPC) }
    /// Disk quota exceeded (`EDQUOT`).
    public static var diskQuotaExceeded: Errno { Errno(rawValue: EDQUOT) }
    /// Address already in use (`EADDRINUSE`).
    public static var addressInUse: Errno { Errno(rawValue: EADDRINUSE) }
    /// Directory not empty (`ENOTEMPTY`).
    public static var directoryNotEmpty: Errno { Errno(rawValue: ENOTEMPTY) }
    /// File name too long (`ENAMETOOLONG`).
    public static var fileNameTooLong: Errno { Errno(rawValue: ENAMETOOLONG) }
    /// Socket operation on a descriptor that is not a socket (`ENOTSOCK`).
    public static var notSocket: Errno { Errno(rawValue: ENOTSOCK) }
    /// Transport endpoint is not connected (`ENOTCONN`).
    public static var notConnected: Errno { Errno(rawValue: ENOTCONN) }
    /// No child processes (`ECHILD`).
    public static var noChildProcess: Errno { Errno(rawValue: ECHILD) }
    /// No such process (`ESRCH`).
    public static var noSuchProcess: Errno { Errno(rawValue: ESRCH) }
    /// Input/output error (`EIO`).
    public static var ioError: Errno { Errno(rawValue: EIO) }
    /// Too many open files in this process (`EMFILE`).
    public static var tooManyOpenFiles: Errno { Errno(rawValue: EMFILE) }
    /// Too many open files in the whole system (`ENFILE`).
    public static var tooManyOpenFilesInSystem: Errno { Errno(rawValue: ENFILE) }
    /// Cannot allocate memory (`ENOMEM`).
    public static var noMemory: Errno { Errno(rawValue: ENOMEM) }
    /// Device or resource busy (`EBUSY`).
    public static var resourceBusy: Errno { Errno(rawValue: EBUSY) }
    /// Read-only file system (`EROFS`).
    public static var readOnlyFileSystem: Errno { Errno(rawValue: EROFS) }
    /// Numerical result out of range, also "buffer too small" (`ERANGE`).
    public static var outOfRange: Errno { Errno(rawValue: ERANGE) }
    /// Operation not supported (`EOPNOTSUPP`).
    public static var notSupported: Errno { Errno(rawValue: EOPNOTSUPP) }
    /// Function not implemented (`ENOSYS`).
    public static var notImplemented: Errno { Errno(rawValue: ENOSYS) }
    /// Connection timed out (`ETIMEDOUT`).
    public static var timedOut: Errno { Errno(rawValue: ETIMEDOUT) }
    /// Invalid or incomplete multibyte character (`EILSEQ`).
    public static var illegalByteSequence: Errno { Errno(rawValue: EILSEQ) }

    /// The symbolic C name of the code, such as `"ENOENT"`, or `"E<number>"` if unknown.
    public var name: String {
        Errno.symbolicNames[rawValue] ?? "E\(rawValue)"
    }

    /// The `strerror` text followed by the symbolic name, e.g. `No such file or directory (ENOENT)`.
    public var description: String {
        "\(message) (\(name))"
    }

    /// The human-readable `strerror_r` text for the code.
    public var message: String {
        var buffer = [CChar](repeating: 0, count: 256)
        let result = buffer.withUnsafeMutableBufferPointer { pointer in
            strerror_r(rawValue, pointer.baseAddress!, pointer.count)
        }
        guard result == 0 else { return "Unknown error \(rawValue)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Matches a thrown error against this code in `catch` patterns and `switch` cases.
    public static func ~= (pattern: Errno, value: any Error) -> Bool {
        guard let errno = value as? Errno else { return false }
        return errno == pattern
    }

    private static let symbolicNames: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", ESRCH: "ESRCH", EINTR: "EINTR", EIO: "EIO",
        ENXIO: "ENXIO", E2BIG: "E2BIG", ENOEXEC: "ENOEXEC", EBADF: "EBADF", ECHILD: "ECHILD",
        EAGAIN: "EAGAIN", ENOMEM: "ENOMEM", EACCES: "EACCES", EFAULT: "EFAULT", EBUSY: "EBUSY",
        EEXIST: "EEXIST", EXDEV: "EXDEV", ENODEV: "ENODEV", ENOTDIR: "ENOTDIR",
        EISDIR: "EISDIR", EINVAL: "EINVAL", ENFILE: "ENFILE", EMFILE: "EMFILE",
        ENOTTY: "ENOTTY", ETXTBSY: "ETXTBSY", EFBIG: "EFBIG", ENOSPC: "ENOSPC",
        ESPIPE: "ESPIPE", EROFS: "EROFS", EMLINK: "EMLINK", EPIPE: "EPIPE", ERANGE: "ERANGE",
        ENAMETOOLONG: "ENAMETOOLONG", ENOSYS: "ENOSYS", ENOTEMPTY: "ENOTEMPTY",
        ELOOP: "ELOOP", ENOTSOCK: "ENOTSOCK", EDESTADDRREQ: "EDESTADDRREQ",
        EMSGSIZE: "EMSGSIZE", EPROTOTYPE: "EPROTOTYPE", EPROTONOSUPPORT: "EPROTONOSUPPORT",
        EOPNOTSUPP: "EOPNOTSUPP", EAFNOSUPPORT: "EAFNOSUPPORT", EADDRINUSE: "EADDRINUSE",
        EADDRNOTAVAIL: "EADDRNOTAVAIL", ENETDOWN: "ENETDOWN", ECONNABORTED: "ECONNABORTED",
        ECONNRESET: "ECONNRESET", ENOBUFS: "ENOBUFS", EISCONN: "EISCONN",
        ENOTCONN: "ENOTCONN", ETIMEDOUT: "ETIMEDOUT", ECONNREFUSED: "ECONNREFUSED",
        EALREADY: "EALREADY", EINPROGRESS: "EINPROGRESS", ESTALE: "ESTALE",
        EDQUOT: "EDQUOT", ECANCELED: "ECANCELED", EOVERFLOW: "EOVERFLOW",
        EILSEQ: "EILSEQ", EDEADLK: "EDEADLK", ENOLCK: "ENOLCK", ENODATA: "ENODATA",
        EHOSTUNREACH: "EHOSTUNREACH", ENETUNREACH: "ENETUNREACH",
    ]
}

/// Runs `body`, returning its result or throwing `Errno.current` when it returns -1.
///
/// Retries on `EINTR` when `retryOnInterrupt` is true. Never use it with
/// retries for `close(2)`: on Linux the descriptor is gone even after `EINTR`.
internal func valueOrErrno<T: FixedWidthInteger>(
    retryOnInterrupt: Bool = true,
    _ body: () -> T
) throws(Errno) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let error = Errno.current
        if retryOnInterrupt && error == .interrupted { continue }
        throw error
    }
}

/// Runs `body` like `valueOrErrno` and discards the successful result.
internal func nothingOrErrno<T: FixedWidthInteger>(
    retryOnInterrupt: Bool = true,
    _ body: () -> T
) throws(Errno) {
    _ = try valueOrErrno(retryOnInterrupt: retryOnInterrupt, body)
}

/// Throws the error number returned directly by a `pthread_*`/`posix_spawn*`/`*_r` call.
internal func checkReturnedErrno(_ result: Int32) throws(Errno) {
    if result != 0 { throw Errno(rawValue: result) }
}
