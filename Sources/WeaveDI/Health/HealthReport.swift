/// One fix attempt (or refusal), as the registry records it.
public struct FixRecord: Sendable, Codable, Equatable {
    /// Who asked for the fix.
    public enum Trigger: String, Sendable, Codable {
        /// The registry, after the check's failure threshold.
        case automatic
        /// Someone, by hand (`UnifiedRegistry.fix(_:)`).
        case manual

        /// Who asked for the fix running in this task (and the tasks it starts); nil outside a
        /// fix. A fix can hold back from what only a person should decide: weavedid's job fix
        /// recreates a missing destination root only when asked by hand.
        @TaskLocal public static var current: Trigger?
    }

    /// How it went.
    public enum Outcome: String, Sendable, Codable, CaseIterable {
        /// The fix ran, did not throw, and its check, run again at once, no longer fails.
        case succeeded
        /// The fix threw (`error` says why), or it returned but its check, run again at once,
        /// still fails (`error` is nil; the message ends with what the check says).
        case failed
        /// The fix ran past the policy's attempt timeout and was cancelled.
        case timedOut
        /// The fix was not run (no fix, attempt limit, a fix that timed out not returned yet,
        /// asked inside a fix of its check, its caller gone while it waited for another).
        case refused
        /// The fix returned, having started a remedy that goes on after it (a long run; see
        /// `FixRecord.remedyInProgress(while:)`), and the check still fails meanwhile: neither
        /// a success nor a failure for the backoff and the breaker, and auto-fix does not run the
        /// fix again while the remedy goes on.
        case inProgress
        /// The fix had nothing to do (it threw `FixNotApplicable`; the message says why): neither
        /// a success nor a failure for the backoff and the breaker, and not counted among the
        /// attempts `maxAttemptsPerWindow` allows. Only a fix asked for by hand is recorded so:
        /// an automatic one with nothing to do is neither recorded, logged nor told to the event
        /// observer (it would be, every round), and the check's `fixHeldBack` says why instead.
        case notApplicable
    }

    /// When it happened, in seconds since the Unix epoch.
    public var time: Double
    /// The check's name.
    public var check: String
    /// Who asked.
    public var trigger: Trigger
    /// How it went.
    public var outcome: Outcome
    /// What the fix said it did, or why it was refused.
    public var message: String
    /// The error, for fixes that threw or timed out; nil for one that returned but left its
    /// check failing (its message says so).
    public var error: String?
    /// How long it ran, in seconds.
    public var duration: Double
}

/// The state of one check in a report.
public struct CheckReport: Sendable, Codable, Equatable {
    /// The check's name.
    public var name: String
    /// Its tags, sorted.
    public var tags: [String]
    /// Its state after thresholds; nil until it first ran.
    public var status: HealthStatus?
    /// The last run's message.
    public var message: String
    /// The last run's data.
    public var data: [String: String]
    /// How long the last run took, in seconds.
    public var duration: Double
    /// When it last ran / last passed / last failed, in seconds since the Unix epoch.
    public var lastRun: Double?
    /// See `lastRun`.
    public var lastSuccess: Double?
    /// See `lastRun`.
    public var lastFailure: Double?
    /// Failing runs in a row.
    public var consecutiveFailures: Int
    /// How many runs of the check started: each once, however many callers shared it (see
    /// `UnifiedRegistry.runChecks(tags:fixing:)`), whoever asked (a round, `runCheck`, a fix's
    /// re-run, the loop); one that then timed out counts too. A caller answered without a run
    /// (while a run that timed out still goes) adds nothing. Kept when the check is registered
    /// again, as its state is; 0 for a check registered after one of its name was removed.
    public var runsStarted: Int
    /// Whether the check offers a fix.
    public var fixable: Bool
    /// How many fixes were tried (automatic and manual).
    public var fixesTried: Int
    /// The last fix tried, if any.
    public var lastFix: FixRecord?
    /// Why auto-fix last held back, if it did (backoff, breaker, limit, a remedy in progress,
    /// a fix that had nothing to do);
    /// nil again once the check is healthy.
    public var fixHeldBack: String?
    /// What the last fix said, while the remedy it started goes on (its outcome is
    /// `inProgress`): auto-fix waits for the remedy to end. Nil once the check has seen it end
    /// (each run of the check asks), or is healthy.
    public var fixInProgress: String?
    /// The fix's circuit breaker.
    public var breaker: BreakerState

    private enum CodingKeys: String, CodingKey {
        case name, tags, status, message, data, duration, lastRun, lastSuccess, lastFailure, consecutiveFailures, runsStarted
        case fixable, fixesTried, lastFix, fixHeldBack, fixInProgress, breaker
    }
}

extension CheckReport {
    /// Decodes a report; one encoded before `runsStarted` was kept counts 0 runs.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        tags = try container.decode([String].self, forKey: .tags)
        status = try container.decodeIfPresent(HealthStatus.self, forKey: .status)
        message = try container.decode(String.self, forKey: .message)
        data = try container.decode([String: String].self, forKey: .data)
        duration = try container.decode(Double.self, forKey: .duration)
        lastRun = try container.decodeIfPresent(Double.self, forKey: .lastRun)
        lastSuccess = try container.decodeIfPresent(Double.self, forKey: .lastSuccess)
        lastFailure = try container.decodeIfPresent(Double.self, forKey: .lastFailure)
        consecutiveFailures = try container.decode(Int.self, forKey: .consecutiveFailures)
        runsStarted = try container.decodeIfPresent(Int.self, forKey: .runsStarted) ?? 0
        fixable = try container.decode(Bool.self, forKey: .fixable)
        fixesTried = try container.decode(Int.self, forKey: .fixesTried)
        lastFix = try container.decodeIfPresent(FixRecord.self, forKey: .lastFix)
        fixHeldBack = try container.decodeIfPresent(String.self, forKey: .fixHeldBack)
        fixInProgress = try container.decodeIfPresent(String.self, forKey: .fixInProgress)
        breaker = try container.decode(BreakerState.self, forKey: .breaker)
    }
}

/// The registry's view of health at one moment.
///
/// The score is the mean of every check's share (healthy 100, degraded 50, unhealthy 0;
/// a check that has not run yet counts as healthy), rounded down; 100 with no checks.
public struct HealthReport: Sendable, Codable, Equatable {
    /// The worst state of any check.
    public var status: HealthStatus
    /// 0 to 100; see the type's documentation.
    public var score: Int
    /// When the report was taken, in seconds since the Unix epoch.
    public var takenAt: Double
    /// Every selected check, in registration order.
    public var checks: [CheckReport]

    init(checks: [CheckReport], takenAt: Double) {
        self.checks = checks
        self.takenAt = takenAt
        status = checks.compactMap(\.status).max() ?? .healthy
        score = checks.isEmpty ? 100 : checks.map { ($0.status ?? .healthy).score }.reduce(0, +) / checks.count
    }
}
