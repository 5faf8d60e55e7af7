import Glibc
import Synchronization

/// Descriptors the calls of this module leave free for the rest of the process: the Swift
/// runtime, its dispatch library, and the C library.
///
/// A process that uses every descriptor it may have is not only unable to open files: code it
/// does not control fails too, and some of it cannot fail gracefully. The dispatch library's
/// worker-pool monitor, which the Swift concurrency runtime uses on Linux, opens
/// `/proc/<tid>/stat` about once a second while work is queued, and ends the process
/// (`SIGILL`) when that open fails. A daemon whose connections and mirror walks may use up its
/// descriptors therefore keeps a few of them in reserve.
///
/// With a reserve of `size` (0, the default, keeps none), every call here that makes a
/// descriptor (`open`, `accept`, `socket`, `dup`, `pipe`, `signalfd`) refuses, with `EMFILE`, a
/// descriptor numbered `soft limit - size` or higher: it closes the descriptor it was given and
/// throws, as the kernel does at the soft limit itself. Descriptors are numbered lowest-free
/// first, so a refused number means every lower one is in use, and the process's last `size`
/// descriptors stay free for code that does not go through this module. (A server's
/// `acceptOutsideReserve` moves a connection given such a number onto one it holds instead.)
///
/// The soft limit is remembered; it is read again before anything is refused, so a limit
/// raised from outside (`prlimit`) is honoured at once.
public enum DescriptorReserve {
    private static let reserved = Atomic<Int>(0)
    /// The soft limit last read (0 before the first read; `Int.max` for `RLIM_INFINITY`).
    private static let softLimit = Atomic<Int>(0)

    /// How many descriptors below the soft limit the calls of this module leave free.
    public static var size: Int {
        get { reserved.load(ordering: .relaxed) }
        set { reserved.store(max(0, newValue), ordering: .relaxed) }
    }

    /// The reserve for a process whose soft limit is `softLimit`: 16, or a quarter of a limit
    /// lower than 64, so that a small limit still leaves most descriptors usable.
    public static func recommendedSize(forSoftLimit softLimit: UInt64) -> Int {
        Int(min(16, softLimit / 4))
    }

    /// Passes `raw`, a descriptor just made, when it is below the ceiling; otherwise closes it
    /// and throws `EMFILE`.
    @inline(__always)
    static func admit(_ raw: Int32) throws(Errno) -> Int32 {
        guard isReserved(raw) else { return raw }
        _ = Glibc.close(raw)
        throw .tooManyOpenFiles
    }

    /// Whether descriptor number `raw` lies in the reserve: `soft limit - size` or higher
    /// (never, with no reserve).
    @inline(__always)
    static func isReserved(_ raw: Int32) -> Bool {
        let size = reserved.load(ordering: .relaxed)
        guard size > 0 else { return false }
        var soft = softLimit.load(ordering: .relaxed)
        if soft == 0 || Int(raw) >= soft - min(soft, size) {
            soft = readSoftLimit() ?? soft
        }
        return soft > 0 && Int(raw) >= soft - min(soft, size)
    }

    /// Forgets the soft limit remembered, after this process changed it.
    static func limitChanged() {
        softLimit.store(0, ordering: .relaxed)
    }

    /// Reads the soft limit and remembers it.
    private static func readSoftLimit() -> Int? {
        guard let limit = try? ResourceLimit.openFiles() else { return nil }
        let soft = limit.soft >= UInt64(Int.max) ? Int.max : Int(limit.soft)
        softLimit.store(soft, ordering: .relaxed)
        return soft
    }
}
