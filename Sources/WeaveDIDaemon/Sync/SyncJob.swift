import WeaveDI

/// A kind of work the daemon runs on a schedule. `mirror` is the only kind weavedid has;
/// `SyncJobKinds.register` adds one inside this package (`WeaveDIDaemon` is no library product,
/// and a job's configuration has only the mirror's fields: see the README's "Scheduling").
///
/// A run is given its own WeaveDI session (`context.session`, also current inside `run`), so a
/// job's session-scoped services live exactly as long as the run. A run stops at a safe point
/// when its task is cancelled and reports `.cancelled`.
public protocol SyncJob: Sendable {
    /// Does one run.
    func run(_ context: SyncRunContext) async -> SyncOutcome

    /// Prepares a retry after failures (the job's health-check fix calls it): for example,
    /// recreates a missing destination root. Returns what it did, or nil if nothing. One that
    /// finds that only a person can help, in an automatic fix (`FixRecord.Trigger.current`),
    /// throws `FixNotApplicable` with why: the fix then has nothing to do, and starts no run.
    func prepareForRetry() async throws -> String?
}

extension SyncJob {
    /// Nothing to prepare by default.
    public func prepareForRetry() async throws -> String? { nil }
}

/// What a run is given.
public struct SyncRunContext: Sendable {
    /// The run's identifier, unique in this daemon's life (`docs-17`).
    public let runID: String
    /// The job's name.
    public let job: String
    /// The run's WeaveDI session.
    public let session: Session
    /// The daemon's logger.
    public let log: DaemonLog
    /// The files the job's runs before skipped as changed while being copied, each with how
    /// many runs in a row did (a copying job kind turns such a skip into an error after a few:
    /// `ChangingFiles`); empty for a job new, changed in its roots, or whose last runs skipped
    /// none so.
    public var changingFiles: [String: Int] = [:]
    /// Reports progress (files and bytes done / total).
    public let progress: @Sendable (SyncProgress) -> Void
    /// The file systems the job's runs found mounted below its source, as the last run that
    /// looked left them (`SyncOutcome.sourceMounts`, kept in `jobs.json`); nil for none.
    public internal(set) var sourceMounts: SyncSourceMounts? = nil
    /// Whether a run of the job never ended (the daemon was killed, crashed, lost the power)
    /// and no run since has done what that calls for (a mirror: remove the unfinished copies
    /// it left where the walk does not go); the run says whether it did (`SyncOutcome.cleanupDue`).
    public internal(set) var cleanupDue = false
}

/// The file systems mounted below a job's source that its runs found (paths relative to
/// `source`), remembered from run to run so that one not mounted at a later run (an empty
/// directory) is not taken for a part of the source that was emptied.
public struct SyncSourceMounts: Sendable, Equatable {
    /// The source they were found below, as configured: for another source they mean nothing.
    public var source: String
    /// The mount points, relative to `source`.
    public var paths: [String]

    /// Mount points `paths` below `source`.
    public init(source: String, paths: [String]) {
        self.source = source
        self.paths = paths
    }
}

/// How far a run has got.
public struct SyncProgress: Sendable, Equatable {
    /// Files done, of those skipped with a warning (not copied), failed (errors of the run: not
    /// done) and to do.
    public var filesDone = 0, filesSkipped = 0, filesFailed = 0, filesTotal = 0
    /// Bytes done and to do (a skipped file's bytes are in neither: `MirrorProgress`).
    public var bytesDone = 0, bytesTotal = 0

    /// A progress value.
    public init(
        filesDone: Int = 0, filesSkipped: Int = 0, filesFailed: Int = 0, filesTotal: Int = 0, bytesDone: Int = 0,
        bytesTotal: Int = 0
    ) {
        self.filesDone = filesDone
        self.filesSkipped = filesSkipped
        self.filesFailed = filesFailed
        self.filesTotal = filesTotal
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
    }
}

/// How a run ended.
public enum SyncResult: String, Sendable, Codable, CaseIterable {
    /// Everything done.
    case success
    /// Done, but some items failed (listed in the errors).
    case partial
    /// Nothing useful done (the source is missing, the destination refused, ...).
    case failed
    /// Stopped at a safe point (shutdown, a fix, by hand).
    case cancelled
    /// Not run, because the previous run of the job was still going.
    case skipped
}

/// One item a run could not handle.
public struct SyncItemError: Sendable, Equatable, Codable {
    /// The item's path, relative to the job's root.
    public var path: String
    /// Why.
    public var reason: String

    /// An item error; its path and reason kept to `byteLimit` bytes each.
    public init(path: String, reason: String) {
        self.path = Self.capped(path)
        self.reason = Self.capped(reason)
    }

    /// How many bytes of UTF-8 a path or a reason keeps: a path may be 4 KiB and a reason
    /// repeats it, and a run keeps 20 of them in `jobs.json` (for every job, and for 100 removed
    /// ones), which is not read past 16 MiB, and in the `ListJobs` reply.
    static let byteLimit = 1024

    /// `text` cut, at a character, to `limit` bytes with `…` ending it.
    static func capped(_ text: String, to limit: Int = byteLimit) -> String {
        guard text.utf8.count > limit else { return text }
        var kept = ""
        var bytes = 0
        for character in text {
            bytes += character.utf8.count
            if bytes > limit - 3 { break }  // `…` takes 3
            kept.append(character)
        }
        return kept + "…"
    }
}

/// What a job's run reports.
public struct SyncOutcome: Sendable, Equatable {
    /// How it ended.
    public var result: SyncResult
    /// Items created, updated, deleted and skipped.
    public var copied = 0, updated = 0, deleted = 0, skipped = 0
    /// Bytes written.
    public var bytes = 0
    /// Items that failed (the first ones; `errorCount` counts them all).
    public var errors: [SyncItemError] = []
    /// How many items failed.
    public var errorCount = 0
    /// One line about the run (why it failed, what was skipped).
    public var message: String?
    /// What the job remembers of the file systems mounted below its source after this run
    /// (`SyncRunContext.sourceMounts`); nil keeps what it remembered (a run that did not look).
    public var sourceMounts: SyncSourceMounts?
    /// Whether what a run that never ended calls for (`SyncRunContext.cleanupDue`) is still
    /// to do after this run: the next run is asked again. False by default: a kind that has
    /// nothing to do for it is done.
    public var cleanupDue = false
    /// The paths this run skipped because they changed while being copied, for the job's
    /// memory of them (`SyncRunContext.changingFiles`); nil when the run did not go through its
    /// tree (failed, cancelled) or its kind keeps no such memory: the memory stays as it was.
    public var changedWhileCopying: [String]?

    /// An outcome.
    public init(result: SyncResult, message: String? = nil) {
        self.result = result
        self.message = message
    }
}
