import Glibc

/// A resource limit of the calling process: the soft limit the kernel enforces and the hard
/// limit an unprivileged process may raise it to (`getrlimit(2)`).
///
/// Read and set with `prlimit(2)` on the process itself, which is the `prlimit64` system call
/// (in systemd's `@default` system call set, where `setrlimit` is in `@resources`).
public struct ResourceLimit: Hashable, Sendable, CustomStringConvertible {
    /// The limit in effect.
    public var soft: UInt64
    /// The most the soft limit may be raised to without privilege.
    public var hard: UInt64

    /// `RLIM_INFINITY`: no limit.
    public static let unlimited = UInt64.max

    /// A limit from its two values.
    public init(soft: UInt64, hard: UInt64) {
        self.soft = soft
        self.hard = hard
    }

    /// `soft 1024, hard 524288` (`unlimited` for `RLIM_INFINITY`).
    public var description: String {
        "soft \(Self.text(soft)), hard \(Self.text(hard))"
    }

    /// One limit's value as text: the number, or `unlimited` for `RLIM_INFINITY`.
    public static func text(_ value: UInt64) -> String {
        value == unlimited ? "unlimited" : "\(value)"
    }

    /// The limit on open descriptors (`RLIMIT_NOFILE`): an `open`, `accept`, `socket` or `dup`
    /// that would make a descriptor numbered `soft` or higher fails with `EMFILE`.
    public static func openFiles() throws(Errno) -> ResourceLimit {
        var current = rlimit()
        try nothingOrErrno { LinuxSymbols.prlimit(0, openFilesResource, nil, &current) }
        return ResourceLimit(soft: UInt64(current.rlim_cur), hard: UInt64(current.rlim_max))
    }

    /// Sets the limit on open descriptors; raising `hard` needs `CAP_SYS_RESOURCE` (`EPERM`),
    /// and `soft` may not exceed `hard` (`EINVAL`).
    public static func setOpenFiles(_ limit: ResourceLimit) throws(Errno) {
        var wanted = rlimit(rlim_cur: rlim_t(limit.soft), rlim_max: rlim_t(limit.hard))
        try nothingOrErrno { LinuxSymbols.prlimit(0, openFilesResource, &wanted, nil) }
        DescriptorReserve.limitChanged()
    }

    private static var openFilesResource: Int32 { Int32(RLIMIT_NOFILE.rawValue) }
}
