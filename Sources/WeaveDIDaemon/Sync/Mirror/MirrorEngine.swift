import WeaveDI
import WeaveDIPosix

/// Mirrors a source directory into a destination, one way: the file-level core of the
/// daemon's `mirror` sync jobs.
///
/// ```swift
/// let container = WeaveDI.Container()
/// container.register(FileCopier.self, scope: .transient) { FileCopier() }
/// container.register(FileHasher.self, scope: .transient) { FileHasher() }
/// let engine = MirrorEngine(settings: MirrorSettings(source: "/srv/docs", destination: "/backup/docs"),
///                           container: container)
/// let report = await engine.run { progress in print(progress.filesDone, "/", progress.filesTotal) }
/// ```
///
/// New and changed files are copied (changed: size or mtime differ, or content with
/// `compare: .checksum`), each through a temporary file that is flushed and renamed into place,
/// so no final name ever holds a torn file; links are recreated as links; special files are
/// skipped with a warning; with `delete`, what the source no longer has is removed. Mode and
/// mtime are kept, for directories too. A failing entry is reported and the run goes on
/// (`partial`); the run fails only when a root is unusable or the roots overlap. The roots are
/// resolved, checked and opened on threads of their own, each step within 5 s (`MirrorRoots`,
/// `StepDeadline`): a root that does not answer fails the run (another job's root that does
/// not answer is left out of the overlap check, in the report's `unchecked`). Per-file work runs on `workers`
/// threads of its own, in tasks that each take a fresh `FileCopier` (and `FileHasher`) from the
/// container. A worker whose step on the file system does not move on within its limit (5 s,
/// more for steps that move data or flush) fails the run, naming its path; its thread is left
/// behind (`WalkWatch`). Cancelling the calling task stops the run between files (and between
/// the entries of a directory it scans or of a tree `delete` removes); a worker whose step does not move on within 2 s of
/// it is not waited for.
public struct MirrorEngine: Sendable {
    /// What the engine mirrors, and how.
    public let settings: MirrorSettings
    /// Where the workers come from: `FileCopier` (and `FileHasher` for checksums), as transients.
    public let container: WeaveDI.Container

    /// An engine for `settings` whose workers come from `container`.
    public init(settings: MirrorSettings, container: WeaveDI.Container = .live) {
        self.settings = settings
        self.container = container
    }

    /// Runs the mirror once; `progress` hears how far it got, as work completes (at most every
    /// 50 ms) and once at the end. Never throws: problems are in the report.
    public func run(progress: @escaping @Sendable (MirrorProgress) -> Void = { _ in }) async -> MirrorReport {
        let clock = ContinuousClock()
        let start = clock.now
        var (report, last) = await mirror(progress: progress)
        // What an earlier run's start could not give back after the run stopped waiting for it.
        MirrorLateGiveBacks.report(for: settings, into: &report)
        report.duration = clock.now - start
        progress(last)
        return report
    }

    private func mirror(progress: @escaping @Sendable (MirrorProgress) -> Void) async -> (MirrorReport, MirrorProgress) {
        var failed = MirrorReport()
        failed.result = .failed
        for (type, needed) in [(String(describing: FileCopier.self), container.isRegistered(FileCopier.self)),
                               (String(describing: FileHasher.self),
                                settings.compare != .checksum || container.isRegistered(FileHasher.self))]
        where !needed {
            failed.fail(settings.destination, "no \(type) is registered in the container (register it as a transient)")
            return (failed, MirrorProgress())
        }
        let roots: MirrorRoots
        do {
            roots = try await MirrorRoots.open(settings)
        } catch {
            // What the start did besides (a root's mode given back), after why it stopped.
            var stopped = error.aside
            // Cancelled while a root did not answer: the run stops, as it would between files.
            if Task.isCancelled {
                stopped.result = .cancelled
            } else {
                stopped.result = .failed
                stopped.failFirst(error.path, error.reason)
            }
            return (stopped, MirrorProgress())
        }
        let (unchecked, destinationIsMountRoot) = (roots.unchecked, roots.destinationIsMountRoot)
        var (report, last) = await walk(roots, progress: progress)
        // What the walk found of the file systems mounted below the source, and what it found
        // gone: only what it saw changes what is remembered.
        let mounts = SourceMounts.merge(remembered: settings.sourceMounts, found: report.mountsFound, forgotten: report.mountsForgotten)
        report.sourceMounts = mounts.kept
        report.sourceMountsNotKept = mounts.notKept
        report.unchecked = unchecked
        report.destinationIsMountRoot = destinationIsMountRoot
        return (report, last)
    }

    /// Mirrors the tree under the opened `roots`.
    private func walk(
        _ roots: consuming MirrorRoots, progress: @escaping @Sendable (MirrorProgress) -> Void
    ) async -> (MirrorReport, MirrorProgress) {
        var failed = MirrorReport()
        failed.result = .failed
        let watch = WalkWatch(source: settings.source, destination: settings.destination)
        let pool: MirrorWorkerPool
        do {
            pool = try MirrorWorkerPool(threads: settings.workers, watch: watch)
        } catch {
            failed.fail(settings.destination, "cannot start worker threads: \(error)")
            roots.giveBackDestinationMode(settings.destination, into: &failed)
            return (failed, MirrorProgress())
        }
        let answer = FirstAnswer<Ending>()
        do {
            try watch.start { answer.give(.verdict($0)) }
        } catch {
            pool.shutdown()
            failed.fail(settings.destination, "cannot start worker threads: \(error)")
            roots.giveBackDestinationMode(settings.destination, into: &failed)
            return (failed, MirrorProgress())
        }
        let tally = MirrorTally()
        let context = MirrorContext(settings: settings, container: container, roots: roots, tally: tally)
        let root = MirrorDirectory(
            name: "", source: roots.source, sourceStatus: roots.sourceStatus, destination: roots.destination,
            destinationStatus: roots.destinationStatus, madeWritable: roots.destinationMadeWritable,
            isPrivileged: context.isPrivileged, parent: nil, mounts: SourceMounts.Node.tree(settings.sourceMounts))
        let relay = ProgressRelay(progress)
        // Not a child task: a run given up on (`WalkWatch`) must end while a worker task of the
        // coordinator's group is still stuck in a call, which a child could not.
        let coordinator = Task {
            let (report, last) = await MirrorCoordinator(context: context, pool: pool).run(root, progress: relay.send)
            answer.give(.finished(report, last))
        }
        let ending = await withTaskCancellationHandler {
            await withCheckedContinuation { answer.wait($0) }
        } onCancel: {
            coordinator.cancel()
            watch.cancel()
        }
        switch ending {
        case let .finished(report, last):
            _ = relay.close()
            pool.shutdown()
            return (report, last)
        case let .verdict(verdict):
            // The coordinator stops handing out work; its workers stop between files, and the
            // stuck one when its call returns, if ever: nothing waits for them.
            coordinator.cancel()
            let last = relay.close()
            pool.abandon()
            // What the walk did until then counts: the files copied are in the destination.
            var report = tally.report
            switch verdict {
            case let .failed(path, reason):
                report.result = .failed
                report.failFirst(path, reason)
            case .abandoned:
                report.result = .cancelled
            }
            return (report, last)
        }
    }

    /// How the wait for a run's walk ended.
    private enum Ending: Sendable {
        /// The coordinator finished (also when cancelled, its workers stopped at a safe point).
        case finished(MirrorReport, MirrorProgress)
        /// The walk's watch gave up on a worker (`WalkWatch`).
        case verdict(WalkVerdict)
    }
}

/// Hands the coordinator's progress to the caller's closure while the caller waits for the run;
/// a coordinator that outlives its run (stuck) reports to nobody.
private final class ProgressRelay: Sendable {
    private let state: Locked<(forward: (@Sendable (MirrorProgress) -> Void)?, last: MirrorProgress)>

    init(_ forward: @escaping @Sendable (MirrorProgress) -> Void) {
        state = Locked((forward, MirrorProgress()))
    }

    func send(_ progress: MirrorProgress) {
        state.withLock { state in
            state.last = progress
            state.forward?(progress)
        }
    }

    /// Stops forwarding; returns the last progress sent.
    func close() -> MirrorProgress {
        state.withLock { state in
            state.forward = nil
            return state.last
        }
    }
}
