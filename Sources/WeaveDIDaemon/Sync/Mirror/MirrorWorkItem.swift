import WeaveDIPosix

/// One unit of work a run hands to a worker task.
enum MirrorWorkItem: Sendable {
    /// List and compare an open directory pair (the roots).
    case scan(MirrorDirectory)
    /// Open (creating in the destination if needed) a subdirectory, then list and compare it.
    case open(SubdirectoryJob, in: MirrorDirectory)
    /// Copy, verify or fix a few files of one directory, with one fresh `FileCopier`.
    case files(FileBatch)
    /// Set a directory's mode and mtime after its content, and flush it.
    case finish(MirrorDirectory, modified: Bool)
    /// Give the directories a run cut short will not finish the modes it changed to write in
    /// them (`MirrorDirectory.undoMakeWritable`).
    case giveBack([MirrorDirectory])
    /// Look through the whole destination below the root, the walk done, for unfinished copies
    /// of a run that never ended (`LeftoverSweep`).
    case sweep(MirrorDirectory)
}

/// What a finished work item reports back to the coordinator.
enum MirrorWorkOutcome: Sendable {
    /// A directory was scanned, or could not be opened (`directory` is nil then).
    case scanned(ScanOutcome, parent: MirrorDirectory?)
    /// A batch of files was handled.
    case files(BatchOutcome, in: MirrorDirectory)
    /// A directory was finished.
    case finished(MirrorReport, MirrorDirectory)
    /// Unfinished directories were given their modes back.
    case gaveBack(MirrorReport)
    /// The destination was looked through for unfinished copies (`leftoverSweepDone`: all of it).
    case swept(MirrorReport)
}

/// A subdirectory found in the source, and what the destination has under its name.
struct SubdirectoryJob: Sendable {
    let name: String
    /// The kind of the destination entry of that name, nil when there is none.
    let destinationKind: FileKind?
}

/// The result of scanning one directory.
struct ScanOutcome: Sendable {
    /// The directory pair, nil when it could not be opened.
    var directory: MirrorDirectory?
    /// Files and links that need work.
    var jobs: [FileJob] = []
    /// Subdirectories to open next.
    var subdirectories: [SubdirectoryJob] = []
    /// Counts (unchanged, skipped, deleted) and failures found while scanning.
    var report = MirrorReport()
    /// Source entries found (not directories), and how many of them the scan already settled
    /// (done: one that failed, an error, is not, and so the progress does not count it), and
    /// how many failed (an error, not a warning).
    var entriesFound = 0
    var entriesSettled = 0
    var entriesFailed = 0
    /// Of `entriesSettled`, those skipped with a warning (special files, entries that vanished).
    var entriesSkipped = 0
    /// Whether the scan changed the parent's destination directory (created this one in it).
    var parentModified = false
    /// Whether the scan changed this destination directory (removed leftovers or extras).
    var modified = false
    /// Whether the scan also finished the directory (nothing left to do in it).
    var finished = false
    /// Whether the source or destination listing failed: for the roots, the run fails.
    var listingFailed = false
    /// Whether the run's cancellation (or its being given up on) stopped the scan part way,
    /// a removal included: the run ends `cancelled`.
    var interrupted = false
}

/// The result of one batch of files.
struct BatchOutcome: Sendable {
    var report = MirrorReport()
    /// Jobs done, and their planned bytes, for progress: a job that failed (an error, not a
    /// warning) is handled but not done.
    var doneFiles = 0
    var doneBytes: Int64 = 0
    /// Of `doneFiles`, those skipped with a warning (a source that changed under the run), and
    /// their planned bytes (not in `doneBytes`).
    var skippedFiles = 0
    var skippedBytes: Int64 = 0
    /// Jobs that failed (an error, not a warning).
    var failedFiles = 0
    /// Whether anything was renamed into or changed in the destination directory.
    var modified = false
    /// Whether cancellation stopped the batch before its last job.
    var interrupted = false
}
