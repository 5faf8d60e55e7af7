import Glibc
import Synchronization
import WeaveDI
import WeaveDIPosix

/// The threads `StepDeadline` has left behind, each stuck in a call on a file system that does
/// not answer, and the path each is stuck on; process-wide (`shared`), as the threads are.
///
/// A stuck thread cannot be ended, and every reload, run or fix that met the same dead mount
/// would leave one more, for as long as the daemon lives. Two rules bound them:
///
/// - A step on a path a thread is stuck on, or below it, is not tried: the work fails at once
///   (`ETIMEDOUT`), saying so, and its thread ends. Attempts that come back to one dead mount
///   leave one thread per path, not one per attempt.
/// - While `limit` threads are stuck, no new work starts at all (`EAGAIN`): the error lists
///   the paths. This bounds what paths not yet seen stuck (many jobs on one dead server) can
///   add; work under way when the limit is reached may still add its own thread.
///
/// A thread counts as stuck once its step has run for the deadline's limit, until its call
/// returns (the work then goes no further: nobody waits for it); then it is forgotten, and
/// `report` says so, as it said when it was left behind.
final class StuckThreads: Sendable {
    /// The process's threads; the daemon logs what it reports.
    static let shared = StuckThreads(limit: 8)

    /// What `report` hears.
    enum Event: Sendable, Equatable {
        /// A thread was left behind: `a thread is stuck on …`.
        case stuck(String)
        /// A stuck thread's call returned at last: `a thread stuck on … returned after 63 s`.
        case returned(String)
    }

    /// How many threads may be stuck before new work is refused.
    let limit: Int
    private let state = Locked(State())
    /// `state.threads.count`, readable without the lock: hot paths ask `isEmpty` first.
    private let stuckCount = Atomic<Int>(0)
    private let reporter: Locked<@Sendable (Event) -> Void>

    private struct State {
        var threads: [Int: Thread] = [:]
        var lastID = 0
    }

    private struct Thread {
        /// The paths of its step: one, or two for a step that works on both (a copy from the
        /// source into the destination), where either may be the one that does not answer.
        let paths: [String]
        /// What it was doing: `a configuration load`.
        let purpose: String
        /// When its step began (monotonic nanoseconds).
        let since: UInt64
    }

    init(limit: Int, report: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.limit = limit
        reporter = Locked(report)
    }

    /// Sends what happens to `report` from now on.
    func report(to report: @escaping @Sendable (Event) -> Void) {
        reporter.withLock { $0 = report }
    }

    /// How many threads are stuck.
    var count: Int { state.withLock { $0.threads.count } }

    /// Whether no thread is stuck: one atomic load, for work that checks before every step
    /// (a mirror run's walk) and asks `refusal(toTry:by:)` only when some thread is.
    var isEmpty: Bool { stuckCount.load(ordering: .acquiring) == 0 }

    /// An identity for a new piece of work.
    func newID() -> Int {
        state.withLock { state in
            state.lastID += 1
            return state.lastID
        }
    }

    /// Why work whose first step is `first` may not start (the limit is reached, or its path is
    /// stuck), with its errno; nil when it may.
    func refusal(toStart first: some DeadlineStep) -> (problem: String, errno: Int32)? {
        let now = SystemClock.monotonicNanoseconds()
        return state.withLock { state in
            if state.threads.count >= limit {
                let paths = state.threads.values.sorted { $0.since < $1.since }
                    .map { "\(Self.quoted($0.paths)) for \(Self.seconds(from: $0.since, to: now)) s" }
                return ("\(first.subject) was not tried: \(state.threads.count) threads are stuck on file systems that do "
                    + "not answer, the most there may be (\(paths.joined(separator: ", "))); nothing more is tried until "
                    + "one of them returns", EAGAIN)
            }
            return Self.stuckPath(of: first, among: state.threads, except: nil, now: now).map { ($0.problem, $0.errno) }
        }
    }

    /// Why `step` of the work `id` may not be tried (one of its paths, `at`, or a directory
    /// above it, is one a thread is stuck on), with its errno; nil when it may.
    func refusal(toTry step: some DeadlineStep, by id: Int) -> (problem: String, errno: Int32, at: String)? {
        let now = SystemClock.monotonicNanoseconds()
        return state.withLock { Self.stuckPath(of: step, among: $0.threads, except: id, now: now) }
    }

    /// The work `id`'s step on `paths` (`DeadlineStep.paths`), begun at `since`, has not
    /// answered within its deadline: its thread is left behind.
    func leave(_ id: Int, paths: [String], purpose: String, since: UInt64) {
        let count = state.withLock { state in
            state.threads[id] = Thread(paths: paths, purpose: purpose, since: since)
            stuckCount.store(state.threads.count, ordering: .releasing)
            return state.threads.count
        }
        send(.stuck("a thread is stuck on \(Self.quoted(paths)) (\(purpose)) and left behind; \(count) stuck in all "
            + "(at most \(limit), then nothing more is tried)"))
    }

    /// The work `id` is done; if its thread was stuck, it is no more.
    func finish(_ id: Int) {
        let now = SystemClock.monotonicNanoseconds()
        let returned: (Thread, Int)? = state.withLock { state in
            let thread = state.threads.removeValue(forKey: id)
            stuckCount.store(state.threads.count, ordering: .releasing)
            return thread.map { ($0, state.threads.count) }
        }
        guard let (thread, count) = returned else { return }
        send(.returned("a thread stuck on \(Self.quoted(thread.paths)) (\(thread.purpose)) returned after "
            + "\(Self.seconds(from: thread.since, to: now)) s; \(count) still stuck"))
    }

    private func send(_ event: Event) {
        let report = reporter.withLock { $0 }
        report(event)
    }

    /// The refusal of `step` when a thread other than `except` is stuck on one of its paths or
    /// above it (the longest stuck is named, with the path of its that the step is at or below),
    /// and the step's path (`at`) that is.
    private static func stuckPath(
        of step: some DeadlineStep, among threads: [Int: Thread], except: Int?, now: UInt64
    ) -> (problem: String, errno: Int32, at: String)? {
        let paths = step.paths
        let matches = threads.compactMap { id, thread -> (thread: Thread, path: String, at: String)? in
            guard id != except else { return nil }
            for stuck in thread.paths {
                if let at = paths.first(where: { isAt($0, orBelow: stuck) }) { return (thread, stuck, at) }
            }
            return nil
        }
        guard let (thread, path, at) = matches.min(by: { $0.thread.since < $1.thread.since }) else { return nil }
        return ("\(step.subject) was not tried: an earlier thread (\(thread.purpose)) has been stuck on \(JSONValue.quotedPathForMessage(path)) "
            + "for \(seconds(from: thread.since, to: now)) s (is its file system responding?)", ETIMEDOUT, at)
    }

    /// `"/a"`, or `"/a" or "/b"`, each quoted as every message quotes a path from outside (a
    /// walk's: any file name, a `"` or a newline in it included).
    private static func quoted(_ paths: [String]) -> String {
        paths.map { JSONValue.quotedPathForMessage($0) }.joined(separator: " or ")
    }

    /// Whether `path` is `stuck` or lies below it, lexically.
    static func isAt(_ path: String, orBelow stuck: String) -> Bool {
        path.utf8.elementsEqual(stuck.utf8) || path.utf8.starts(with: (stuck.hasSuffix("/") ? stuck : stuck + "/").utf8)
    }

    /// Whole seconds from `start` to `end` (monotonic nanoseconds).
    private static func seconds(from start: UInt64, to end: UInt64) -> UInt64 {
        end > start ? (end - start) / 1_000_000_000 : 0
    }
}
