/// One finished (or skipped) run, as kept in memory, persisted and reported.
public struct SyncRunRecord: Sendable, Equatable, Codable {
    /// `job-N`.
    public var id: String
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
    /// One line about the run.
    public var message: String?

    /// How many failed items a run's record keeps (`failedItems`); `errorCount` counts them all.
    static let failedItemsKept = 20

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
        message = outcome.message
    }
}
