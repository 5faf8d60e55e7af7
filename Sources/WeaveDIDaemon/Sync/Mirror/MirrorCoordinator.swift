import Synchronization
import WeaveDI

/// Runs a mirror's work items over a task group, at most `workers` at a time, and keeps the
/// books: which directories still wait for their content, the report, the progress.
///
/// The coordinator is the group's parent task and the only one that touches this state; the
/// workers get immutable items and hand back outcomes. Items wait on a stack, so the walk goes
/// depth first and only the directories on its way are open. A directory's source is closed
/// once its batches are done and its subdirectories opened; the directory is finished (mode,
/// mtime, one fsync) once all its batches and subdirectories are done. Cancellation stops the
/// handing out of items, lets the running ones finish their current file, and leaves the rest;
/// the directories it leaves unfinished get back the modes the run changed to write in them.
/// The report's counts and issues are kept in `tally` as outcomes come in, where the engine
/// reads them when it gives up on the walk without waiting for the coordinator.
struct MirrorCoordinator {
    let context: MirrorContext
    let pool: MirrorWorkerPool
    private var tally: MirrorTally { context.tally }

    private struct DirectoryState {
        let directory: MirrorDirectory
        /// Batches and subdirectories not done yet (a subdirectory is done once finished).
        var pending: Int
        /// Batches not done yet and subdirectories not opened yet: the items that need the
        /// source directory open.
        var sourceUsers: Int
        var modified: Bool
    }

    private struct Books {
        var stack: [MirrorWorkItem] = []
        var directories: [ObjectIdentifier: DirectoryState] = [:]
        var meter = ProgressMeter()
        var rootFailed = false
        var rootDone = false
        var interrupted = false
        var swept = false
    }

    /// Mirrors the tree below `root`; returns the report (without duration) and the last progress.
    func run(_ root: MirrorDirectory, progress: @Sendable (MirrorProgress) -> Void) async -> (MirrorReport, MirrorProgress) {
        var books = Books()
        books.stack.append(.scan(root))
        let workers = context.settings.workers
        await withTaskGroup(of: MirrorWorkOutcome.self) { group in
            var running = 0
            while true {
                while running < workers, !Task.isCancelled, let item = books.stack.popLast() {
                    group.addTask(executorPreference: pool) { [context] in Self.perform(item, context) }
                    running += 1
                }
                guard running > 0, let outcome = await group.next() else { break }
                running -= 1
                apply(outcome, to: &books)
                books.meter.tick(progress)
            }
            // Cut short (cancelled): the directories not finished, the root's among them when
            // it was not scanned, would keep the owner's rwx the run added to write in them.
            var unfinished = books.directories.values.map(\.directory)
            if !books.rootDone && books.directories[ObjectIdentifier(root)] == nil { unfinished.append(root) }
            if !unfinished.isEmpty {
                group.addTask(executorPreference: pool) { [context] in Self.perform(.giveBack(unfinished), context) }
                if let outcome = await group.next() { apply(outcome, to: &books) }
            }
            // The first run after one that never ended: the walk done (it wrote no unfinished
            // copy of its own that is left), the whole destination is looked through for those
            // of that run, also where the walk does not go.
            if context.settings.sweepsLeftovers, books.rootDone, !books.rootFailed, !books.interrupted, !Task.isCancelled {
                group.addTask(executorPreference: pool) { [context] in Self.perform(.sweep(root), context) }
                if let outcome = await group.next() { apply(outcome, to: &books) }
            }
        }
        var report = tally.report
        report.leftoverSweepDone = books.swept
        if books.rootFailed {
            report.result = .failed
        } else if !books.rootDone || books.interrupted {
            report.result = .cancelled
        } else {
            report.result = report.errorCount > 0 ? .partial : .success
        }
        return (report, books.meter.progress)
    }

    /// Does one item; blocking I/O, on a pool thread.
    private static func perform(_ item: MirrorWorkItem, _ context: MirrorContext) -> MirrorWorkOutcome {
        let scanner = DirectoryScanner(context: context)
        switch item {
        case let .scan(directory):
            return .scanned(scanner.scan(directory), parent: nil)
        case let .open(job, parent):
            return .scanned(scanner.open(job, in: parent), parent: parent)
        case let .files(batch):
            return .files(batch.run(context), in: batch.directory)
        case let .finish(directory, modified):
            var report = MirrorReport()
            do {
                _ = try directory.finish(modified: modified, durable: context.settings.durable, report: &report)
            } catch {
                report.fail(directory.reportPath, error.description)
            }
            return .finished(report, directory)
        case let .giveBack(directories):
            var report = MirrorReport()
            for directory in directories { directory.undoMakeWritable(report: &report, settings: context.settings) }
            return .gaveBack(report)
        case let .sweep(root):
            return .swept(LeftoverSweep(context: context).run(root))
        }
    }

    private func apply(_ outcome: MirrorWorkOutcome, to books: inout Books) {
        switch outcome {
        case let .scanned(scan, parent):
            tally.absorb(scan.report)
            if scan.interrupted { books.interrupted = true }
            books.meter.found(
                files: scan.entriesFound, settled: scan.entriesSettled, skipped: scan.entriesSkipped, failed: scan.entriesFailed,
                bytes: scan.jobs.reduce(0) { $0 + $1.plannedBytes })
            if let parent {
                if scan.parentModified { books.directories[ObjectIdentifier(parent)]?.modified = true }
                sourceUserDone(parent, &books)  // the subdirectory is open (or could not be)
            }
            guard let directory = scan.directory, !scan.finished else {
                if parent == nil {
                    books.rootFailed = scan.listingFailed
                    books.rootDone = true
                }
                childDone(parent, &books)
                return
            }
            let batches = FileBatch.split(scan.jobs, in: directory)
            let items = batches.count + scan.subdirectories.count
            books.directories[ObjectIdentifier(directory)] = DirectoryState(
                directory: directory, pending: items, sourceUsers: items, modified: scan.modified)
            for job in scan.subdirectories.reversed() { books.stack.append(.open(job, in: directory)) }
            for batch in batches.reversed() { books.stack.append(.files(batch)) }
        case let .files(batch, directory):
            tally.absorb(batch.report)
            books.meter.settled(
                files: batch.doneFiles, skipped: batch.skippedFiles, failed: batch.failedFiles, bytes: batch.doneBytes,
                skippedBytes: batch.skippedBytes)
            if batch.modified { books.directories[ObjectIdentifier(directory)]?.modified = true }
            if batch.interrupted { books.interrupted = true }
            sourceUserDone(directory, &books)
            childDone(directory, &books)
        case let .finished(report, directory):
            tally.absorb(report)
            books.directories[ObjectIdentifier(directory)] = nil
            if directory.parent == nil { books.rootDone = true }
            childDone(directory.parent, &books)
        case let .gaveBack(report):
            tally.absorb(report)
        case let .swept(report):
            tally.absorb(report)
            books.swept = report.leftoverSweepDone
        }
    }

    /// Counts one item done with `directory`'s source (a batch, a subdirectory opened); closes
    /// the source after the last.
    private func sourceUserDone(_ directory: MirrorDirectory, _ books: inout Books) {
        guard var state = books.directories[ObjectIdentifier(directory)] else { return }
        state.sourceUsers -= 1
        books.directories[ObjectIdentifier(directory)] = state
        if state.sourceUsers == 0 { directory.releaseSource() }
    }

    /// Counts one finished child of `directory`; queues the directory's finish after the last.
    private func childDone(_ directory: MirrorDirectory?, _ books: inout Books) {
        guard let directory, var state = books.directories[ObjectIdentifier(directory)] else { return }
        state.pending -= 1
        books.directories[ObjectIdentifier(directory)] = state
        if state.pending == 0 { books.stack.append(.finish(directory, modified: state.modified)) }
    }
}

/// The counts and issues of a run's walk so far: the coordinator adds each outcome's as it
/// comes in, and a batch each file's as it is done (`handOver`), so that a run given up on
/// while a batch is under way still counts the files that batch put in place. Deletions are
/// counted apart, one by one as each entry goes (`countDeletion`), so that a run given up on
/// in the middle of removing a tree counts what that removal had removed.
final class MirrorTally: Sendable {
    private let current = Locked(MirrorReport())
    /// Entries removed from the destination (`delete`), counted by the remover as it goes:
    /// an atomic add per entry, no lock.
    private let deletions = Atomic<Int>(0)

    /// What the walk has done so far.
    var report: MirrorReport {
        var report = current.withLock { $0 }
        report.deleted += deletions.load(ordering: .relaxed)
        return report
    }

    func absorb(_ part: MirrorReport) {
        current.withLock { $0.absorb(part) }
    }

    /// Adds `part` and empties it: what a work item has done so far, handed over as it goes.
    func handOver(_ part: inout MirrorReport) {
        absorb(part)
        part = MirrorReport()
    }

    /// Counts one entry removed from the destination.
    func countDeletion() {
        deletions.add(1, ordering: .relaxed)
    }
}
