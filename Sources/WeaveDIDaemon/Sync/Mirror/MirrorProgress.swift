/// How far a run has got: files handled and bytes copied, out of what the walk found so far.
///
/// The totals grow while the engine discovers the tree; they are final in the last report,
/// which every run sends when it ends. Done means done: an entry that failed (a write refused
/// by a full disk, say) is not, so a run with errors, or one cut short, ends short of its
/// totals rather than at 100 %: it counts among the failed. An entry skipped with a warning (a
/// file that changed while being copied) is done, and counted apart (`filesSkipped`): its bytes
/// leave the totals rather than count as done, as nothing of it was copied, so that the last
/// report's bytes are those of the files copied or verified, as the run's summary says.
public struct MirrorProgress: Sendable, Equatable {
    /// Source entries (files, links, special files) done: copied, checked, or skipped with a
    /// warning (a special file, a source entry that changed during the run); not those that
    /// failed.
    public var filesDone: Int
    /// Those of `filesDone` that were skipped with a warning: not in the backup as they are now.
    public var filesSkipped: Int
    /// Source entries (not directories) that failed: an error, in the run's errors (a file that
    /// could not be read or written, a name that is not valid UTF-8); not done.
    public var filesFailed: Int
    /// Source entries found so far.
    public var filesTotal: Int
    /// Bytes of the files to copy or verify that were done: copied or verified (their planned
    /// bytes); not those of files that failed, nor of those skipped.
    public var bytesDone: Int64
    /// Bytes of the files found so far that need copying or verifying, less those of the files
    /// skipped with a warning while being copied (which are not copied in this run).
    public var bytesTotal: Int64

    /// Progress from its counts.
    public init(
        filesDone: Int = 0, filesSkipped: Int = 0, filesFailed: Int = 0, filesTotal: Int = 0, bytesDone: Int64 = 0,
        bytesTotal: Int64 = 0
    ) {
        self.filesDone = filesDone
        self.filesSkipped = filesSkipped
        self.filesFailed = filesFailed
        self.filesTotal = filesTotal
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
    }
}

/// Sends a run's progress to its observer: when work completes, at most once per interval
/// (50 ms).
struct ProgressMeter {
    /// The counts so far.
    private(set) var progress = MirrorProgress()
    private let now: () -> ContinuousClock.Instant
    private var lastReport: ContinuousClock.Instant
    private let interval: Duration

    /// A meter that reports at most once per `interval`, reading the time from `now`; the
    /// interval starts now.
    init(interval: Duration = .milliseconds(50), now: @escaping () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.interval = interval
        self.now = now
        lastReport = now()
    }

    /// Entries found by a scan (and how many of them it settled, of those how many it skipped
    /// with a warning, and how many failed), and the bytes of its jobs.
    mutating func found(files: Int, settled: Int, skipped: Int = 0, failed: Int, bytes: Int64) {
        progress.filesTotal += files
        progress.filesDone += settled
        progress.filesSkipped += skipped
        progress.filesFailed += failed
        progress.bytesTotal += bytes
    }

    /// Entries done by a batch, with their planned bytes; of those, the entries skipped with a
    /// warning, whose planned bytes (`skippedBytes`, not in `bytes`) leave the total; and those
    /// that failed.
    mutating func settled(files: Int, skipped: Int = 0, failed: Int, bytes: Int64, skippedBytes: Int64 = 0) {
        progress.filesDone += files
        progress.filesSkipped += skipped
        progress.filesFailed += failed
        progress.bytesDone += bytes
        progress.bytesTotal -= skippedBytes
    }

    /// Calls `observer` with the counts if the last call (or the meter's start) was at least
    /// one interval ago.
    mutating func tick(_ observer: (MirrorProgress) -> Void) {
        let time = now()
        guard time - lastReport >= interval else { return }
        lastReport = time
        observer(progress)
    }
}
