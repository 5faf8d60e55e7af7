/// A named health check, as registered with `UnifiedRegistry`.
public struct HealthCheck: Sendable {
    /// The tags every readiness probe and liveness probe select by.
    public static let liveness = "liveness"
    /// See `liveness`.
    public static let readiness = "readiness"

    /// Unique name; registering a check with the same name replaces it. Must not be empty.
    public var name: String
    /// Tags to select checks by (`liveness`, `readiness`, or your own).
    public var tags: Set<String>
    /// How long one run may take; a run still going then counts as unhealthy
    /// ("timed out after 2 s") and is cancelled; until that run returns, the check is not run
    /// again (each run counts as timed out, unrun). Also how long a caller waits for its answer,
    /// a caller that waited behind a run going included (see `UnifiedRegistry.runChecks`). Must
    /// be positive.
    public var timeout: Duration
    /// How many failing runs in a row (degraded or unhealthy) before the check's state turns
    /// bad, and before auto-fix acts; at least 1.
    public var failureThreshold: Int
    /// How many healthy runs in a row before a bad state turns healthy again; at least 1.
    public var successThreshold: Int
    /// The check itself.
    public var run: @Sendable () async -> HealthCheckResult
    /// What to do when the check fails, if anything can be done: throw when it did not work,
    /// return a line saying what was done, throw `FixNotApplicable` when there is nothing to
    /// do now (see `FixRecord.Outcome.notApplicable`).
    public var fix: (@Sendable () async throws -> String)?

    /// Creates a check. Values the registry cannot use (an empty name, a threshold below 1, a
    /// timeout that is not positive) are not a crash: `UnifiedRegistry.register(_:)` logs an
    /// error naming each and uses 1 for a threshold and the default 2 s for a timeout.
    public init(
        name: String, tags: Set<String> = [HealthCheck.readiness], timeout: Duration = .seconds(2),
        failureThreshold: Int = 1, successThreshold: Int = 1,
        run: @escaping @Sendable () async -> HealthCheckResult,
        fix: (@Sendable () async throws -> String)? = nil
    ) {
        self.name = name
        self.tags = tags
        self.timeout = timeout
        self.failureThreshold = failureThreshold
        self.successThreshold = successThreshold
        self.run = run
        self.fix = fix
    }
}

/// Thrown by a fix that has nothing to do now (what it remedies is not the matter, or only
/// time, a schedule or a person can help): the attempt is `FixRecord.Outcome.notApplicable`,
/// neither a success nor a failure. An automatic attempt so ends silently (no record, no log
/// line, no event; the check's `fixHeldBack` says `reason`), so that a check that stays failing
/// does not log a fix every round; one asked for by hand is recorded with `reason`.
public struct FixNotApplicable: Error, Sendable, CustomStringConvertible {
    /// Why there is nothing to do, in a few words.
    public var reason: String

    /// A fix's "nothing to do", and why.
    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
