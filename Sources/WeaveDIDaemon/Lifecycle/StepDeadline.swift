import Glibc
import WeaveDI
import WeaveDIPosix

/// A step of work on the file system that `StepDeadline` watches: the path it waits on, and
/// the error that names it when it does not answer.
protocol DeadlineStep: Sendable {
    /// The error that stops the work.
    associatedtype Failure: Error
    /// The path the step reads, resolves, opens or creates.
    var path: String { get }
    /// What the step does, for messages: `resolving "/mnt/nfs/backup"`, `reading the file`.
    var subject: String { get }
    /// The error that stops the work at this step: `problem` (which begins with `subject`
    /// where it should), and the `errno` that goes with it.
    func failure(_ problem: String, errno: Int32) -> Failure
}

/// Runs work that reads the file system on a thread of its own, and gives up on it when one of
/// its steps does not answer in time.
///
/// `realpath`, `stat` or `open` on a dead hard NFS mount waits for ever, and no signal ends it.
/// Run on an actor or on Swift's cooperative pool (two threads on two cores), such a call would
/// hold that thread for good: two of them hold every task of the process. So the work runs on
/// a detached thread (`PosixThread.detach`), the caller waits for it (blocking its own thread,
/// or suspended), and the work reports each step it begins (a file read, a path resolved).
/// Once a step has run for `limit`, the caller gets the step's error naming its path
/// (`ETIMEDOUT`), and the thread is left behind: it cannot be cancelled. It holds its own
/// references to what it uses, nothing waits for it, and the process can exit while it is
/// stuck; should its call ever return, it finishes unseen and its thread ends.
///
/// The daemon's configuration load (`DaemonContext.loadConfiguration`) and a mirror run's start
/// (`MirrorRoots.open`) go through here.
enum StepDeadline {
    /// How long one step of the daemon's work on the file system may take: 5 s. A file system
    /// that answers at all answers a lookup in milliseconds, even over a network; this is a
    /// thousand times that. It is also half the default `control.callTimeout`, so that the
    /// varlink `Reload` method, which waits for the load, can answer `ReloadRefused` with this
    /// reason before the call itself times out (each stuck step also leaves a thread behind, so
    /// a longer wait would buy nothing).
    static let stepLimit: Duration = .seconds(5)

    /// The work: given a way to note its steps, it returns the value or throws.
    typealias Work<Step: DeadlineStep, Value> =
        @Sendable (_ note: @escaping @Sendable (Step) -> Void) throws(Step.Failure) -> Value

    /// Runs `work`, starting at step `first`; blocks the calling thread until it is done, or
    /// until one step has taken `limit`.
    static func run<Step: DeadlineStep, Value: Sendable>(
        limit: Duration, first: Step, _ work: @escaping Work<Step, Value>
    ) throws(Step.Failure) -> Value {
        let watch = StepWatch<Step, Value>(first: first)
        if let failure = detach(first, { watch.finish(Result { () throws(Step.Failure) -> Value in try work(watch.note) }) }) {
            throw failure
        }
        return try watch.wait(limit: limit).get()
    }

    /// `run(limit:first:_:)` for async callers: suspends instead of blocking (the waiting is
    /// done by a thread of its own, which ends by the deadline at the latest). A caller whose
    /// task is cancelled stops waiting at once, with the step's error (`ECANCELED`); the work
    /// goes on unseen, as after a timeout.
    static func run<Step: DeadlineStep, Value: Sendable>(
        limit: Duration, first: Step, _ work: @escaping Work<Step, Value>
    ) async throws(Step.Failure) -> Value {
        let watch = StepWatch<Step, Value>(first: first)
        if let failure = detach(first, { watch.finish(Result { () throws(Step.Failure) -> Value in try work(watch.note) }) }) {
            throw failure
        }
        let answer = FirstAnswer<Result<Value, Step.Failure>>()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                answer.wait(continuation)
                if let failure = detach(first, { answer.give(watch.wait(limit: limit)) }) { answer.give(.failure(failure)) }
            }
        } onCancel: {
            answer.give(.failure(watch.cancelled()))
        }
        return try result.get()
    }

    /// Starts `body` on a detached thread; the error to throw when there can be none (`EAGAIN`).
    private static func detach<Step: DeadlineStep>(_ first: Step, _ body: @escaping @Sendable () -> Void) -> Step.Failure? {
        do {
            try PosixThread.detach(body)
            return nil
        } catch {
            return first.failure("cannot start a thread for \(first.subject): \(error)", errno: error.rawValue)
        }
    }

    /// `resolving "/mnt/nfs/backup" did not answer within 5 s (is its file system responding?)`.
    static func problem(_ step: some DeadlineStep, limit: Duration) -> String {
        "\(step.subject) did not answer within \(seconds(limit)) s (is its file system responding?)"
    }

    /// `5`, `0.25`.
    static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        if attoseconds == 0 { return "\(whole)" }
        return "\(Double(whole) + Double(attoseconds) / 1e18)"
    }
}

/// One run's shared state: its step, when the step began, and its result. The work's thread
/// and the waiter each hold it, so whichever lets go last frees it.
private final class StepWatch<Step: DeadlineStep, Value: Sendable>: @unchecked Sendable {
    // @unchecked: every stored var is touched only with `mutex` held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var step: Step
    private var stepStarted: UInt64
    private var result: Result<Value, Step.Failure>?

    init(first: Step) {
        step = first
        stepStarted = SystemClock.monotonicNanoseconds()
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// The work begins `step`: its deadline starts now.
    func note(_ step: Step) {
        pthread_mutex_lock(mutex)
        self.step = step
        stepStarted = SystemClock.monotonicNanoseconds()
        pthread_mutex_unlock(mutex)
    }

    func finish(_ result: Result<Value, Step.Failure>) {
        pthread_mutex_lock(mutex)
        self.result = result
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// The error for a caller that stopped waiting, cancelled, at the current step.
    func cancelled() -> Step.Failure {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return step.failure("\(step.subject) was not waited for: cancelled", errno: ECANCELED)
    }

    /// The result, or the timeout of the step that has run for `limit` without the work finishing.
    func wait(limit: Duration) -> Result<Value, Step.Failure> {
        let (seconds, attoseconds) = limit.components
        let limitNanoseconds = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if let result { return result }
            // A step noted meanwhile moved the deadline; the wait below then just ends early.
            let deadline = stepStarted + limitNanoseconds
            if SystemClock.monotonicNanoseconds() >= deadline {
                return .failure(step.failure(StepDeadline.problem(step, limit: limit), errno: ETIMEDOUT))
            }
            var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            _ = pthread_cond_timedwait(condition, mutex, &until)
        }
    }
}

/// What an async caller gets: the first of the answers given (the result, or the cancellation).
private final class FirstAnswer<Answer: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Answer, Never>)
        case given(Answer)
        case taken
    }

    private let state = Locked(State.empty)

    /// Resumes `continuation` with the first answer, now if it was given already.
    func wait(_ continuation: CheckedContinuation<Answer, Never>) {
        let early: Answer? = state.withLock { state in
            guard case let .given(answer) = state else {
                state = .waiting(continuation)
                return nil
            }
            state = .taken
            return answer
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Gives `answer`, unless one was given before.
    func give(_ answer: Answer) {
        let waiting: CheckedContinuation<Answer, Never>? = state.withLock { state in
            switch state {
            case .empty:
                state = .given(answer)
                return nil
            case let .waiting(continuation):
                state = .taken
                return continuation
            case .given, .taken:
                return nil
            }
        }
        waiting?.resume(returning: answer)
    }
}
