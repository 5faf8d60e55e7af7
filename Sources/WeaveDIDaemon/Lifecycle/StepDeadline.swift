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
    /// Every path the step waits on: `[path]`, and for a step that works on two (a copy from
    /// one file into another) both, as either may be the one that does not answer. None for a
    /// step that waits on no file system (checking what the steps before read): such a step
    /// has no deadline, and is never refused for a stuck thread.
    var paths: [String] { get }
    /// What the step does, for messages: `resolving "/mnt/nfs/backup"`, `reading the file`.
    var subject: String { get }
    /// The error that stops the work at this step: `problem` (which begins with `subject`
    /// where it should), and the `errno` that goes with it.
    func failure(_ problem: String, errno: Int32) -> Failure
}

extension DeadlineStep {
    var paths: [String] { [path] }
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
/// stuck; should its call ever return, the work stops at its next step, unseen, and its thread
/// ends. `StuckThreads` keeps count of such threads and bounds them: work is not started, and
/// a step not begun, that would only add one more.
///
/// Work on what is in memory (decoding what was read, comparing many paths) is a step of its
/// own that waits on no path (`DeadlineStep.paths` empty): it has no deadline, as its time
/// says nothing of a file system (thousands of jobs to compare must not pass for a dead
/// mount); the next step's deadline starts when that step is noted.
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

    /// The work: given a way to note its steps, it returns the value or throws. Noting a step
    /// throws the step's error when it is not to be begun: a thread is stuck on its path
    /// (`StuckThreads`), or nobody waits for the work any more (after a timeout or a
    /// cancellation); the work then lets the error pass and ends.
    typealias Work<Step: DeadlineStep, Value> =
        @Sendable (_ note: @escaping @Sendable (Step) throws(Step.Failure) -> Void) throws(Step.Failure) -> Value

    /// Runs `work`, starting at step `first`; blocks the calling thread until it is done, or
    /// until one step has taken `limit`. `purpose` says what the work is for, in what `stuck`
    /// reports (`a configuration load`).
    static func run<Step: DeadlineStep, Value: Sendable>(
        limit: Duration, first: Step, for purpose: String, stuck: StuckThreads = .shared, _ work: @escaping Work<Step, Value>
    ) throws(Step.Failure) -> Value {
        let watch = try start(first, for: purpose, stuck: stuck, work)
        return try watch.wait(limit: limit).get()
    }

    /// `run(limit:first:for:stuck:_:)` for async callers: suspends instead of blocking (the
    /// waiting is done by a thread of its own, which ends by the deadline at the latest, or when
    /// a step without one is over). A caller whose task is cancelled stops waiting at once, with
    /// the step's error (`ECANCELED`); the work stops at its next step, as after a timeout.
    static func run<Step: DeadlineStep, Value: Sendable>(
        limit: Duration, first: Step, for purpose: String, stuck: StuckThreads = .shared, _ work: @escaping Work<Step, Value>
    ) async throws(Step.Failure) -> Value {
        let watch = try start(first, for: purpose, stuck: stuck, work)
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

    /// Starts `work` on a thread of its own, unless `stuck` refuses it.
    private static func start<Step: DeadlineStep, Value: Sendable>(
        _ first: Step, for purpose: String, stuck: StuckThreads, _ work: @escaping Work<Step, Value>
    ) throws(Step.Failure) -> StepWatch<Step, Value> {
        if let refusal = stuck.refusal(toStart: first) { throw first.failure(refusal.problem, errno: refusal.errno) }
        let watch = StepWatch<Step, Value>(first: first, purpose: purpose, stuck: stuck)
        if let failure = detach(first, { watch.finish(Result { () throws(Step.Failure) -> Value in try work(watch.note) }) }) {
            throw failure
        }
        return watch
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
        "\(step.subject) did not answer within \(SecondsRange.format(limit)) s (is its file system responding?)"
    }
}

extension Duration {
    /// The duration in whole nanoseconds, 0 when negative: for deadlines on the monotonic clock
    /// (`SystemClock.monotonicNanoseconds`).
    var clampedNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}

/// One run's shared state: its step, when the step began, and its result. The work's thread
/// and the waiter each hold it, so whichever lets go last frees it.
private final class StepWatch<Step: DeadlineStep, Value: Sendable>: @unchecked Sendable {
    // @unchecked: every stored var is touched only with `mutex` held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let stuck: StuckThreads
    private let id: Int
    private let purpose: String
    private var step: Step
    private var stepStarted: UInt64
    private var result: Result<Value, Step.Failure>?
    /// Whether the waiter gave up on the work at its deadline: its thread is stuck, in `stuck`.
    private var abandoned = false
    /// Whether nobody waits for the work any more (timed out or cancelled).
    private var unwanted = false

    init(first: Step, purpose: String, stuck: StuckThreads) {
        self.stuck = stuck
        id = stuck.newID()
        self.purpose = purpose
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

    /// The work begins `step`: its deadline starts now. Throws the step's error, and the step
    /// is not begun, when a thread is stuck on its path, or when nobody waits for the work any
    /// more: a thread whose stuck call returns at last goes no further.
    func note(_ step: Step) throws(Step.Failure) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if unwanted { throw step.failure("\(step.subject) was not begun: nobody waits for the work any more", errno: ECANCELED) }
        if let refusal = stuck.refusal(toTry: step, by: id) { throw step.failure(refusal.problem, errno: refusal.errno) }
        // The waiter waits without a deadline during a step without one: it times this one.
        let timedAgain = self.step.paths.isEmpty && !step.paths.isEmpty
        self.step = step
        stepStarted = SystemClock.monotonicNanoseconds()
        if timedAgain { pthread_cond_signal(condition) }
    }

    func finish(_ result: Result<Value, Step.Failure>) {
        pthread_mutex_lock(mutex)
        self.result = result
        pthread_cond_signal(condition)
        // Under the mutex, so that a thread is never counted stuck after it finished.
        if abandoned { stuck.finish(id) }
        pthread_mutex_unlock(mutex)
    }

    /// The error for a caller that stopped waiting, cancelled, at the current step.
    func cancelled() -> Step.Failure {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        unwanted = true
        return step.failure("\(step.subject) was not waited for: cancelled", errno: ECANCELED)
    }

    /// The result, or the timeout of the step that has run for `limit` without the work finishing.
    func wait(limit: Duration) -> Result<Value, Step.Failure> {
        let limitNanoseconds = limit.clampedNanoseconds
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if let result { return result }
            // A step that waits on no path has no deadline: until the next step, or the end.
            if step.paths.isEmpty {
                pthread_cond_wait(condition, mutex)
                continue
            }
            // A step noted meanwhile moved the deadline; the wait below then just ends early.
            let deadline = stepStarted + limitNanoseconds
            if SystemClock.monotonicNanoseconds() >= deadline {
                if !abandoned {
                    abandoned = true
                    unwanted = true
                    stuck.leave(id, paths: step.paths, purpose: purpose, since: stepStarted)
                }
                return .failure(step.failure(StepDeadline.problem(step, limit: limit), errno: ETIMEDOUT))
            }
            var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            _ = pthread_cond_timedwait(condition, mutex, &until)
        }
    }
}

/// What an async caller gets: the first of the answers given (the result, or the cancellation).
final class FirstAnswer<Answer: Sendable>: Sendable {
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
