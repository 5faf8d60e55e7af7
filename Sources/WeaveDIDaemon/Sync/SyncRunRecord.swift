/// One finished (or skipped) run, as kept in memory, persisted and reported.
public struct SyncRunRecord: Sendable, Equatable, Codable {
    /// `job-N`; empty for a run asked for that never started (`skipped`: one was going).
    public var id: String
    /// For a run asked for that never started, the id of the run that kept it from starting
    /// (the job's, going or waiting for a slot, or a removed job's of that name, stopping);
    /// nil otherwise. Never persisted.
    public var goingRunID: String? = nil
    /// The job's name.
    public var job: String
    /// How it ended.
    public var result: SyncResult
    /// Start and end, seconds since the Unix epoch.
    public var startedAt: Double
    /// See `startedAt`.
    public var endedAt: Double
    /// Seconds it took.
    public var duration: Double
    /// Counts and bytes.
    public var copied: Int, updated: Int, deleted: Int, skipped: Int, bytes: Int
    /// How many items failed, and the first few.
    public var errorCount: Int
    /// See `errorCount`.
    public var errors: [SyncItemError]
    /// One line about the run, kept to `messageByteLimit` bytes.
    public var message: String?

    /// How many failed items a run's record keeps (`failedItems`); `errorCount` counts them all.
    static let failedItemsKept = 20

    /// How many bytes of UTF-8 a run's message keeps (cut at a character, `…` ending it): a
    /// job's message may be of any length, and it is kept in `jobs.json` for every job (and
    /// read back from it, whoever wrote it), in the `ListJobs` reply and in the health check.
    static let messageByteLimit = 4096

    init(id: String, job: String, outcome: SyncOutcome, startedAt: Double, endedAt: Double, duration: Double) {
        self.id = id
        self.job = job
        result = outcome.result
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.duration = duration
        copied = outcome.copied
        updated = outcome.updated
        deleted = outcome.deleted
        skipped = outcome.skipped
        bytes = outcome.bytes
        errorCount = outcome.errorCount
        errors = Array(outcome.errors.prefix(Self.failedItemsKept))
        message = outcome.message.map { SyncItemError.capped($0, to: Self.messageByteLimit) }
    }
}
