import WeaveDI
import WeaveDIPosix

/// Writes a file the daemon keeps replacing (the jobs' state file, the metrics file) off the
/// caller's thread, newest content first and only: a write asked for while one is under way
/// replaces any other still waiting, so the file ends with the content asked for last while its
/// file system answers. A write given up on (below) never renames its content into place, even
/// should its calls return at last; a write that fails is not tried again: the next one asked
/// for replaces it.
///
/// Each write (`AtomicFile.write`) runs under `StepDeadline`, on a thread of its own, within
/// its 5 s step limit. A state directory on a file system that stops answering thus never
/// holds the scheduler's actor, nor a thread of Swift's shared pool: the write fails
/// (`ETIMEDOUT`, logged, naming the file), its thread is left behind and counted
/// (`StuckThreads`), and the writes after it fail at once while that thread stays stuck.
final class LatestFileWriter: Sendable {
    /// What the file is, for the log and `StuckThreads`: `the jobs' state file`.
    let purpose: String
    let permissions: FilePermissions
    let durable: Bool
    /// Directories to create first (the state directory), or none.
    let makesDirectory: Bool
    let log: DaemonLog
    private let state = Locked<State>(State())

    private struct State {
        /// The newest content not being written yet, and where.
        var waiting: (path: String, bytes: [UInt8])?
        /// The task writing, while there is one.
        var writer: Task<Void, Never>?
    }

    init(purpose: String, permissions: FilePermissions, durable: Bool, makesDirectory: Bool = false, log: DaemonLog) {
        self.purpose = purpose
        self.permissions = permissions
        self.durable = durable
        self.makesDirectory = makesDirectory
        self.log = log
    }

    /// Asks for `bytes` to become the content of `path`; returns at once.
    func write(_ bytes: [UInt8], to path: String) {
        state.withLock { state in
            state.waiting = (path, bytes)
            // Started under the lock, so that the task is known before it can end.
            if state.writer == nil { state.writer = Task { await self.writeWaiting() } }
        }
    }

    /// Waits until every write asked for so far has been done or has failed (each within the
    /// step limit).
    func flush() async {
        while let writer = state.withLock({ $0.writer }) { await writer.value }
    }

    private func writeWaiting() async {
        while let next = state.withLock({ state -> (path: String, bytes: [UInt8])? in
            guard let next = state.waiting else {
                state.writer = nil
                return nil
            }
            state.waiting = nil
            return next
        }) {
            do {
                try await write(next.bytes, to: next.path)
            } catch {
                log.error("sync", "cannot write \(purpose) \(next.path): \(error.problem)")
            }
        }
    }

    private func write(_ bytes: [UInt8], to path: String) async throws(FileStep.Failure) {
        let step = FileStep("writing the file", path)
        let (permissions, durable, makesDirectory) = (permissions, durable, makesDirectory)
        try await StepDeadline.run(limit: StepDeadline.stepLimit, first: step, for: "a write of \(purpose)") { note throws(FileStep.Failure) in
            do throws(Errno) {
                if makesDirectory, let slash = path.lastIndex(of: "/"), slash != path.startIndex {
                    try FileDescriptor.currentWorkingDirectory.makeDirectories(at: String(path[..<slash]), permissions: 0o750)
                }
                // A write given up on (its deadline passed) never renames its content into
                // place should its calls return at last: a newer one may have been written.
                try AtomicFile.write(bytes, to: path, permissions: permissions, durable: durable) {
                    (try? note(FileStep("renaming the file", path))) != nil
                }
            } catch {
                throw step.failure("\(error)", errno: error.rawValue)
            }
        }
    }
}

/// Reading or writing a file, as one step that `StepDeadline` watches.
struct FileStep: DeadlineStep {
    /// `writing the file`, `reading the file`.
    let subject: String
    let path: String

    init(_ subject: String, _ path: String) {
        self.subject = subject
        self.path = path
    }

    struct Failure: Error {
        /// What went wrong: `writing the file did not answer within 5 s (…)`, or the errno's text.
        let problem: String
        let errno: Int32
    }

    func failure(_ problem: String, errno: Int32) -> Failure {
        Failure(problem: problem, errno: errno)
    }
}
