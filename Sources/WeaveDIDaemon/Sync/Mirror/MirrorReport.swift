import WeaveDI
import WeaveDIPosix

/// The outcome of one `MirrorEngine` run: what it did, what went wrong, and how long it took.
public struct MirrorReport: Sendable, Equatable {
    /// How a run ended.
    public enum Result: String, Sendable, Equatable {
        /// Everything was mirrored (warnings, such as skipped special files, allowed).
        case success
        /// The run went through the tree, but some entries failed; see `errors`.
        case partial
        /// The run stopped: a root is missing, unreadable, or the roots overlap (nothing was
        /// mirrored), or a step on the file system did not answer in time (the counts say what
        /// the walk had done until then, file by file and deletion by deletion; the first
        /// error says where it stopped).
        case failed
        /// Task cancellation stopped the run between files; the destination holds whole files only.
        case cancelled
    }

    /// At most this many entries are kept in `errors` and in `warnings`; the counts stay exact.
    public static let issueLimit = 1000

    /// How the run ended.
    public var result: Result = .success
    /// New files and links created in the destination.
    public var copied = 0
    /// Destination files and links replaced with new content, or whose mode or mtime was corrected.
    public var updated = 0
    /// Entries removed from the destination because the source no longer has them; a removed
    /// directory counts once for itself and once for each entry inside it.
    public var deleted = 0
    /// Source entries not mirrored on purpose: special files (fifos, sockets, devices) and
    /// unfinished temporary files of another mirror; and those that vanished from the source, or
    /// changed while being copied, during the run (`fail(_:_:)` with a `MirrorFailure`); each has
    /// a warning.
    public var skipped = 0
    /// Files and links that were already up to date.
    public var unchanged = 0
    /// Unfinished copies (`.weavedi-tmp.*`) left in the destination by an interrupted run, and
    /// removed by this one; not counted in `deleted`.
    public var leftoversRemoved = 0
    /// Bytes written into destination files.
    public var bytes: Int64 = 0
    /// The first `issueLimit` per-entry failures, with their paths relative to the roots.
    public var errors: [MirrorIssue] = []
    /// How many failures there were in all.
    public var errorCount = 0
    /// The first `issueLimit` failures to give back a mode the run changed to do its work
    /// (`failToGiveBack`), each also among `errors` while there is room: a directory left open
    /// to its owner, which the operator must give its mode back by hand (the reason says the
    /// `chmod`). Kept apart so that each reaches the log however many other errors the run has.
    public var modesNotGivenBack: [MirrorIssue] = []
    /// The first `issueLimit` warnings (skipped entries).
    public var warnings: [MirrorIssue] = []
    /// The paths of the first `issueLimit` files skipped because they changed while being
    /// copied (each also among `warnings` while there is room): a job counts the runs in a row
    /// that skip a path so (`ChangingFiles`).
    public var changedWhileCopying: [String] = []
    /// Those of `changedWhileCopying` the destination has no earlier copy of: the backup has
    /// none of them at all.
    public var changedWithNoCopy: Set<String> = []
    /// Copies given the source's mode without its set-user-ID or set-group-ID bits, which this
    /// process may not set (`SetIDBits`: systemd's `RestrictSUIDSGID=yes`); counted on every
    /// run that finds them so, made or found.
    public var setIDBitsNotKept = 0
    /// The path of the first of them.
    public var firstSetIDBitsNotKept: String?
    /// The other jobs' roots that did not answer as the run started, left out of its overlap
    /// check (`MirrorRoots.open`).
    public var unchecked: [MirrorIssue] = []
    /// Whether the destination root was the root of a mount as the run started (`statx`'s
    /// `STATX_ATTR_MOUNT_ROOT`); nil when the run did not get that far, or the kernel did not say.
    public var destinationIsMountRoot: Bool?
    /// The mount points below the source root to remember for the next run (`SourceMounts`):
    /// those this run found, and those remembered before (`MirrorSettings.sourceMounts`) that it
    /// found no sign against (still unmounted, below a directory it could not read, or not
    /// reached); sorted, at most `SourceMounts.maximumCount`. nil when the run did not walk
    /// the tree (its roots failed): what was remembered stays.
    public var sourceMounts: [String]?
    /// The mount points left out of `sourceMounts` by its limits (past the 64th by path, or a
    /// path longer than 1024 bytes): not remembered, so not guarded.
    public var sourceMountsNotKept: [String] = []
    /// Whether the run went through every destination directory looking for unfinished copies
    /// (`MirrorSettings.sweepsLeftovers`) without an error; false when it was not asked to, or
    /// stopped or failed before it was done.
    public var leftoverSweepDone = false
    /// The mount points below the source the walk found, and the remembered paths it found a
    /// plain directory (or, ending in `/`, gone with everything below): `SourceMounts.merge`.
    var mountsFound: [String] = []
    var mountsForgotten: [String] = []
    /// How long the run took.
    public var duration: Duration = .zero
    /// How the copies were made durable: `syncfs` calls, one per batch of copies, `fsync`s of
    /// single copies, and flushes of a batch's links where there is no batch flush (for tests
    /// and profiling; not in the job's reply).
    var fileSystemFlushes = 0
    var fileFlushes = 0
    var linkFlushes = 0

    /// An empty report (a successful run with nothing to do).
    public init() {}

    /// Records a failure.
    mutating func fail(_ path: String, _ reason: String) {
        errorCount += 1
        if errors.count < MirrorReport.issueLimit { errors.append(MirrorIssue(path: path, reason: reason)) }
    }

    /// Records the failure that ended the run, ahead of the entries' failures (a failed run's
    /// message is its first error).
    mutating func failFirst(_ path: String, _ reason: String) {
        errorCount += 1
        errors.insert(MirrorIssue(path: path, reason: reason), at: 0)
        if errors.count > MirrorReport.issueLimit { errors.removeLast() }
    }

    /// Records a destination directory (or file) whose mode the run changed to do its work and
    /// could not give back: at `path` (relative to the roots, or a root's configured path), the
    /// mode `found` it is to have again, what the run did (`after`: `made it writable to remove
    /// its entries`; `run`, which run did it), why not (`error`), and the `chmod` that gives it
    /// back by hand, with its whole path `fullPath` as one shell word (`shellWord`: a space, a
    /// `;` or a `$(…)` in it neither breaks the command nor runs when pasted). It would
    /// otherwise stay open to its owner, unsaid.
    mutating func failToGiveBack(
        _ path: String, _ found: FilePermissions, after change: String, by run: String = "the run", _ error: String,
        fullPath: String, subject: String = "its mode"
    ) {
        let issue = MirrorIssue(
            path: path,
            reason: "\(subject), \(found), could not be given back after \(run) \(change): \(error); "
                + "give it back by hand: chmod \(found) \(fullPath.shellWord)")
        fail(issue.path, issue.reason)
        if modesNotGivenBack.count < MirrorReport.issueLimit { modesNotGivenBack.append(issue) }
    }

    /// Records that the entry at `path` could not be mirrored because of `failure`. One that
    /// only says the source is busy, the source's entry gone (`vanished`) or changed while being
    /// copied (`changedWhileCopying`: the previous copy kept, or, for a file the destination has
    /// no copy of yet, none, which its warning says), is a warning and counts as skipped, not as
    /// an error: a source in use (logs rotated, files written) would make every run partial,
    /// never a success, and the job would turn unhealthy. The next run mirrors what is there
    /// then; a file skipped so in several runs in a row becomes an error (`changedTooOften`). An entry gone from the destination (`vanishedFromDestination`: something
    /// else changes the backup) is an error, as any other: the source's entry is not in the backup.
    mutating func fail(_ path: String, _ failure: MirrorFailure) {
        switch failure {
        case .vanished, .changedWhileCopying:
            skip(path, failure.description + " (the source changed during the run; not an error)")
            if case let .changedWhileCopying(copyKept) = failure, changedWhileCopying.count < MirrorReport.issueLimit {
                changedWhileCopying.append(path)
                if !copyKept { changedWithNoCopy.insert(path) }
            }
        default: fail(path, failure.description)
        }
    }

    /// `fail(path, failure)`; whether it was recorded as an error (not a warning: the entry
    /// then counts as done in the run's progress).
    mutating func failIsError(_ path: String, _ failure: MirrorFailure) -> Bool {
        let errors = errorCount
        fail(path, failure)
        return errorCount > errors
    }

    /// Makes the skip of `path` as changed while being copied an error of the run, for `reason`
    /// (`ChangingFiles`: it changed so in several runs in a row); a successful run turns
    /// partial.
    /// `path` is one of `changedWhileCopying`, so it was skipped; its warning may not have been
    /// kept (past `issueLimit` warnings), and the skip is turned into an error all the same.
    mutating func changedTooOften(_ path: String, _ reason: String) {
        if let index = warnings.firstIndex(where: { $0.path == path && $0.reason.hasPrefix(MirrorFailure.changedWhileCopyingPhrase) }) {
            warnings.remove(at: index)
        }
        skipped = max(0, skipped - 1)
        fail(path, reason)
        if result == .success { result = .partial }
    }

    /// Records a skipped entry with its warning.
    mutating func skip(_ path: String, _ reason: String) {
        skipped += 1
        if warnings.count < MirrorReport.issueLimit { warnings.append(MirrorIssue(path: path, reason: reason)) }
    }

    /// Records a copy that did not get the set-ID bits of the source's mode (`SetIDBits`).
    mutating func noteSetIDBitsNotKept(_ path: String) {
        setIDBitsNotKept += 1
        if firstSetIDBitsNotKept == nil { firstSetIDBitsNotKept = path }
    }

    /// Adds the counts and issues of `other` (a part of the same run) to this report.
    mutating func absorb(_ other: MirrorReport) {
        copied += other.copied
        updated += other.updated
        deleted += other.deleted
        unchanged += other.unchanged
        leftoversRemoved += other.leftoversRemoved
        bytes += other.bytes
        fileSystemFlushes += other.fileSystemFlushes
        fileFlushes += other.fileFlushes
        linkFlushes += other.linkFlushes
        errorCount += other.errorCount
        errors.append(contentsOf: other.errors.prefix(MirrorReport.issueLimit - errors.count))
        modesNotGivenBack.append(contentsOf: other.modesNotGivenBack.prefix(MirrorReport.issueLimit - modesNotGivenBack.count))
        skipped += other.skipped
        setIDBitsNotKept += other.setIDBitsNotKept
        if firstSetIDBitsNotKept == nil { firstSetIDBitsNotKept = other.firstSetIDBitsNotKept }
        warnings.append(contentsOf: other.warnings.prefix(MirrorReport.issueLimit - warnings.count))
        mountsFound += other.mountsFound
        mountsForgotten += other.mountsForgotten
        let changing = other.changedWhileCopying.prefix(MirrorReport.issueLimit - changedWhileCopying.count)
        changedWhileCopying.append(contentsOf: changing)
        changedWithNoCopy.formUnion(changing.filter { other.changedWithNoCopy.contains($0) })
    }
}

/// One entry that failed or was skipped, and why.
public struct MirrorIssue: Sendable, Hashable, CustomStringConvertible {
    /// The entry's path relative to the roots (`docs/a.txt`); for a problem with a root itself,
    /// that root's configured path.
    public var path: String
    /// What happened, such as `open: Permission denied (EACCES)` or `changed while being copied`.
    public var reason: String

    /// An issue from its parts.
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    /// `path: reason`, as they are (for tests and debugging; what an operator sees is `quoted`).
    public var description: String { "\(path): \(reason)" }

    /// `"path": reason`, the path quoted (`JSONValue.quotedPathForMessage`), as a run's message
    /// and the log show it: a name met in a tree may hold anything but `/` and NUL, a newline,
    /// an escape sequence or a bidirectional control among them, and would otherwise forge or
    /// disguise what follows (`"docs/a\nb.txt": open: Permission denied (EACCES)`). The reason
    /// does not repeat the path.
    public var quoted: String { "\(JSONValue.quotedPathForMessage(path)): \(reason)" }
}
