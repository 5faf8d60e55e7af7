import Glibc

/// The event bits of `poll(2)`, requested in `events` and reported in `returnedEvents`.
public struct PollEvents: OptionSet, Hashable, Sendable {
    /// The raw `POLL*` bits.
    public let rawValue: Int16
    /// Wraps raw `POLL*` bits.
    public init(rawValue: Int16) { self.rawValue = rawValue }
    /// Data can be read, or a listener has a pending connection (`POLLIN`).
    public static var readable: PollEvents { PollEvents(rawValue: Int16(POLLIN)) }
    /// Urgent or exceptional data is available (`POLLPRI`).
    public static var priority: PollEvents { PollEvents(rawValue: Int16(POLLPRI)) }
    /// Data can be written without blocking (`POLLOUT`).
    public static var writable: PollEvents { PollEvents(rawValue: Int16(POLLOUT)) }
    /// The peer shut down its writing half (`POLLRDHUP`, Linux).
    public static var readHangUp: PollEvents { PollEvents(rawValue: 0x2000) }
    /// An error condition; always reported, never needs requesting (`POLLERR`).
    public static var error: PollEvents { PollEvents(rawValue: Int16(POLLERR)) }
    /// The peer hung up; always reported (`POLLHUP`).
    public static var hangUp: PollEvents { PollEvents(rawValue: Int16(POLLHUP)) }
    /// The descriptor is not open; always reported (`POLLNVAL`).
    public static var invalid: PollEvents { PollEvents(rawValue: Int16(POLLNVAL)) }
}

/// One entry of a `poll(2)` set: a descriptor, the events wanted and the events that occurred.
public struct PollDescriptor: Hashable, Sendable {
    /// The descriptor to watch; a negative raw value is skipped by the kernel.
    public var descriptor: FileDescriptor
    /// The events the caller is interested in.
    public var events: PollEvents
    /// The events that occurred, filled in by `poll`.
    public var returnedEvents: PollEvents

    /// Creates an entry watching `descriptor` for `events`.
    public init(_ descriptor: FileDescriptor, events: PollEvents) {
        self.descriptor = descriptor
        self.events = events
        self.returnedEvents = []
    }

    /// Waits until an entry is ready or `timeout` passes (`poll(2)`); `nil` waits forever.
    ///
    /// Fills `returnedEvents` of each entry and returns how many entries are ready,
    /// 0 on timeout. `EINTR` is retried with the remaining time, measured on
    /// `CLOCK_MONOTONIC`, unless `retryOnInterrupt` is false.
    @discardableResult
    public static func poll(
        _ entries: inout [PollDescriptor],
        timeout: Duration?,
        retryOnInterrupt: Bool = true
    ) throws(Errno) -> Int {
        var fds = entries.map { pollfd(fd: $0.descriptor.rawValue, events: $0.events.rawValue, revents: 0) }
        let deadline = timeout.map { Int64(SystemClock.monotonicNanoseconds()).addingSaturating(nanoseconds($0)) }
        while true {
            var milliseconds: Int32 = -1
            if let deadline {
                let remaining = Swift.max(0, deadline - Int64(SystemClock.monotonicNanoseconds()))
                milliseconds = Int32(clamping: (remaining + 999_999) / 1_000_000)
            }
            let result = fds.withUnsafeMutableBufferPointer { buffer in
                Glibc.poll(buffer.baseAddress, nfds_t(buffer.count), milliseconds)
            }
            if result >= 0 {
                for index in entries.indices {
                    entries[index].returnedEvents = PollEvents(rawValue: fds[index].revents)
                }
                return Int(result)
            }
            let error = Errno.current
            if !(retryOnInterrupt && error == .interrupted) { throw error }
        }
    }

    /// `duration` in nanoseconds, 0 for a negative one, saturating at `Int64.max` (a timeout
    /// of centuries, from `WATCHDOG_USEC` say, waits as long as the clock counts).
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? Int64.max : scaled.addingSaturating(attoseconds / 1_000_000_000)
    }
}

extension Int64 {
    /// `self + other`, `Int64.max` or `Int64.min` where it would overflow.
    func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
