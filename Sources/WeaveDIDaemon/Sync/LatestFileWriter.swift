import WeaveDI
import WeaveDIControl
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
    /// The middle of the temporary files' names (`AtomicFile.temporaryName`), when they carry
    /// one of their own: before its first write to a path, the writer then removes the
    /// temporary files of that path that an earlier write left behind (a crash, a kill -9):
    /// the marker proves them the daemon's, in a directory other programs share. Nil: the
    /// default name (`.name.tmp.N`) and no such cleanup here.
    let temporaryMarker: String?
    let log: DaemonLog
    /// Told, and awaited, when a write ends otherwise than the one before it (the first write,
    /// a failure after a success or another failure, a success after a failure), before the
    /// failure is logged: the file's health check runs there, so that the check (and
    /// `GetHealth`) follows the write at once, not the health loop's next round, and says so
    /// by the time the log line is there.
    let outcomeChanged: (@Sendable () async -> Void)?
    private let state = Locked<State>(State())

    private struct State {
        /// The newest content not being written yet, where, and its generation.
        var waiting: (path: String, bytes: [UInt8], generation: UInt64)?
        /// The generation of the last write asked for (each `write` counts one more).
        var generation: UInt64 = 0
        /// The generation of the last write that ended (done or failed): it holds every write
        /// asked for up to it (an older one waiting was replaced by it).
        var ended: UInt64 = 0
        /// Those waiting (`waitForWrite`) for a generation to end, with their time limits.
        var waiters: [UInt64: (generation: UInt64, continuation: CheckedContinuation<Bool, Never>, timer: Task<Void, Never>?)] = [:]
        var nextWaiter: UInt64 = 0
        /// The task writing, while there is one.
        var writer: Task<Void, Never>?
        /// The paths whose stale temporary files were looked for (`temporaryMarker`).
        var cleaned: Set<String> = []
        /// How the last write ended (see `lastWrite`).
        var lastWrite: (path: String, problem: String?)?
    }

    init(
        purpose: String, permissions: FilePermissions, durable: Bool, makesDirectory: Bool = false, temporaryMarker: String? = nil,
        log: DaemonLog, outcomeChanged: (@Sendable () async -> Void)? = nil
    ) {
        self.purpose = purpose
        self.permissions = permissions
        self.durable = durable
        self.makesDirectory = makesDirectory
        self.temporaryMarker = temporaryMarker
        self.log = log
        self.outcomeChanged = outcomeChanged
    }

    /// Asks for `bytes` to become the content of `path`; returns at once, with the write's
    /// generation (for `waitForWrite`).
    @discardableResult
    func write(_ bytes: [UInt8], to path: String) -> UInt64 {
        state.withLock { state in
            state.generation += 1
            state.waiting = (path, bytes, state.generation)
            // Started under the lock, so that the task is known before it can end.
            if state.writer == nil { state.writer = Task { await self.writeWaiting() } }
            return state.generation
        }
    }

    /// Waits until a write of `generation` or later has ended (done or failed), for at most
    /// `limit`: true if one did. Unlike `flush`, a steady stream of writes after it, or a write
    /// before it that does not end, cannot hold the caller longer than `limit`.
    func waitForWrite(_ generation: UInt64, limit: Duration) async -> Bool {
        let id = state.withLock { state -> UInt64? in
            guard state.ended < generation else { return nil }
            state.nextWaiter += 1
            return state.nextWaiter
        }
        guard let id else { return true }
        return await withCheckedContinuation { continuation in
            let registered = state.withLock { state -> Bool in
                guard state.ended < generation else { return false }
                state.waiters[id] = (generation, continuation, nil)
                return true
            }
            guard registered else { return continuation.resume(returning: true) }
            // Made once the waiter is known, so that its end finds it.
            let timer = Task {
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled else { return }
                self.state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
            }
            let gone = state.withLock { state -> Bool in
                guard state.waiters[id] != nil else { return true }
                state.waiters[id]?.timer = timer
                return false
            }
            if gone { timer.cancel() }
        }
    }

    /// How the last write ended: its path, and what went wrong for one that failed (nil for one
    /// that wrote the file); nil before the first write ended.
    var lastWrite: (path: String, problem: String?)? { state.withLock { $0.lastWrite } }

    /// Waits until every write asked for so far has been done or has failed (each within the
    /// step limit).
    func flush() async {
        while let writer = state.withLock({ $0.writer }) { await writer.value }
    }

    private func writeWaiting() async {
        while let next = state.withLock({ state -> (path: String, bytes: [UInt8], generation: UInt64)? in
            guard let next = state.waiting else {
                state.writer = nil
                return nil
            }
            state.waiting = nil
            return next
        }) {
            var problem: String?
            do {
                try await write(next.bytes, to: next.path)
            } catch {
                problem = error.problem
            }
            let changed = state.withLock { state in
                defer { state.lastWrite = (next.path, problem) }
                return state.lastWrite.map { $0.path != next.path || $0.problem != problem } ?? true
            }
            if changed, let outcomeChanged { await outcomeChanged() }
            if let problem { log.error("sync", "cannot write \(purpose) \(JSONValue.quotedPathForMessage(next.path)): \(problem)") }
            // Told once the outcome is known everywhere (`lastWrite`, the check, the log).
            let done = state.withLock { state in
                state.ended = max(state.ended, next.generation)
                let done = state.waiters.filter { $0.value.generation <= state.ended }
                for id in done.keys { state.waiters[id] = nil }
                return done.values
            }
            for waiter in done {
                waiter.timer?.cancel()
                waiter.continuation.resume(returning: true)
            }
        }
    }

    private func write(_ bytes: [UInt8], to path: String) async throws(FileStep.Failure) {
        let step = FileStep("writing the file", path)
        let (permissions, durable, makesDirectory, marker) = (permissions, durable, makesDirectory, temporaryMarker)
        let cleans = marker != nil && state.withLock { $0.cleaned.insert(path).inserted }
        // A write that fails (its directory not there yet, not mounted) leaves the cleaning to
        // the next one: marked done only once a write got through.
        var wrote = false
        defer { if cleans, !wrote { state.withLock { _ = $0.cleaned.remove(path) } } }
        let removed = try await StepDeadline.run(limit: StepDeadline.stepLimit, first: step, for: "a write of \(purpose)") {
            note throws(FileStep.Failure) -> [String] in
            do throws(Errno) {
                if makesDirectory, let slash = path.lastIndex(of: "/"), slash != path.startIndex {
                    try FileDescriptor.currentWorkingDirectory.makeDirectories(at: String(path[..<slash]), permissions: 0o750)
                }
                let removed = cleans ? Self.removeStaleTemporaryFiles(of: path, marker: marker ?? "") : []
                // A write given up on (its deadline passed) never renames its content into
                // place should its calls return at last: a newer one may have been written.
                try AtomicFile.write(bytes, to: path, permissions: permissions, durable: durable, marker: marker ?? "tmp") {
                    (try? note(FileStep("renaming the file", path))) != nil
                }
                return removed
            } catch {
                throw step.failure("\(error)", errno: error.rawValue)
            }
        }
        wrote = true
        if !removed.isEmpty {
            let files = removed.count == 1 ? "1 temporary file" : "\(removed.count) temporary files"
            let shown = removed.prefix(5).map(\.escapingControlCharacters).joined(separator: ", ")
            let more = removed.count > 5 ? ", and \(removed.count - 5) more" : ""
            log.notice("sync", "\(path.escapingControlCharacters): removed \(files) left by an interrupted write of \(purpose) (\(shown)\(more))")
        }
    }

    /// Removes, beside `path`, the regular files named as `AtomicFile.write` names its temporary
    /// files for `path` with `marker` (and nothing else: no other name, no directory, no link);
    /// returns the names removed, sorted. Whatever cannot be listed or removed stays, silently:
    /// the write that follows says what is wrong with the directory.
    private static func removeStaleTemporaryFiles(of path: String, marker: String) -> [String] {
        let slash = path.lastIndex(of: "/")
        let directoryPath = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard let opened = try? FileDescriptor.currentWorkingDirectory.openDirectory(at: directoryPath),
            let entries = try? opened.descriptor.directoryEntries()
        else { return [] }
        let folder = opened.descriptor
        var removed: [String] = []
        for entry in entries where entry.nameIsExact && AtomicFile.isTemporaryFile(entry.name, of: name, marker: marker) {
            let kind = entry.kind == .unknown ? (try? folder.status(at: entry.name, followSymlinks: false))?.kind : entry.kind
            guard kind == .regular, (try? folder.unlink(at: entry.name)) != nil else { continue }
            removed.append(entry.name)
        }
        return removed.sorted()
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
