import Glibc
import WeaveDIPosix

/// What a configuration load is doing on the file system: the step a deadline names when it
/// gives up.
public struct LoadStep: Sendable, Equatable {
    /// `reading` or `resolving`.
    public var action: String
    /// The configuration file, or `built-in default`.
    public var file: String
    /// The field whose path this is, such as `sync.jobs[1].destination`; nil for the file itself.
    public var fieldPath: String?
    /// The path read or resolved.
    public var path: String

    public init(_ action: String, file: String, fieldPath: String?, path: String) {
        self.action = action
        self.file = file
        self.fieldPath = fieldPath
        self.path = path
    }
}

/// Runs a configuration load, which reads the file system, on a thread of its own, and gives up
/// on it when one of its steps does not answer in time.
///
/// `realpath` or `stat` on a dead hard NFS mount waits for ever, and no signal ends it. Run on
/// the `Supervisor` actor or on Swift's cooperative pool (two threads on two cores), such a
/// call would hold a reload, and with it the shutdown, for good. So the load runs on a detached
/// thread (`PosixThread.detach`), the caller waits for it (blocking its own thread, or
/// suspended), and the load reports each step it begins (a file read, a path resolved). Once
/// a step has run for `limit`, the caller gets a `ConfigurationError` naming the step's path
/// (`ETIMEDOUT`), and the thread is left behind: it cannot be cancelled. It holds its own
/// references to what it uses, nothing waits for it, and the process can exit while it is
/// stuck; should its call ever return, it finishes unseen and its thread ends.
enum LoadDeadline {
    /// How long one step of the daemon's load may take: 5 s. A file system that answers at
    /// all answers a lookup in milliseconds, even over a network; this is a thousand times that.
    /// It is also half the default `control.callTimeout`, so that the varlink `Reload` method,
    /// which waits for the load, can answer `ReloadRefused` with this reason before the call
    /// itself times out (each stuck load also leaves a thread behind, so a longer wait would
    /// buy nothing).
    static let stepLimit: Duration = .seconds(5)

    /// The work: given a way to note its steps, it returns the value or throws.
    typealias Work<Value> = @Sendable (_ note: @escaping @Sendable (LoadStep) -> Void) throws(ConfigurationError) -> Value

    /// Runs `work`, starting at step `first`; blocks the calling thread until it is done, or
    /// until one step has taken `limit`.
    static func run<Value: Sendable>(
        limit: Duration, first: LoadStep, _ work: @escaping Work<Value>
    ) throws(ConfigurationError) -> Value {
        let watch = LoadWatch<Value>(first: first)
        if let failure = detach(first, { watch.finish(Result { () throws(ConfigurationError) -> Value in try work(watch.note) }) }) {
            throw failure
        }
        return try watch.wait(limit: limit).get()
    }

    /// `run(limit:first:_:)` for async callers: suspends instead of blocking (the waiting is
    /// done by a thread of its own, which ends by the deadline at the latest).
    static func run<Value: Sendable>(
        limit: Duration, first: LoadStep, _ work: @escaping Work<Value>
    ) async throws(ConfigurationError) -> Value {
        let result: Result<Value, ConfigurationError> = await withCheckedContinuation { continuation in
            let failure = detach(first) {
                continuation.resume(returning: Result { () throws(ConfigurationError) -> Value in
                    try run(limit: limit, first: first, work)
                })
            }
            if let failure { continuation.resume(returning: .failure(failure)) }
        }
        return try result.get()
    }

    /// Starts `body` on a detached thread; the error to throw when there can be none (`EAGAIN`).
    private static func detach(_ first: LoadStep, _ body: @escaping @Sendable () -> Void) -> ConfigurationError? {
        do {
            try PosixThread.detach(body)
            return nil
        } catch {
            return ConfigurationError(
                file: first.file, fieldPath: first.fieldPath,
                problem: "cannot start a thread to read the configuration: \(error)", errno: error.rawValue)
        }
    }

    /// `resolving "/mnt/nfs/backup" did not answer within 5 s (is its file system responding?)`,
    /// or `reading the file did not answer …` for the configuration file itself.
    static func problem(_ step: LoadStep, limit: Duration) -> String {
        let subject = step.fieldPath == nil && step.path == step.file ? "the file" : "\"\(step.path)\""
        return "\(step.action) \(subject) did not answer within \(seconds(limit)) s (is its file system responding?)"
    }

    /// `5`, `0.25`.
    static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        if attoseconds == 0 { return "\(whole)" }
        return "\(Double(whole) + Double(attoseconds) / 1e18)"
    }
}

/// One load's shared state: its step, when the step began, and its result. The load's thread
/// and the waiter each hold it, so whichever lets go last frees it.
private final class LoadWatch<Value: Sendable>: @unchecked Sendable {
    // @unchecked: every stored var is touched only with `mutex` held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var step: LoadStep
    private var stepStarted: UInt64
    private var result: Result<Value, ConfigurationError>?

    init(first: LoadStep) {
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

    /// The load begins `step`: its deadline starts now.
    func note(_ step: LoadStep) {
        pthread_mutex_lock(mutex)
        self.step = step
        stepStarted = SystemClock.monotonicNanoseconds()
        pthread_mutex_unlock(mutex)
    }

    func finish(_ result: Result<Value, ConfigurationError>) {
        pthread_mutex_lock(mutex)
        self.result = result
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// The result, or the timeout of the step that has run for `limit` without the load finishing.
    func wait(limit: Duration) -> Result<Value, ConfigurationError> {
        let (seconds, attoseconds) = limit.components
        let limitNanoseconds = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if let result { return result }
            // A step noted meanwhile moved the deadline; the wait below then just ends early.
            let deadline = stepStarted + limitNanoseconds
            if SystemClock.monotonicNanoseconds() >= deadline {
                return .failure(ConfigurationError(
                    file: step.file, fieldPath: step.fieldPath, problem: LoadDeadline.problem(step, limit: limit), errno: ETIMEDOUT))
            }
            var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            _ = pthread_cond_timedwait(condition, mutex, &until)
        }
    }
}
