import WeaveDI

/// Whether the daemon's start is over: the control server, the first service started, serves
/// calls before the others (the jobs, the health checks) have started, and a call that reads
/// those waits here until the start is done, so that it is never answered from a half-built
/// picture (no jobs, no checks run). The supervisor opens the gate once every service has
/// started (before `READY=1`), or closes it for good when the start fails or a shutdown ends it.
final class StartGate: Sendable {
    /// How the start went, as far as it has gone.
    enum State: Sendable, Equatable {
        /// Services are still starting.
        case starting
        /// Every service started: calls are answered.
        case started
        /// The start did not finish, and never will (why: `failed to start: …`, `stopping: …`).
        case ended(String)
    }

    private struct Inner {
        var state = State.starting
        var nextWaiter: UInt64 = 0
        /// The waits going on, by id: each is taken out once, by whoever resumes it (the
        /// settling of the state, or its own cancellation).
        var waiters: [UInt64: CheckedContinuation<State, Never>] = [:]
    }

    private let inner = Locked(Inner())

    /// The state now.
    var state: State { inner.withLock { $0.state } }

    /// Whether the start is over and went well.
    var isStarted: Bool { state == .started }

    /// How many waits (`wait(atMost:)`, `settled()`) are registered now.
    var waiterCount: Int { inner.withLock { $0.waiters.count } }

    /// Every service started: waiting calls are answered.
    func open() { settle(.started) }

    /// The start ended without finishing (`reason` says how): waiting calls are told so. Once
    /// open, the gate stays open: a later stop is not a start that ended.
    func end(_ reason: String) { settle(.ended(reason)) }

    private func settle(_ state: State) {
        let waiters = inner.withLock { inner -> [CheckedContinuation<State, Never>] in
            guard inner.state == .starting else { return [] }
            inner.state = state
            defer { inner.waiters = [:] }
            return Array(inner.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: state) }
    }

    /// The state once the start is over, or `.starting` when it is still going after `limit`.
    /// A wait given up at `limit` is taken out of the gate then: a client that calls again
    /// and again during a long start leaves nothing behind.
    func wait(atMost limit: Duration) async -> State {
        let now = state
        guard now == .starting else { return now }
        return await withTimeout(limit, clock: SystemHealthClock()) { await self.settled() } ?? .starting
    }

    /// The state once the start is over; `.starting` at once when the task waiting is
    /// cancelled (its wait then taken out of the gate).
    func settled() async -> State {
        let id = inner.withLock { inner -> UInt64 in
            inner.nextWaiter &+= 1
            return inner.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = inner.withLock { inner -> State? in
                    guard inner.state == .starting else { return inner.state }
                    // Cancelled before it was registered: the handler found nothing to resume.
                    if Task.isCancelled { return .starting }
                    inner.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = inner.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: .starting)
        }
    }
}
