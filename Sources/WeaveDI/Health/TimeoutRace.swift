import Synchronization

/// Runs `operation` in its own task and returns its result, or nil once `timeout` has passed on
/// `clock` (cancelling it). An operation that ignores cancellation is abandoned, never awaited:
/// it cannot delay the caller.
package func withTimeout<R: Sendable>(
    _ timeout: Duration, clock: any HealthClock, _ operation: @escaping @Sendable () async -> R
) async -> R? {
    let race = TimeoutRace<R>()
    return await withCheckedContinuation { continuation in
        race.begin(continuation)
        let work = Task { race.finish(await operation()) }
        let timer = Task {
            do {
                try await clock.sleep(for: timeout)
                race.finish(nil)
            } catch {}
        }
        race.attach(work, timer)
    }
}

/// The shared state of one `withTimeout`: whoever finishes first resumes the caller.
private final class TimeoutRace<R: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<R?, Never>?
        var done = false
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Locked(State())

    func begin(_ continuation: CheckedContinuation<R?, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    func attach(_ tasks: Task<Void, Never>...) {
        let cancelNow: Bool = state.withLock { state in
            state.tasks = tasks
            return state.done
        }
        if cancelNow { tasks.forEach { $0.cancel() } }
    }

    func finish(_ value: R?) {
        let taken: (CheckedContinuation<R?, Never>?, [Task<Void, Never>]) = state.withLock { state in
            guard !state.done else { return (nil, []) }
            state.done = true
            defer { state.continuation = nil }
            return (state.continuation, state.tasks)
        }
        guard let continuation = taken.0 else { return }
        continuation.resume(returning: value)
        taken.1.forEach { $0.cancel() }
    }
}
