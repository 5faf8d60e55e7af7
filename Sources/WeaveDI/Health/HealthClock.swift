import Synchronization

/// The time source of the health registry: monotonic time for timeouts, backoff and the loop,
/// wall time for reports. Tests inject `ManualHealthClock`.
public protocol HealthClock: Sendable {
    /// Monotonic time since an arbitrary start.
    var now: Duration { get }
    /// Seconds since the Unix epoch.
    var wallTime: Double { get }
    /// Suspends for `duration`; throws `CancellationError` when cancelled.
    func sleep(for duration: Duration) async throws
}

/// The real clocks: `ContinuousClock` and the system's realtime clock.
public struct SystemHealthClock: HealthClock {
    private let start = ContinuousClock.now

    /// Creates the clock.
    public init() {}

    /// Monotonic time since the clock was made.
    public var now: Duration { ContinuousClock.now - start }
    /// Seconds since the Unix epoch.
    public var wallTime: Double { wallClockNow() }

    /// Sleeps on `ContinuousClock`, for any duration: a check's timeout or the loop's
    /// interval of `.seconds(.max)` means "never", not a stop.
    public func sleep(for duration: Duration) async throws {
        // `Task.sleep` stops the process for a deadline past what its count of nanoseconds
        // holds (about 292 years away): a longer sleep is taken in parts.
        var left = duration
        while left > Self.longestSleep {
            try await Task.sleep(for: Self.longestSleep)
            left -= Self.longestSleep
        }
        try await Task.sleep(for: left)
    }

    /// The longest single `Task.sleep`: a hundred years.
    static let longestSleep = Duration.seconds(100 * 365 * 86_400)
}

/// A clock that moves only when told to (`advance(by:)`), for tests of timeouts, backoff and
/// circuit breakers without real waiting.
public final class ManualHealthClock: HealthClock {
    private struct Waiter {
        let id: Int
        let deadline: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Duration = .zero
        var nextID = 0
        var waiters: [Waiter] = []
    }

    private let state = Locked(State())
    private let wallStart: Double

    /// Creates a clock at monotonic zero and the given wall time.
    public init(wallStart: Double = 1_700_000_000) {
        self.wallStart = wallStart
    }

    /// The clock's current monotonic time.
    public var now: Duration { state.withLock { $0.now } }
    /// `wallStart` plus the time advanced so far.
    public var wallTime: Double {
        let now = self.now
        return wallStart + seconds(now)
    }

    /// How many sleepers are waiting (tests wait for this to know a task reached its sleep).
    public var sleeperCount: Int { state.withLock { $0.waiters.count } }

    /// Suspends until the clock has been advanced by `duration`.
    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: Bool = state.withLock { state in
                    if Task.isCancelled { return true }
                    if duration <= .zero { return true }
                    state.waiters.append(Waiter(id: id, deadline: state.now + duration, continuation: continuation))
                    return false
                }
                if resumeNow {
                    if Task.isCancelled { continuation.resume(throwing: CancellationError()) } else { continuation.resume() }
                }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLock { state in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        let due: [Waiter] = state.withLock { state in
            state.now += duration
            let now = state.now
            let due = state.waiters.filter { $0.deadline <= now }
            state.waiters.removeAll { $0.deadline <= now }
            return due
        }
        for waiter in due { waiter.continuation.resume() }
    }
}
