import Glibc

/// A point in time or duration as whole seconds plus nanoseconds, like C `struct timespec`.
///
/// Used for file timestamps (`FileStatus`, `setTimes`) and for clock readings
/// (`SystemClock.realtime()`). `nanoseconds` is always in `0..<1_000_000_000`.
public struct TimeSpec: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Whole seconds (since the Unix epoch for realtime values).
    public var seconds: Int64
    /// Nanoseconds within the second, `0..<1_000_000_000`.
    public var nanoseconds: Int32

    /// Creates a value from seconds and nanoseconds, normalizing nanoseconds into range.
    public init(seconds: Int64, nanoseconds: Int64 = 0) {
        let carry = nanoseconds >= 0 ? nanoseconds / 1_000_000_000 : (nanoseconds + 1) / 1_000_000_000 - 1
        self.seconds = seconds + carry
        self.nanoseconds = Int32(nanoseconds - carry * 1_000_000_000)
    }

    /// Converts a C `timespec`.
    public init(_ value: timespec) {
        self.init(seconds: Int64(value.tv_sec), nanoseconds: Int64(value.tv_nsec))
    }

    /// The C `timespec` for this value.
    public var timespecValue: timespec {
        timespec(tv_sec: time_t(seconds), tv_nsec: Int(nanoseconds))
    }

    /// The whole value in nanoseconds; traps on overflow (beyond year 2262 for epoch times).
    public var totalNanoseconds: Int64 {
        seconds * 1_000_000_000 + Int64(nanoseconds)
    }

    /// The whole value in microseconds, truncating.
    public var totalMicroseconds: Int64 {
        seconds * 1_000_000 + Int64(nanoseconds / 1_000)
    }

    /// The value as a Swift `Duration`.
    public var duration: Duration {
        .seconds(seconds) + .nanoseconds(Int64(nanoseconds))
    }

    /// Orders by seconds, then nanoseconds.
    public static func < (lhs: TimeSpec, rhs: TimeSpec) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }

    /// A textual form such as `1700000000.000000123`.
    public var description: String {
        let fraction = String(nanoseconds)
        return "\(seconds)." + String(repeating: "0", count: 9 - fraction.count) + fraction
    }
}
