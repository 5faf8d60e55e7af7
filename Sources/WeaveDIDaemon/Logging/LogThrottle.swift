import WeaveDI
import WeaveDIPosix

/// Keeps a warning that any client can cause at will (a refused connection, a denied or
/// malformed call) from flooding the log: at most `burst` such lines per `interval`; the
/// lines left out are counted, and the next line written says how many there were.
final class LogThrottle: Sendable {
    private struct State {
        var windowStart: UInt64 = 0
        var written = 0
        var leftOut = 0
        var started = false
    }

    private let interval: UInt64
    private let intervalText: String
    private let burst: Int
    private let now: @Sendable () -> UInt64
    private let state = Locked(State())

    /// `now` gives monotonic nanoseconds (the system's monotonic clock; a test's own).
    init(interval: Duration = .seconds(60), burst: Int = 10, now: @escaping @Sendable () -> UInt64 = SystemClock.monotonicNanoseconds) {
        self.interval = interval.clampedNanoseconds
        intervalText = interval == .seconds(60) ? "a minute" : "every \(interval.components.seconds) s"
        self.burst = burst
        self.now = now
    }

    /// Writes `message` as a warning of `subsystem` unless this throttle wrote `burst` lines
    /// within the current interval; then only counts it.
    func warning(_ log: DaemonLog, _ subsystem: String, _ message: @autoclosure () -> String) {
        write(.warning, log, subsystem, message())
    }

    /// `warning(_:_:_:)` at the notice level.
    func notice(_ log: DaemonLog, _ subsystem: String, _ message: @autoclosure () -> String) {
        write(.notice, log, subsystem, message())
    }

    private func write(_ level: DaemonLogLevel, _ log: DaemonLog, _ subsystem: String, _ message: @autoclosure () -> String) {
        let time = now()
        let leftOut: Int? = state.withLock { state in
            if !state.started || time &- state.windowStart >= interval {
                state.started = true
                state.windowStart = time
                state.written = 0
            }
            guard state.written < burst else {
                state.leftOut += 1
                return nil
            }
            state.written += 1
            defer { state.leftOut = 0 }
            return state.leftOut
        }
        guard let leftOut else { return }
        if leftOut == 0 {
            log.log(level, subsystem, message())
        } else {
            log.log(level, subsystem, message() + " (\(leftOut) more like it were not logged: at most \(burst) \(intervalText))")
        }
    }
}
