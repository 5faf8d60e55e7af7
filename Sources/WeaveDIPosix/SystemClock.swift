import Glibc

/// Readings of the Linux system clocks via `clock_gettime(2)`.
///
/// `monotonicMicroseconds()` is the value systemd expects in
/// `MONOTONIC_USEC=` for `sd_notify` reload and stopping messages.
public enum SystemClock {
    /// The raw `clockid_t` of a clock to read.
    public struct ID: RawRepresentable, Hashable, Sendable {
        /// The raw `clockid_t` value.
        public let rawValue: clockid_t
        /// Wraps a raw `clockid_t`.
        public init(rawValue: clockid_t) { self.rawValue = rawValue }
        /// `CLOCK_MONOTONIC`: steady time since boot, excluding suspend.
        public static var monotonic: ID { ID(rawValue: CLOCK_MONOTONIC) }
        /// `CLOCK_REALTIME`: wall-clock time since the Unix epoch.
        public static var realtime: ID { ID(rawValue: CLOCK_REALTIME) }
        /// `CLOCK_BOOTTIME`: like monotonic, but including time spent suspended.
        public static var boottime: ID { ID(rawValue: CLOCK_BOOTTIME) }
    }

    /// Reads `clock` with `clock_gettime(2)`.
    public static func now(_ clock: ID) -> TimeSpec {
        var value = timespec()
        // clock_gettime only fails for an invalid clock id or bad pointer, both programming errors.
        let result = clock_gettime(clock.rawValue, &value)
        precondition(result == 0, "clock_gettime(\(clock.rawValue)) failed: \(Errno.current)")
        return TimeSpec(value)
    }

    /// `CLOCK_MONOTONIC` now, in nanoseconds.
    public static func monotonicNanoseconds() -> UInt64 {
        UInt64(now(.monotonic).totalNanoseconds)
    }

    /// `CLOCK_MONOTONIC` now, in microseconds: the `MONOTONIC_USEC=` value for `sd_notify`.
    public static func monotonicMicroseconds() -> UInt64 {
        UInt64(now(.monotonic).totalMicroseconds)
    }

    /// `CLOCK_REALTIME` now, as seconds and nanoseconds since the Unix epoch.
    public static func realtime() -> TimeSpec {
        now(.realtime)
    }

    /// Blocks the calling thread for `duration` on `CLOCK_MONOTONIC` (`clock_nanosleep(2)`
    /// with an absolute deadline), resuming after signal handlers so the full time elapses.
    public static func sleep(for duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard seconds > 0 || (seconds == 0 && attoseconds > 0) else { return }
        let start = now(.monotonic)
        let deadline = TimeSpec(
            seconds: start.seconds + seconds,
            nanoseconds: Int64(start.nanoseconds) + attoseconds / 1_000_000_000)
        var request = deadline.timespecValue
        // clock_nanosleep returns the error number; EINTR means "sleep again until the deadline".
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &request, nil) == EINTR {}
    }
}
