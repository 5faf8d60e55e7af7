import Synchronization

/// The health / auto-fix registry: named checks, run on demand or by a loop, with thresholds
/// against flapping, timeouts against hanging, and fixes run safely (see `AutoFixPolicy`).
///
/// ```swift
/// UnifiedRegistry.shared.register(HealthCheck(name: "disk") { await diskCheck() } fix: { try cleanUp() })
/// let report = await UnifiedRegistry.shared.runChecks()
/// ```
public final class UnifiedRegistry: Sendable {
    /// The process-wide registry the documentation names.
    public static let shared = UnifiedRegistry()

    struct CheckState {
        var check: HealthCheck
        var status: HealthStatus?
        var result: HealthCheckResult?
        var duration: Duration = .zero
        var lastRun: Double?
        var lastSuccess: Double?
        var lastFailure: Double?
        var consecutiveFailures = 0
        var consecutiveSuccesses = 0
        /// The runs of the check started (`CheckReport.runsStarted`).
        var runsStarted = 0
        /// The number (`State.serial`) of the run whose result was recorded last: an older
        /// result is not recorded over a newer one. (Runs of a check go one at a time, so they
        /// return in order; a run that timed out records nothing when it returns at last.)
        var lastRecordedRun: UInt64 = 0
        /// The failing results in a row that rounds which may fix (`runChecks()`, the loop's)
        /// saw: what auto-fix's threshold counts. Runs that only look (`fixing: false`, which
        /// anyone who may connect to weavedid can ask for) and the run after a fix leave it as
        /// it is, so they cannot hurry a fix; a healthy result from any run resets it.
        var fixingRoundFailures = 0
        var fixesTried = 0
        var lastFix: FixRecord?
        var heldBack: String?
        /// The fix running now, or abandoned at its timeout and not returned yet.
        var fixInFlight: FixInFlight?
        var governor = FixGovernor()
        /// The remedy the last fix started, while it goes on (`FixRecord.Outcome.inProgress`).
        var remedy: RemedyInProgress?
    }

    struct RemedyInProgress {
        /// The fix's number (`State.serial`).
        var id: UInt64
        var isGoing: FixAttemptContext.Probe
        /// When the fix returned.
        var since: Duration
        /// What the fix said.
        var message: String
    }

    struct FixInFlight {
        var id: UInt64
        var started: Duration
        /// The fix has returned (the attempt may not have taken its outcome yet).
        var returned = false
        /// The attempt timed out before the fix returned.
        var abandoned = false
    }

    /// A fix by hand waiting for the fix of its check that runs (`State.fixWaiters`).
    struct FixWaiter {
        /// Its call's number (`State.serial`): a caller that goes away takes its own out by it.
        var ticket: UInt64
        var continuation: CheckedContinuation<FixPlan, Never>
        /// The fixes (`FixInFlight.id`) its caller runs inside (`FixAttemptContext.fixIDs`):
        /// none of them goes on while it waits.
        var inside: Set<UInt64> = []
    }

    struct State {
        /// Counts the changes to `checks` and `order` (see `reportChanges`).
        var changes: UInt64 = 0
        var checks: [String: CheckState] = [:] { didSet { changes &+= 1 } }
        var order: [String] = [] { didSet { changes &+= 1 } }
        /// How many registered checks have each tag (`checkTags`, asked on every `GetHealth`
        /// with tags: kept as checks come and go rather than gathered from every check).
        var tagCounts: [String: Int] = [:]
        var history: [FixRecord] = []
        /// Every record `history` was given, by outcome, since the registry was made: the
        /// history keeps only the last `historyLimit`, a counter may not go down.
        var recorded: [FixRecord.Outcome: Int] = [:]
        /// The run of each check that has not returned yet (at most one; see `runOne`), with the
        /// callers it answers. Kept apart from `checks`, which the report describes.
        var runsInFlight: [String: RunInFlight] = [:]
        /// The callers of each check that came while its run went: they share the next run.
        var nextRuns: [String: NextRun] = [:]
        /// The fixes by hand that came while a fix of their check ran, by that fix's number
        /// (`FixInFlight.id`): told how it went as it ends (`FixPlan.ended`). Kept apart from
        /// `checks`, as the runs' callers are: a check removed meanwhile leaves none waiting.
        var fixWaiters: [UInt64: [FixWaiter]] = [:]
        /// Numbers the runs, the fixes and the calls of `fix(_:)` (`FixWaiter.ticket`).
        var serial: UInt64 = 0
        var loop: Task<Void, Never>?
        var autoHealth = true
        var autoFix = true
        var healthLogging = false
        var observer: EventObserver?
        var policy: AutoFixPolicy
    }

    /// How many fix records are kept.
    public static let historyLimit = 500

    /// The registry's time source.
    public let clock: any HealthClock
    let jitter: @Sendable (Duration) -> Duration
    let state: Locked<State>

    /// Creates a registry; tests pass a `ManualHealthClock` and a deterministic `jitter`.
    public init(
        clock: any HealthClock = SystemHealthClock(), policy: AutoFixPolicy = AutoFixPolicy(),
        jitter: @escaping @Sendable (Duration) -> Duration = fullJitter
    ) {
        self.clock = clock
        self.jitter = jitter
        state = Locked(State(policy: policy))
    }

    // MARK: Settings

    /// Whether the loop runs (`WEAVEDI_REGISTRY_AUTO_HEALTH`, default on).
    public var autoHealthEnabled: Bool {
        get { state.withLock { $0.autoHealth } }
        set {
            state.withLock { $0.autoHealth = newValue }
            if !newValue { stop() }
        }
    }

    /// Whether fixes run automatically after a check's failure threshold
    /// (`WEAVEDI_REGISTRY_AUTO_FIX`, default on).
    public var autoFixEnabled: Bool {
        get { state.withLock { $0.autoFix } }
        set { state.withLock { $0.autoFix = newValue } }
    }

    /// Whether health transitions and fixes are logged (`WEAVEDI_REGISTRY_HEALTH_LOGGING`,
    /// default off).
    public var healthLoggingEnabled: Bool {
        get { state.withLock { $0.healthLogging } }
        set { state.withLock { $0.healthLogging = newValue } }
    }

    /// The auto-fix policy.
    public var policy: AutoFixPolicy {
        get { state.withLock { $0.policy } }
        set { state.withLock { $0.policy = newValue } }
    }

    // MARK: Checks

    /// Adds `check`, replacing one of the same name (its history is kept): the replacement is
    /// logged (`.overwrite`, as the container logs a type registered again), naming the check,
    /// since two parts of a program that chose one name would otherwise lose one check without
    /// a word. A value it cannot use is logged as an error naming it, and replaced: a threshold
    /// below 1 by 1, a timeout that is not positive by the default 2 s. A name that is empty,
    /// only white space or has control characters (which `fix(name)` can hardly be given, and
    /// the report shows blank or garbled) is logged and kept.
    public func register(_ check: HealthCheck) {
        register(check, as: .addOrReplaceLogged)
    }

    /// What `register(_:as:)` does with a check of the same name.
    enum Registration {
        /// Replaces it, and logs that (`register(_:)`).
        case addOrReplaceLogged
        /// Replaces it without a word: the caller means to (the built-in checks registered
        /// again with new settings).
        case addOrReplace
        /// Leaves it: only a check of a name not registered is added, in the same step as the
        /// look (the built-in checks `applyFromEnvironment()` offers, which never displace a
        /// program's own, even one registered meanwhile on another thread).
        case addIfAbsent
    }

    /// `register(_:)`, a check of the same name treated as `registration` says.
    func register(_ check: HealthCheck, as registration: Registration) {
        let check = Self.usable(check)
        let replaced: Bool? = state.withLock { state in
            if registration == .addIfAbsent, state.checks[check.name] != nil { return nil }
            for tag in check.tags { state.tagCounts[tag, default: 0] += 1 }
            if let old = state.checks[check.name]?.check {
                state.untag(old)
                state.checks[check.name]!.check = check
                return true
            }
            state.checks[check.name] = CheckState(check: check)
            state.order.append(check.name)
            return false
        }
        if replaced == true, registration == .addOrReplaceLogged {
            WeaveDILog.log(
                .overwrite, subsystem: "health",
                "health check \(JSONValue.quotedForMessage(check.name)) registered again; it replaces the check "
                    + "of that name (its state and fix history are kept)")
        }
    }

    /// `check` with the values the registry cannot use replaced, each logged as an error.
    static func usable(_ check: HealthCheck) -> HealthCheck {
        var check = check
        var problems: [String] = []
        if check.name.isEmpty {
            problems.append("the name is empty; give the check a name, so that the report and fix(name) can tell it apart")
        } else if check.name.unicodeScalars.allSatisfy(\.properties.isWhitespace) {
            problems.append("the name is only white space; give the check a visible name, so that the report and fix(name) can tell it apart")
        }
        if check.name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            problems.append("the name has control characters, which the report and a terminal cannot show as they are; give the check a name without them")
        }
        if check.failureThreshold < 1 {
            problems.append("failureThreshold \(check.failureThreshold) is below 1; using 1")
            check.failureThreshold = 1
        }
        if check.successThreshold < 1 {
            problems.append("successThreshold \(check.successThreshold) is below 1; using 1")
            check.successThreshold = 1
        }
        if check.timeout <= .zero {
            problems.append("timeout \(check.timeout) is not positive; using the default, 2 s")
            check.timeout = .seconds(2)
        }
        for problem in problems {
            WeaveDILog.log(.error, subsystem: "health", "health check \(JSONValue.quotedForMessage(check.name)): \(problem)")
        }
        return check
    }

    /// Removes the check named `name`; returns whether there was one.
    @discardableResult
    public func unregister(_ name: String) -> Bool {
        let (removed, (callers, waiting)): (Bool, ([RunCaller], NextRun?)) = state.withLock { state in
            guard let removed = state.checks.removeValue(forKey: name) else { return (false, ([], nil)) }
            state.untag(removed.check)
            state.order.removeAll { $0 == name }
            // A run of the removed check still going must not hold back a check registered
            // later under the same name (a job removed and added back by reloads); its callers,
            // and those waiting behind it, are answered at once.
            return (true, Self.dropRuns(of: name, in: &state))
        }
        for caller in callers { caller.continuation.resume(returning: .removed) }
        waiting?.cancelTimers()
        return removed
    }

    /// The names of the registered checks, in registration order.
    public var checkNames: [String] { state.withLock { $0.order } }

    /// The tags the registered checks have: a tag not among them selects no check.
    public var checkTags: Set<String> { state.withLock { Set($0.tagCounts.keys) } }

    /// Runs the selected checks (all, or those with any of `tags`) concurrently, updates their
    /// states, runs due fixes when auto-fix is on (and `fixing`, as the loop's rounds are), and
    /// returns the report. A round whose task is cancelled (the loop's, by `stop()`) still
    /// records its checks but starts no fix. `fixing: false` only looks: weavedid answers
    /// `RunChecks`, which anyone who can connect may call, that way. Its results update the
    /// states and the report, but do not count toward auto-fix's failure threshold: only the
    /// failures that rounds with `fixing` saw do, so looking often cannot hurry a fix.
    ///
    /// Callers share runs: one run of a check goes at a time, and a caller that comes while one
    /// goes waits for it to end and shares the next run with every caller that came meanwhile,
    /// so each gets a run that started after it asked (see `runOne`).
    @discardableResult
    public func runChecks(tags: Set<String>? = nil, fixing: Bool = true) async -> HealthReport {
        let selected = state.withLock { state in
            state.order.compactMap { state.checks[$0]?.check }.filter { tags == nil || !$0.tags.isDisjoint(with: tags!) }
        }
        let waitedTooLong = await withTaskGroup(of: (String, RunAnswer).self) { group in
            for check in selected {
                group.addTask { (check.name, await self.runOne(check, fixingRound: fixing)) }
            }
            var answers: [String: (HealthCheckResult, Duration)] = [:]
            for await (name, answer) in group {
                if case let .waitedTooLong(result, waited) = answer { answers[name] = (result, waited) }
            }
            return answers
        }
        if fixing, autoFixEnabled, !Task.isCancelled {
            await withTaskGroup(of: Void.self) { group in
                for check in selected where check.fix != nil {
                    group.addTask { await self.autoFixIfDue(check.name) }
                }
            }
        }
        return report(tags: tags, waitedTooLong: waitedTooLong)
    }

    /// Runs the check named `name` now, only to look (as `runChecks(fixing: false)` runs it:
    /// its result updates its state and the report, but starts no fix and does not count toward
    /// auto-fix's threshold), and returns its report; nil when no check has that name. For a
    /// program that knows what a check looks at has just changed: weavedid runs a job's check
    /// as each run of the job ends, so that its health says how that run went at once.
    @discardableResult
    public func runCheck(_ name: String) async -> CheckReport? {
        guard let check = state.withLock({ $0.checks[name]?.check }) else { return nil }
        var waitedTooLong: [String: (HealthCheckResult, Duration)] = [:]
        if case let .waitedTooLong(result, waited) = await runOne(check, fixingRound: false) { waitedTooLong[name] = (result, waited) }
        return report(waitedTooLong: waitedTooLong).checks.first { $0.name == name }
    }

    /// A count of the changes to the checks `report()` describes (a check registered, removed,
    /// run, fixed, held back): while it stays the same, `report()` describes the same checks
    /// the same way, and only its `takenAt` differs. Read before a `report()`, it says that
    /// report is at least this recent: a server can keep the report's encoding until the
    /// count moves.
    public var reportChanges: UInt64 { state.withLock { $0.changes } }

    /// The last known state of the selected checks, without running them.
    public func report(tags: Set<String>? = nil) -> HealthReport {
        report(tags: tags, waitedTooLong: [:])
    }

    /// `report(tags:)`, with the answers a caller got unrecorded (`RunAnswer.waitedTooLong`)
    /// folded into its checks as a recorded result would be: the caller's report says what it
    /// was answered, not the result of a run older than its call.
    func report(tags: Set<String>? = nil, waitedTooLong: [String: (HealthCheckResult, Duration)]) -> HealthReport {
        let wall = clock.wallTime
        let now = clock.now
        let checks = state.withLock { state in
            state.order.compactMap { state.checks[$0] }
                .filter { tags == nil || !$0.check.tags.isDisjoint(with: tags!) }
                .map { entry in
                    guard let (result, waited) = waitedTooLong[entry.check.name] else { return Self.report(of: entry, at: now, wallNow: wall) }
                    var answered = entry
                    answered.apply(result, duration: waited, at: wall, fixingRound: false)
                    return Self.report(of: answered, at: now, wallNow: wall)
                }
        }
        return HealthReport(checks: checks, takenAt: wall)
    }

    /// Every fix attempt recorded, oldest first (at most `historyLimit`).
    public func fixHistory() -> [FixRecord] {
        state.withLock { $0.history }
    }

    /// How many fix records were recorded, by outcome, since the registry was made: every
    /// record `fixHistory()` was given, those it no longer keeps included (a counter, for a
    /// metric). An outcome never recorded is absent.
    public func fixesRecorded() -> [FixRecord.Outcome: Int] {
        state.withLock { $0.recorded }
    }

    static func report(of entry: CheckState, at now: Duration, wallNow: Double) -> CheckReport {
        CheckReport(
            name: entry.check.name, tags: entry.check.tags.sorted(), status: entry.status,
            message: entry.result?.message ?? "not run yet", data: entry.result?.data ?? [:],
            duration: seconds(entry.duration), lastRun: entry.lastRun, lastSuccess: entry.lastSuccess,
            lastFailure: entry.lastFailure, consecutiveFailures: entry.consecutiveFailures, runsStarted: entry.runsStarted,
            fixable: entry.check.fix != nil, fixesTried: entry.fixesTried, lastFix: entry.lastFix,
            fixHeldBack: entry.heldBack, fixInProgress: entry.remedy?.message,
            breaker: entry.governor.breaker(at: now, wallNow: wallNow))
    }

    // MARK: The loop

    /// Starts running every check each `interval` (unless `WEAVEDI_REGISTRY_AUTO_HEALTH` is off).
    /// Between rounds the loop sleeps; a running loop is replaced. An interval that is not
    /// positive (rounds back to back) is logged as an error, and the default 30 s used instead.
    /// The first round runs at once, or, with `runsFirstRoundNow` false, after one `interval`:
    /// for a program that has just run a round itself (`runChecks()`), as weavedid does before it
    /// says it is ready.
    public func start(interval: Duration = .seconds(30), runsFirstRoundNow: Bool = true) {
        // Off, as the program (or its environment) said: nothing to say.
        guard autoHealthEnabled else { return }
        var interval = interval
        if interval <= .zero {
            WeaveDILog.log(
                .error, subsystem: "health",
                "health loop interval \(interval) is not positive, which would run its rounds back to back; "
                    + "using the default, 30 s (pass a positive interval)")
            interval = .seconds(30)
        }
        let loop = Task { [clock] in
            if !runsFirstRoundNow {
                do { try await clock.sleep(for: interval) } catch { return }
            }
            while !Task.isCancelled {
                await self.runChecks()
                do { try await clock.sleep(for: interval) } catch { return }
            }
        }
        // Cancelled outside the lock: cancelling runs the cancellation handlers of the round's
        // tasks at once, on this thread, and one that takes the lock (a fix's wait) would
        // deadlock on it.
        let old: Task<Void, Never>? = state.withLock { state in
            defer { state.loop = loop }
            return state.loop
        }
        old?.cancel()
    }

    /// Stops the loop. A round in progress records its checks, but starts no fix.
    public func stop() {
        // Cancelled outside the lock, as in `start`.
        let old: Task<Void, Never>? = state.withLock { state in
            defer { state.loop = nil }
            return state.loop
        }
        old?.cancel()
    }

    /// Whether the loop is running.
    public var isRunning: Bool { state.withLock { $0.loop != nil } }
}

extension UnifiedRegistry.State {
    /// Takes the tags of `check`, removed or replaced, out of `tagCounts`.
    mutating func untag(_ check: HealthCheck) {
        for tag in check.tags {
            let count = tagCounts[tag, default: 0] - 1
            tagCounts[tag] = count > 0 ? count : nil
        }
    }
}

extension UnifiedRegistry.CheckState {
    /// Folds one result in, changing state only across the check's thresholds; `fixingRound`
    /// says whether a failure counts toward auto-fix's threshold (`fixingRoundFailures`).
    mutating func apply(_ result: HealthCheckResult, duration: Duration, at wall: Double, fixingRound: Bool) {
        self.result = result
        self.duration = duration
        lastRun = wall
        // No finding yet: the state, and the counts in a row, stay as they were.
        if result.isPending { return }
        if result.status == .healthy {
            consecutiveSuccesses += 1
            consecutiveFailures = 0
            fixingRoundFailures = 0
            lastSuccess = wall
        } else {
            consecutiveFailures += 1
            consecutiveSuccesses = 0
            if fixingRound { fixingRoundFailures += 1 }
            lastFailure = wall
        }
        switch status {
        case nil:
            status = result.status
        case .healthy?:
            if consecutiveFailures >= check.failureThreshold { status = result.status }
        case .some:
            if result.status == .healthy {
                if consecutiveSuccesses >= check.successThreshold { status = .healthy }
            } else if consecutiveFailures >= check.failureThreshold {
                status = result.status
            }
        }
        // Why auto-fix held back is moot once no fix is due: it would linger, stale, otherwise.
        // So are the failed fixes: the problem is gone, and one that comes back starts afresh.
        if status == .healthy {
            heldBack = nil
            remedy = nil
            governor.healed()
        }
    }
}

/// `duration` in seconds, with its fraction.
package func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
