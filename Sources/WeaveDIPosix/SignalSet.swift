import Glibc

/// A set of signals (`sigset_t`), used for thread signal masks, `signalfd` and `posix_spawn`.
///
/// Signal masks are per thread. A daemon that reads signals through a
/// `SignalReader` must block them in the main thread before any other thread
/// starts, so every thread inherits the mask and no thread receives them the
/// classic way. `Subprocess` resets the mask in children.
public struct SignalSet: Sendable, Equatable, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// The underlying C signal set.
    public var rawValue: sigset_t

    /// An empty set (`sigemptyset`).
    public init() {
        rawValue = sigset_t()
        sigemptyset(&rawValue)
    }

    /// Wraps a C signal set.
    public init(rawValue: sigset_t) {
        self.rawValue = rawValue
    }

    /// A set holding `signals`.
    public init(_ signals: some Sequence<Signal>) {
        self.init()
        for signal in signals { insert(signal) }
    }

    /// A set written as an array literal, e.g. `[.terminate, .hangup]`.
    public init(arrayLiteral signals: Signal...) {
        self.init(signals)
    }

    /// The set of all signals (`sigfillset`, minus glibc-internal ones).
    public static var all: SignalSet {
        var set = SignalSet()
        sigfillset(&set.rawValue)
        return set
    }

    /// Whether `signal` is a member (`sigismember`).
    public func contains(_ signal: Signal) -> Bool {
        var copy = rawValue
        return sigismember(&copy, signal.rawValue) == 1
    }

    /// Adds `signal` (`sigaddset`).
    public mutating func insert(_ signal: Signal) {
        sigaddset(&rawValue, signal.rawValue)
    }

    /// Removes `signal` (`sigdelset`).
    public mutating func remove(_ signal: Signal) {
        sigdelset(&rawValue, signal.rawValue)
    }

    /// The members, in ascending signal number.
    public var signals: [Signal] {
        (1..<NSIG).map { Signal(rawValue: $0) }.filter { contains($0) }
    }

    /// Whether the set has no members.
    public var isEmpty: Bool { signals.isEmpty }

    /// Sets with the same members are equal.
    public static func == (lhs: SignalSet, rhs: SignalSet) -> Bool {
        lhs.signals == rhs.signals
    }

    /// The member names, such as `[SIGHUP, SIGTERM]`.
    public var description: String {
        "[" + signals.map(\.name).joined(separator: ", ") + "]"
    }

    /// The calling thread's current signal mask.
    public static func currentThreadMask() throws(Errno) -> SignalSet {
        var old = sigset_t()
        try checkReturnedErrno(pthread_sigmask(SIG_SETMASK, nil, &old))
        return SignalSet(rawValue: old)
    }

    /// Adds these signals to the calling thread's mask (`pthread_sigmask(SIG_BLOCK)`); returns the old mask.
    @discardableResult
    public func blockInCurrentThread() throws(Errno) -> SignalSet {
        try changeMask(SIG_BLOCK)
    }

    /// Removes these signals from the calling thread's mask (`SIG_UNBLOCK`); returns the old mask.
    @discardableResult
    public func unblockInCurrentThread() throws(Errno) -> SignalSet {
        try changeMask(SIG_UNBLOCK)
    }

    /// Replaces the calling thread's mask with this set (`SIG_SETMASK`); returns the old mask.
    @discardableResult
    public func setAsCurrentThreadMask() throws(Errno) -> SignalSet {
        try changeMask(SIG_SETMASK)
    }

    private func changeMask(_ how: Int32) throws(Errno) -> SignalSet {
        var new = rawValue
        var old = sigset_t()
        try checkReturnedErrno(pthread_sigmask(how, &new, &old))
        return SignalSet(rawValue: old)
    }
}
