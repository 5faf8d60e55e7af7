import Foundation
import Synchronization
import TestSupport
import Testing
@testable import WeaveDI

/// A scripted sequence of results, one per run (the last repeats).
final class Script: Sendable {
    private let results: Locked<[HealthCheckResult]>
    init(_ statuses: [HealthStatus]) {
        results = Locked(statuses.map { HealthCheckResult(status: $0, message: $0.rawValue) })
    }
    func next() -> HealthCheckResult {
        results.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
    }
}

/// A fix whose outcome the test sets, counting its runs.
final class ScriptedFix: Sendable {
    private let state = Locked((runs: 0, succeeds: false))
    var runs: Int { state.withLock { $0.runs } }
    func succeed(_ value: Bool) { state.withLock { $0.succeeds = value } }
    func run() throws -> String {
        let succeeds = state.withLock { state -> Bool in
            state.runs += 1
            return state.succeeds
        }
        guard succeeds else { throw FixError() }
        return "fixed"
    }
    struct FixError: Error, CustomStringConvertible { var description: String { "still broken" } }
}

/// Parks callers forever, ignoring cancellation: a check that truly hangs.
final class Hang: Sendable {
    private let parked = Locked<[CheckedContinuation<Void, Never>]>([])
    func forever() async {
        await withCheckedContinuation { continuation in parked.withLock { $0.append(continuation) } }
    }
    deinit { parked.withLock { $0.forEach { $0.resume() } } }
}

func waitForSleepers(_ clock: ManualHealthClock, _ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    try #require(await eventually { clock.sleeperCount >= count }, "\(clock.sleeperCount) sleepers, not \(count)", sourceLocation: sourceLocation)
}

/// Parks callers, ignoring cancellation, until opened; lets everyone through after that.
final class Gate: Sendable {
    private let state = Locked((open: false, parked: [CheckedContinuation<Void, Never>]()))
    var waiting: Int { state.withLock { $0.parked.count } }
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let pass = state.withLock { state -> Bool in
                if state.open { return true }
                state.parked.append(continuation)
                return false
            }
            if pass { continuation.resume() }
        }
    }
    func open() {
        let parked = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.parked = [] }
            return state.parked
        }
        parked.forEach { $0.resume() }
    }
}

/// A `ManualHealthClock` that notes every sleep asked of it.
final class RecordingClock: HealthClock {
    let base = ManualHealthClock()
    let sleeps = Locked<[Duration]>([])
    var now: Duration { base.now }
    var wallTime: Double { base.wallTime }
    func sleep(for duration: Duration) async throws {
        sleeps.withLock { $0.append(duration) }
        try await base.sleep(for: duration)
    }
}

@Suite struct HealthTests {
    let clock = ManualHealthClock()

    func registry(_ policy: AutoFixPolicy = AutoFixPolicy()) -> UnifiedRegistry {
        UnifiedRegistry(clock: clock, policy: policy, jitter: { $0 })  // no jitter: exact timings
    }

    @Test func hungCheck_isCutOffAtItsTimeout_withoutDelayingTheOthers() async throws {
        let registry = registry()
        let hang = Hang()
        registry.register(HealthCheck(name: "hung", timeout: .seconds(2)) { await hang.forever(); return .healthy() })
        registry.register(HealthCheck(name: "quick") { .healthy("fine") })
        let round = Task { await registry.runChecks() }
        // "quick" has finished (its timer is gone) and only the hung check's timer is left.
        try #require(await eventually { registry.report().checks[1].lastRun != nil })
        try await waitForSleepers(clock, 1)
        clock.advance(by: .seconds(2))
        let report = await round.value
        let hung = report.checks.first { $0.name == "hung" }!
        let quick = report.checks.first { $0.name == "quick" }!
        #expect(hung.status == .unhealthy)
        #expect(hung.message == "timed out after 2 s")
        #expect(hung.duration == 2)
        #expect(quick.status == .healthy)
        #expect(quick.message == "fine")
        #expect(quick.duration == 0)
    }

    @Test func flappingCheck_changesStateOnlyAcrossItsThresholds() async {
        let registry = registry()
        let script = Script([.healthy, .unhealthy, .unhealthy, .healthy, .unhealthy, .unhealthy, .unhealthy, .healthy, .healthy])
        registry.register(HealthCheck(name: "flappy", failureThreshold: 3, successThreshold: 2) { script.next() })
        var seen: [HealthStatus?] = []
        for _ in 0..<9 { seen.append(await registry.runChecks().checks[0].status) }
        #expect(seen == [.healthy, .healthy, .healthy, .healthy, .healthy, .healthy, .unhealthy, .unhealthy, .healthy])
    }

    @Test func theObserver_isToldOfEveryChangeOfState_andEveryFixThatRan_withoutHealthLogging() async {
        let registry = registry()
        let events = Locked<[HealthEvent]>([])
        registry.setEventObserver { event in events.withLock { $0.append(event) } }
        let script = Script([.healthy, .healthy, .unhealthy, .unhealthy, .healthy])
        let fix = ScriptedFix()
        registry.register(HealthCheck(name: "x", run: { script.next() }, fix: { try fix.run() }))
        await registry.runChecks(fixing: false)
        await registry.runChecks(fixing: false)
        await registry.runChecks()  // unhealthy: the fix runs, throws; run again, still unhealthy: no change, nothing told
        await registry.runChecks(fixing: false)
        let failed = registry.fixHistory()[0]
        #expect(
            events.withLock { $0 } == [
                .transition(check: "x", from: nil, to: .healthy, message: "healthy"),
                .transition(check: "x", from: .healthy, to: .unhealthy, message: "unhealthy"),
                .fixed(failed, healed: false),
                .transition(check: "x", from: .unhealthy, to: .healthy, message: "healthy"),
            ])
        #expect(failed.outcome == .failed)
        registry.setEventObserver(nil)
        await registry.fix("x")  // refused or not, no observer is told
        #expect(events.withLock { $0.count } == 4)
    }

    @Test func runCheck_runsThatCheckOnly_andOnlyLooks() async {
        let registry = registry()
        let fix = ScriptedFix()
        registry.register(HealthCheck(name: "x", failureThreshold: 2, run: { .unhealthy("down") }, fix: { try fix.run() }))
        registry.register(HealthCheck(name: "y") { .healthy("fine") })
        let report = await registry.runCheck("x")
        #expect(report?.status == .unhealthy && report?.message == "down")
        #expect(registry.report().checks[1].status == nil)  // y not run
        await registry.runChecks()  // the first failure that counts toward the threshold of 2
        #expect(fix.runs == 0)
        await registry.runChecks()
        #expect(fix.runs == 1)
        #expect(await registry.runCheck("none") == nil)
    }

    /// `checkTags` follows the checks registered, replaced and removed.
    @Test func checkTags_areTheTagsOfTheChecksRegistered() {
        let registry = registry()
        #expect(registry.checkTags.isEmpty)
        registry.register(HealthCheck(name: "a", tags: ["x", "y"]) { .healthy() })
        registry.register(HealthCheck(name: "b", tags: ["y"]) { .healthy() })
        #expect(registry.checkTags == ["x", "y"])
        registry.register(HealthCheck(name: "a", tags: ["z"]) { .healthy() })  // replaced
        #expect(registry.checkTags == ["y", "z"])
        registry.unregister("b")
        #expect(registry.checkTags == ["z"])
        registry.unregister("a")
        #expect(registry.checkTags.isEmpty)
    }

    /// A pending result (no finding yet) leaves the state unknown and the counts as they were;
    /// the first finding after it is the check's first result, told from no state.
    @Test func aPendingResult_leavesTheStateUnknown_untilAFinding() async {
        let registry = registry()
        let events = Locked<[HealthEvent]>([])
        registry.setEventObserver { event in events.withLock { $0.append(event) } }
        let ran = Atomic<Bool>(false)
        registry.register(HealthCheck(name: "job") {
            ran.load(ordering: .relaxed) ? .degraded("last run failed") : .pending("not run yet")
        })
        var report = await registry.runChecks(fixing: false)
        report = await registry.runChecks(fixing: false)
        #expect(report.checks[0].status == nil)
        #expect(report.checks[0].message == "not run yet")
        #expect(report.checks[0].lastRun != nil)
        #expect(report.checks[0].lastSuccess == nil && report.checks[0].consecutiveFailures == 0)
        #expect(report.status == .healthy && report.score == 100)  // as a check not run yet counts
        ran.store(true, ordering: .relaxed)
        #expect(await registry.runCheck("job")?.status == .degraded)
        #expect(events.withLock { $0 } == [.transition(check: "job", from: nil, to: .degraded, message: "last run failed")])
    }

    /// A result encoded before `isPending` was kept decodes as a finding.
    @Test func aResultEncodedWithoutIsPending_decodesAsAFinding() throws {
        let old = try JSONDecoder().decode(HealthCheckResult.self, from: Data(#"{"status":"degraded","message":"m","data":{}}"#.utf8))
        #expect(old == .degraded("m"))
        let pending = HealthCheckResult.pending("not run yet")
        #expect(try JSONDecoder().decode(HealthCheckResult.self, from: JSONEncoder().encode(pending)) == pending)
    }

    /// A check's report encoded before `runsStarted` was kept decodes with 0 runs; one encoded
    /// now decodes as it was.
    @Test func aCheckReportEncodedWithoutRunsStarted_decodesWithNone() async throws {
        let registry = registry()
        registry.register(HealthCheck(name: "a") { .degraded("slow") })
        await registry.runChecks(fixing: false)
        let report = try #require(registry.report().checks.first)
        #expect(report.runsStarted == 1)
        let encoded = try JSONEncoder().encode(report)
        #expect(try JSONDecoder().decode(CheckReport.self, from: encoded) == report)
        var object = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        #expect(object.removeValue(forKey: "runsStarted") != nil)
        let old = try JSONDecoder().decode(CheckReport.self, from: JSONSerialization.data(withJSONObject: object))
        var expected = report
        expected.runsStarted = 0
        #expect(old == expected)
    }

    @Test func report_holdsPerCheckFacts_andAScore() async {
        let registry = registry()
        registry.register(HealthCheck(name: "a", tags: [HealthCheck.liveness]) { .healthy() })
        registry.register(HealthCheck(name: "b") { .degraded("slow", data: ["ms": "900"]) })
        registry.register(HealthCheck(name: "c") { .unhealthy("down") })
        clock.advance(by: .seconds(10))
        let report = await registry.runChecks()
        #expect(report.status == .unhealthy)
        #expect(report.score == 50)
        #expect(report.takenAt == clock.wallTime)
        let b = report.checks[1]
        #expect(b.message == "slow" && b.data == ["ms": "900"] && b.consecutiveFailures == 1)
        #expect(b.lastFailure == 1_700_000_010 && b.lastSuccess == nil)
        #expect(report.checks[0].lastSuccess == 1_700_000_010)
        let liveness = await registry.runChecks(tags: [HealthCheck.liveness])
        #expect(liveness.checks.map(\.name) == ["a"])
        #expect(liveness.score == 100)
    }

    @Test func autoFix_waitsForTheFailureThreshold() async {
        let registry = registry()
        let fix = ScriptedFix()
        registry.register(HealthCheck(name: "x", failureThreshold: 3, run: { .unhealthy("down") }, fix: { try fix.run() }))
        for _ in 0..<2 { await registry.runChecks() }
        #expect(fix.runs == 0)
        await registry.runChecks()
        #expect(fix.runs == 1)
    }

    /// Checks run only to look (weavedid's `RunChecks`, open to anyone who may connect) update
    /// the state and the report, but cannot hurry a fix: the threshold counts the failures that
    /// rounds which may fix saw, in a row.
    @Test func autoFix_countsOnlyTheFailuresOfRoundsThatMayFix() async {
        let registry = registry()
        let fix = ScriptedFix()
        registry.register(HealthCheck(name: "x", failureThreshold: 3, run: { .unhealthy("down") }, fix: { try fix.run() }))
        for _ in 0..<10 { await registry.runChecks(fixing: false) }
        #expect(registry.report().checks[0].status == .unhealthy)
        #expect(registry.report().checks[0].consecutiveFailures == 10)
        for _ in 0..<2 { await registry.runChecks() }
        #expect(fix.runs == 0)
        await registry.runChecks()
        #expect(fix.runs == 1)
    }

    /// Values the registry cannot use are replaced when the check is registered, whether they
    /// were given to the initializer or set on the check afterwards: not a crash.
    @Test func aCheckWithUnusableValues_isRegisteredWithUsableOnes() async {
        let registry = registry()
        registry.register(HealthCheck(name: "", timeout: .zero, failureThreshold: 0, successThreshold: -3) { .healthy() })
        var changed = HealthCheck(name: "changed") { .healthy() }
        changed.timeout = .seconds(-1)
        changed.failureThreshold = -7
        changed.successThreshold = 0
        registry.register(changed)
        let registered = registry.state.withLock { state in state.order.map { state.checks[$0]!.check } }
        #expect(registered.map(\.name) == ["", "changed"])
        #expect(registered.map(\.timeout) == [.seconds(2), .seconds(2)])
        #expect(registered.map(\.failureThreshold) == [1, 1])
        #expect(registered.map(\.successThreshold) == [1, 1])
        #expect(await registry.runChecks().checks.map(\.status) == [.healthy, .healthy])
    }

    /// An interval that is not positive would run the rounds back to back: the loop sleeps the
    /// default 30 s between rounds instead.
    @Test(arguments: [Duration.zero, .seconds(-5)])
    func loop_withAnIntervalThatIsNotPositive_sleepsTheDefault(interval: Duration) async throws {
        let clock = RecordingClock()
        let registry = UnifiedRegistry(clock: clock, jitter: { $0 })
        registry.register(HealthCheck(name: "x", timeout: .seconds(100)) { .healthy() })
        registry.start(interval: interval)
        try #require(await eventually { clock.sleeps.withLock { $0.contains { $0 != .seconds(100) } } })
        let loopSleep = clock.sleeps.withLock { $0.first { $0 != .seconds(100) } }
        registry.stop()
        #expect(loopSleep == .seconds(30))
    }

    @Test func unusableValues_areLoggedAsErrors_namingThem() throws {
        let result = try ChildProcess.run("weavedi-probe", ["health-misuse"])
        #expect(result.status == 0 && result.stdout == "registered 3\n", "\(result.stdout)\(result.stderr)")
        for line in [
            #"[WeaveDI] error: health check "": the name is empty; give the check a name, so that the report and fix(name) can tell it apart"#,
            #"[WeaveDI] error: health check "": failureThreshold 0 is below 1; using 1"#,
            #"[WeaveDI] error: health check "": successThreshold -3 is below 1; using 1"#,
            #"[WeaveDI] error: health check "": timeout 0.0 seconds is not positive; using the default, 2 s"#,
            #"[WeaveDI] error: health check " \t ": the name is only white space; give the check a visible name, "#
                + "so that the report and fix(name) can tell it apart",
            #"[WeaveDI] error: health check "db\u001b[2J\nforged": the name has control characters, "#
                + "which the report and a terminal cannot show as they are; give the check a name without them",
            "[WeaveDI] error: health loop interval -5.0 seconds is not positive, which would run its rounds back to back; using the default, 30 s (pass a positive interval)",
        ] {
            #expect(result.stderr.contains(line + "\n"), "\(result.stderr)")
        }
    }

    /// The default sink writes lines as they are: the health logging's lines quote a check's
    /// name, and escape the control characters of the check's message and the fix's error as
    /// the daemon's log does, so that none holding a newline or an escape sequence forges a line
    /// or reaches a terminal.
    @Test func healthLogging_quotesCheckNames_andEscapesMessagesAndErrors() throws {
        let result = try ChildProcess.run("weavedi-probe", ["health-names-logged"])
        #expect(result.status == 0 && result.stdout == "done\n", "\(result.stdout)\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.contains(#"[WeaveDI] error: "db\u001b[2J\nforged": unknown -> unhealthy: cannot read /srv/a\nforged check: \u{1B}[2Jgone"#),
                "\(result.stderr)")
        #expect(lines.contains(#"[WeaveDI] error: fix of "db\u001b[2J\nforged" (manual) failed: server said: busy\r\nforged fix"#),
                "\(result.stderr)")
        #expect(!lines.contains { $0.hasPrefix("forged") }, "\(result.stderr)")
        #expect(!result.stderr.contains("\u{1B}"), "\(result.stderr)")
    }

    @Test func aFix_knowsWhoAskedForIt_andTheTasksItStartsDoToo() async {
        let registry = registry()
        let seen = Locked<[FixRecord.Trigger?]>([])
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: {
            let inner = await Task { FixRecord.Trigger.current }.value
            seen.withLock { $0 += [FixRecord.Trigger.current, inner] }
            return "done"
        }))
        await registry.runChecks()  // auto-fix
        _ = await registry.fix("x")
        #expect(seen.withLock { $0 } == [.automatic, .automatic, .manual, .manual])
        #expect(FixRecord.Trigger.current == nil)
    }

    @Test func runChecks_notFixing_onlyLooks() async {
        let registry = registry()
        let fix = ScriptedFix()
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: { try fix.run() }))
        #expect(await registry.runChecks(fixing: false).checks[0].status == .unhealthy)
        #expect(fix.runs == 0 && registry.fixHistory().isEmpty)
        await registry.runChecks()
        #expect(fix.runs == 1)
    }

    @Test func autoFix_backsOffExponentially_betweenFailedAttempts() async {
        var policy = AutoFixPolicy()
        policy.backoffBase = .seconds(10)
        policy.breakerThreshold = 100
        policy.maxAttemptsPerWindow = 100
        let registry = registry(policy)
        let fix = ScriptedFix()
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: { try fix.run() }))
        var runsAt: [Int: Int] = [:]
        var elapsed = 0
        for step in [0, 5, 5, 19, 1, 39, 1] {  // t = 0, 5, 10, 29, 30, 69, 70
            clock.advance(by: .seconds(step))
            elapsed += step
            await registry.runChecks()
            runsAt[elapsed] = fix.runs
        }
        #expect(runsAt == [0: 1, 5: 1, 10: 2, 29: 2, 30: 3, 69: 3, 70: 4])
        #expect(registry.report().checks[0].fixHeldBack == nil)
        clock.advance(by: .seconds(1))
        await registry.runChecks()
        #expect(registry.report().checks[0].fixHeldBack?.contains("backing off") == true)
    }

    /// `.seconds(.max)` as a timeout or an interval means "never": the real clock sleeps until
    /// cancelled (it stopped the process: `Task.sleep` cannot hold a deadline that far away).
    @Test func systemClock_sleepsForAnyDuration_untilCancelled() async throws {
        let started = Locked(false)
        let sleeper = Task {
            started.withLock { $0 = true }
            try await SystemHealthClock().sleep(for: .seconds(Int64.max))
        }
        try #require(await eventually { started.withLock { $0 } })  // cancelled only once it sleeps
        try? await Task.sleep(for: .milliseconds(20))
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        let registry = UnifiedRegistry()
        registry.register(HealthCheck(name: "untimed", timeout: .seconds(Int64.max), run: { .healthy() }))
        #expect(await registry.runChecks().checks.first?.status == .healthy)
    }

    @Test func fullJitter_staysWithinTheBackoff_andVaries() {
        let samples = (0..<200).map { _ in fullJitter(.seconds(8)) }
        #expect(samples.allSatisfy { $0 >= .zero && $0 <= .seconds(8) })
        #expect(Set(samples).count > 100)
    }

    /// A backoff cap of `.seconds(.max)` ("no cap") reaches backoffs past what a count of
    /// nanoseconds holds: the jitter stays within them (it stopped the process).
    @Test func fullJitter_ofABackoffOfCenturies_staysWithinIt() {
        for backoff in [Duration.seconds(Int64(1) << 40), .seconds(Int64.max), .nanoseconds(Int64.max)] {
            let jittered = fullJitter(backoff)
            #expect(jittered >= .zero && jittered <= backoff)
        }
        #expect(fullJitter(.zero) == .zero)
        #expect(fullJitter(.seconds(-5)) == .zero)
    }

    @Test func circuitBreaker_opensAfterRepeatedFailures_andHalfOpensAfterTheCooldown() async {
        var policy = AutoFixPolicy()
        policy.backoffBase = .seconds(1)
        policy.breakerThreshold = 2
        policy.breakerCooldown = .seconds(60)
        policy.maxAttemptsPerWindow = 100
        let registry = registry(policy)
        let fix = ScriptedFix()
        let healthy = Atomic(false)
        registry.register(HealthCheck(name: "x", run: { healthy.load(ordering: .relaxed) ? .healthy() : .unhealthy("down") }, fix: {
            let message = try fix.run()
            healthy.store(true, ordering: .relaxed)
            return message
        }))
        let wall = clock.wallTime  // at t=0; the report gives the breaker's time on this clock
        await registry.runChecks()  // t=0: fails (1)
        clock.advance(by: .seconds(1))
        await registry.runChecks()  // t=1: fails (2): open until 61
        #expect(fix.runs == 2)
        #expect(registry.report().checks[0].breaker == .open(untilSeconds: wall + 61))
        clock.advance(by: .seconds(29))
        await registry.runChecks()  // t=30: refused
        #expect(fix.runs == 2)
        #expect(registry.report().checks[0].fixHeldBack?.contains("circuit breaker open") == true)
        #expect(registry.report().checks[0].breaker == .open(untilSeconds: wall + 61))
        clock.advance(by: .seconds(31))
        // t=61: the cool-down is over: the next fix is a trial, whether or not one ran yet.
        #expect(registry.report().checks[0].breaker == .halfOpen)
        await registry.runChecks()  // t=61: half-open trial, fails: open until 121
        #expect(fix.runs == 3)
        #expect(registry.report().checks[0].breaker == .open(untilSeconds: wall + 121))
        clock.advance(by: .seconds(59))
        await registry.runChecks()  // t=120: refused
        #expect(fix.runs == 3)
        fix.succeed(true)
        clock.advance(by: .seconds(1))
        await registry.runChecks()  // t=121: trial succeeds: closed
        #expect(fix.runs == 4)
        #expect(registry.report().checks[0].breaker == .closed)
    }

    @Test func aFixThatReturns_butLeavesTheCheckFailing_countsAsFailed() async {
        var policy = AutoFixPolicy()
        policy.backoffBase = .seconds(10)
        policy.breakerThreshold = 3
        policy.breakerCooldown = .seconds(300)
        policy.maxAttemptsPerWindow = 100
        let registry = registry(policy)
        let fix = ScriptedFix()
        fix.succeed(true)  // it returns "fixed" every time, and the check stays down
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: { try fix.run() }))
        await registry.runChecks()  // t=0: the first fix; backing off 10 s
        #expect(fix.runs == 1)
        let record = registry.fixHistory().last
        #expect(record?.outcome == .failed)  // judged by the check, not by what the fix said
        #expect(record?.error == nil)
        #expect(record?.message == "fixed; the check still fails after it: down")
        clock.advance(by: .seconds(5))
        await registry.runChecks()  // t=5: within the backoff: not run every round
        #expect(fix.runs == 1)
        #expect(registry.report().checks[0].fixHeldBack == "backing off for 5 s more after 1 failed fix(es)")
        clock.advance(by: .seconds(5))
        await registry.runChecks()  // t=10: the second; backing off 20 s
        clock.advance(by: .seconds(20))
        await registry.runChecks()  // t=30: the third: the breaker opens
        #expect(fix.runs == 3)
        #expect(registry.report().checks[0].breaker == .open(untilSeconds: clock.wallTime + 300))
        // By hand it still runs (past the breaker), and says what it found.
        let manual = await registry.fix("x")
        #expect(manual.outcome == .failed)
        #expect(manual.message == "fixed; the check still fails after it: down")
    }

    /// A fix with nothing to do throws `FixNotApplicable`: run automatically, round after
    /// round, it is neither recorded, told nor counted (no failure toward the breaker, no place
    /// among the attempts the window allows), and the check says why auto-fix did nothing; by
    /// hand, it is recorded as `notApplicable`, neither a success nor a failure.
    @Test func aFixWithNothingToDo_isNotApplicable_silentWhenAutomatic() async {
        var policy = AutoFixPolicy()
        policy.breakerThreshold = 1
        policy.maxAttemptsPerWindow = 2
        let registry = registry(policy)
        let events = Locked<[HealthEvent]>([])
        registry.setEventObserver { event in events.withLock { $0.append(event) } }
        defer { registry.setEventObserver(nil) }
        let runs = Locked(0)
        let nothing = Locked(true)
        registry.register(HealthCheck(name: "x", run: { .degraded("behind") }, fix: {
            runs.withLock { $0 += 1 }
            if nothing.withLock({ $0 }) { throw FixNotApplicable("the schedule retries it") }
            return "did something"
        }))
        for _ in 0..<5 {
            await registry.runChecks()
            clock.advance(by: .seconds(10))
        }
        #expect(runs.withLock { $0 } == 5)  // asked every round: the fix decides
        #expect(registry.fixHistory().isEmpty)
        #expect(!events.withLock { $0 }.contains { if case .fixed = $0 { true } else { false } })
        var check = registry.report().checks[0]
        #expect(check.breaker == .closed)
        #expect(check.fixesTried == 0 && check.lastFix == nil)
        #expect(check.fixHeldBack == "its fix has nothing to do: the schedule retries it")
        let manual = await registry.fix("x")
        #expect(manual.outcome == .notApplicable && manual.trigger == .manual && manual.message == "the schedule retries it")
        #expect(manual.error == nil)
        #expect(registry.fixHistory() == [manual])
        check = registry.report().checks[0]
        #expect(check.breaker == .closed && check.fixesTried == 1)
        // None of the six took a place in the window (two per 600 s): the fix runs when it has
        // something to do.
        nothing.withLock { $0 = false }
        await registry.runChecks()
        #expect(runs.withLock { $0 } == 7)
        #expect(registry.fixHistory().last?.outcome == .failed)  // did something; the check still fails
        #expect(registry.fixHistory().last?.trigger == .automatic)
    }

    /// A fix that starts a remedy going on after it (a long run) and says so is `inProgress`
    /// while the check still fails: no failure for the backoff and the breaker (here one
    /// failure would open it), and no new attempt while the remedy goes on, however many
    /// rounds pass; once the remedy has ended, auto-fix judges the fix as usual again.
    @Test func aFixWhoseRemedyGoesOn_isInProgress_neitherRetriedNorCountedAsFailed() async {
        var policy = AutoFixPolicy()
        policy.backoffBase = .seconds(10)
        policy.breakerThreshold = 1
        policy.maxAttemptsPerWindow = 100
        let registry = registry(policy)
        let going = Locked(true)
        let runs = Locked(0)
        let timeLeft = Locked<Duration?>(nil)
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: {
            let run = runs.withLock { $0 += 1; return $0 }
            timeLeft.withLock { $0 = FixRecord.attemptTimeLeft }
            if run == 1 { FixRecord.remedyInProgress { going.withLock { $0 } } }
            return "started a run"
        }))
        #expect(FixRecord.attemptTimeLeft == nil)  // outside a fix
        await registry.runChecks()
        #expect(runs.withLock { $0 } == 1)
        #expect(timeLeft.withLock { $0 } == policy.attemptTimeout)  // the manual clock has not moved
        let record = registry.fixHistory().last
        #expect(record?.outcome == .inProgress)
        #expect(record?.message == "started a run; the check still fails while it goes on: down")
        var check = registry.report().checks[0]
        #expect(check.breaker == .closed)
        #expect(check.fixInProgress == "started a run; the check still fails while it goes on: down")
        for _ in 0..<5 {
            clock.advance(by: .seconds(60))
            await registry.runChecks()
        }
        #expect(runs.withLock { $0 } == 1)
        check = registry.report().checks[0]
        #expect(check.breaker == .closed)
        #expect(check.fixHeldBack == "the remedy its last fix started 300 s ago is still going "
            + "(started a run; the check still fails while it goes on: down): auto-fix waits for it to end")

        going.withLock { $0 = false }  // the remedy ended, and the check still fails
        await registry.runChecks()
        #expect(runs.withLock { $0 } == 2)
        check = registry.report().checks[0]
        #expect(check.fixInProgress == nil)
        #expect(registry.fixHistory().last?.outcome == .failed)  // returned, left the check failing: a failure
        #expect(check.breaker != .closed)
    }

    /// A fix that throws has its check run again, only to look: the report says how things are
    /// now, not how they were at the last round (a manual fix between rounds finds them changed).
    @Test func aFixThatThrows_hasItsCheckRunAgain() async {
        let registry = registry()
        let down = Locked(false)
        let runs = Locked(0)
        registry.register(HealthCheck(name: "x", run: {
            runs.withLock { $0 += 1 }
            return down.withLock { $0 } ? .unhealthy("down now") : .healthy("up")
        }, fix: { throw ScriptedFix.FixError() }))
        await registry.runChecks(fixing: false)
        #expect(registry.report().checks[0].status == .healthy)
        down.withLock { $0 = true }
        let record = await registry.fix("x")
        #expect(record.outcome == .failed)
        #expect(runs.withLock { $0 } == 2)
        #expect(registry.report().checks[0].status == .unhealthy)
        #expect(registry.report().checks[0].message == "down now")
    }

    /// An automatic fix that throws has its check run again too, only to look, as one asked
    /// for by hand: a fix that changed things (half fixed them) before it threw leaves the
    /// report saying how they are after the attempt, not how the round's run saw them before it.
    @Test func anAutomaticFixThatThrows_hasItsCheckRunAgain() async {
        let registry = registry()
        let disk = Locked("full")
        let runs = Locked(0)
        registry.register(HealthCheck(name: "x", run: {
            runs.withLock { $0 += 1 }
            return disk.withLock { $0 } == "full" ? .unhealthy("disk full") : .degraded("disk 95% used")
        }, fix: {
            disk.withLock { $0 = "pruned" }  // pruned some files, then failed to prune the rest
            throw ScriptedFix.FixError()
        }))
        let report = await registry.runChecks()
        let record = registry.fixHistory().last
        #expect(record?.trigger == .automatic && record?.outcome == .failed && record?.error == "still broken")
        #expect(runs.withLock { $0 } == 2)
        #expect(report.checks[0].status == .degraded)
        #expect(report.checks[0].message == "disk 95% used")
        #expect(registry.report().checks[0].message == "disk 95% used")
    }

    /// A remedy said by a fix that then throws, or said after its attempt timed out, is not
    /// heard: the attempt is a failure as before.
    @Test func aRemedySaidByAFixThatFails_isNotInProgress() async {
        let registry = registry()
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: {
            FixRecord.remedyInProgress { true }
            throw ScriptedFix.FixError()
        }))
        let record = await registry.fix("x")
        #expect(record.outcome == .failed)
        #expect(registry.report().checks[0].fixInProgress == nil)
    }

    /// A check healthy again forgets a remedy in progress.
    @Test func aCheckHealthyAgain_forgetsTheRemedyInProgress() async {
        let registry = registry()
        let script = Script([.unhealthy, .unhealthy, .healthy])
        registry.register(HealthCheck(name: "x", run: { script.next() }, fix: {
            FixRecord.remedyInProgress { true }
            return "started"
        }))
        await registry.runChecks()
        #expect(registry.fixHistory().last?.outcome == .inProgress)
        await registry.runChecks()
        #expect(registry.report().checks[0].fixInProgress == nil)
        #expect(registry.report().checks[0].status == .healthy)
    }

    @Test func aCheckHealthyAgainByItself_forgetsTheFailedFixes() async {
        var policy = AutoFixPolicy()
        policy.backoffBase = .seconds(100)
        policy.breakerThreshold = 1
        policy.breakerCooldown = .seconds(300)
        let registry = registry(policy)
        let fix = ScriptedFix()
        let script = Script([.unhealthy, .unhealthy, .healthy, .unhealthy])
        registry.register(HealthCheck(name: "x", run: { script.next() }, fix: { try fix.run() }))
        await registry.runChecks()  // the fix fails (the check, run again, still fails): the breaker opens for 300 s
        #expect(fix.runs == 1)
        #expect(registry.report().checks[0].breaker != .closed)
        clock.advance(by: .seconds(10))
        #expect(await registry.runChecks().checks[0].breaker == .closed)  // healthy again
        clock.advance(by: .seconds(10))
        await registry.runChecks()  // down again: a new problem, fixed at once
        #expect(fix.runs == 2)
    }

    @Test func whyAutoFixHeldBack_isClearedOnceTheCheckIsHealthyAgain() async {
        var policy = AutoFixPolicy()
        policy.backoffBase = .seconds(100)
        let registry = registry(policy)
        let fix = ScriptedFix()
        let script = Script([.unhealthy, .unhealthy, .unhealthy, .healthy])
        registry.register(HealthCheck(name: "x", run: { script.next() }, fix: { try fix.run() }))
        await registry.runChecks()  // the fix fails (the check, run again, still fails): backing off for 100 s
        clock.advance(by: .seconds(1))
        await registry.runChecks()
        #expect(registry.report().checks[0].fixHeldBack == "backing off for 99 s more after 1 failed fix(es)")
        clock.advance(by: .seconds(1))
        let healed = await registry.runChecks().checks[0]
        #expect(healed.status == .healthy)
        #expect(healed.fixHeldBack == nil)  // no fix is due, so none is held back
        #expect(fix.runs == 1)
    }

    @Test func attemptsPerWindow_areCapped() async {
        var policy = AutoFixPolicy()
        policy.backoffBase = .zero
        policy.breakerThreshold = 100
        policy.maxAttemptsPerWindow = 2
        policy.window = .seconds(100)
        let registry = registry(policy)
        let fix = ScriptedFix()
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: { try fix.run() }))
        for _ in 0..<4 {
            await registry.runChecks()
            clock.advance(by: .seconds(1))
        }
        #expect(fix.runs == 2)
        #expect(registry.report().checks[0].fixHeldBack == "attempt limit reached: 2 per 100 s")
        clock.advance(by: .seconds(97))  // t=101: both attempts have left the window
        await registry.runChecks()
        #expect(fix.runs == 3)
    }

    /// Registers `check` (a 2 s timeout, a run that hangs) and runs it once, to its timeout.
    func runTimingOut(_ check: HealthCheck, in registry: UnifiedRegistry) async throws {
        registry.register(check)
        let first = Task { await registry.runChecks() }
        try await waitForSleepers(clock, 1)
        clock.advance(by: .seconds(2))
        #expect(await first.value.checks[0].message == "timed out after 2 s")
    }

    @Test func aCheckRegisteredAgain_isNotHeldBackByTheHungRunOfTheOneItReplaced() async throws {
        let registry = registry()
        let gate = Gate()
        try await runTimingOut(HealthCheck(name: "job.x", timeout: .seconds(2)) {
            await gate.wait()
            return .healthy("back")
        }, in: registry)
        #expect(registry.unregister("job.x"))
        registry.register(HealthCheck(name: "job.x") { .healthy("the new one") })
        #expect(await registry.runChecks().checks[0].message == "the new one")
        gate.open()
    }

    @Test func timedOutCheck_stillRunning_isNotStartedAgainUntilItReturns() async throws {
        let registry = registry()
        let gate = Gate()
        let started = Atomic<Int>(0)
        try await runTimingOut(HealthCheck(name: "stuck", timeout: .seconds(2)) {
            started.add(1, ordering: .relaxed)
            await gate.wait()
            return .healthy("back")
        }, in: registry)
        clock.advance(by: .seconds(28))
        // The first run ignores its cancellation and is still going: a second round must not
        // start another one beside it (one more a round would pile up without end).
        let second = Task { await registry.runChecks() }
        try #require(await eventually { started.load(ordering: .relaxed) >= 2 || registry.report().checks[0].lastRun == 1_700_000_030 })
        if started.load(ordering: .relaxed) == 2 {
            try await waitForSleepers(clock, 1)
            clock.advance(by: .seconds(2))
        }
        let report = await second.value.checks[0]
        #expect(started.load(ordering: .relaxed) == 1)
        #expect(report.status == .unhealthy)
        #expect(report.message == "timed out after 2 s, and still running 30 s after it started: not run again until it returns")
        #expect(report.consecutiveFailures == 2)
        gate.open()  // the first run returns at last: the next round runs the check again
        while started.load(ordering: .relaxed) < 2 {
            let round = await registry.runChecks().checks[0]
            if round.status == .healthy { break }
        }
        #expect(registry.report().checks[0].message == "back")
        #expect(started.load(ordering: .relaxed) == 2)
    }

    @Test func timedOutFix_stillRunning_isNotStartedAgainUntilItReturns() async throws {
        var policy = AutoFixPolicy()
        policy.attemptTimeout = .seconds(5)
        policy.backoffBase = .seconds(1)
        policy.breakerThreshold = 100
        policy.maxAttemptsPerWindow = 100
        let registry = registry(policy)
        let gate = Gate()
        let started = Atomic<Int>(0)
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: {
            started.add(1, ordering: .relaxed)
            await gate.wait()
            return "fixed"
        }))
        let first = Task { await registry.fix("x") }
        try await waitForSleepers(clock, 1)
        clock.advance(by: .seconds(5))
        #expect(await first.value.outcome == .timedOut)
        clock.advance(by: .seconds(10))
        // The first fix ignores its cancellation and is still going: no second one beside it.
        let second = Task { await registry.fix("x") }
        try #require(await eventually { started.load(ordering: .relaxed) >= 2 || registry.fixHistory().count >= 2 })
        if started.load(ordering: .relaxed) == 2 {
            try await waitForSleepers(clock, 1)
            clock.advance(by: .seconds(5))
        }
        let refused = await second.value
        #expect(started.load(ordering: .relaxed) == 1)
        #expect(refused.outcome == .refused)
        #expect(refused.message == #"the fix of "x" that timed out is still running 15 s after it started: none starts until it returns"#)
        guard started.load(ordering: .relaxed) == 1 else { return }
        // Auto-fix holds back too (shown in the report, without filling the history).
        await registry.runChecks()
        #expect(started.load(ordering: .relaxed) == 1)
        #expect(registry.report().checks[0].fixHeldBack == refused.message)
        #expect(registry.fixHistory().count == 2)
        gate.open()  // the first fix returns at last: fixes may run again
        while registry.report().checks[0].fixHeldBack != nil || started.load(ordering: .relaxed) < 2 {
            await registry.runChecks()
            clock.advance(by: .seconds(10))
        }
        #expect(started.load(ordering: .relaxed) == 2)
        // It ran and returned; the check stays down, so it failed.
        #expect(registry.fixHistory().last?.outcome == .failed && registry.fixHistory().last?.error == nil)
    }

    @Test func fixAttempt_isBoundedByTheAttemptTimeout() async throws {
        var policy = AutoFixPolicy()
        policy.attemptTimeout = .seconds(5)
        let registry = registry(policy)
        let hang = Hang()
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: { await hang.forever(); return "never" }))
        let round = Task { await registry.fix("x") }
        try await waitForSleepers(clock, 1)
        clock.advance(by: .seconds(5))
        let record = await round.value
        #expect(record.outcome == .timedOut)
        #expect(record.message == "fix timed out after 5 s")  // its limit, as a check's timeout says it
        #expect(record.error == "timed out after 5 s")
        #expect(record.duration == 5)
    }

    @Test func everyActionIsRecorded_andManualFixesSkipBackoff() async {
        var policy = AutoFixPolicy()
        policy.backoffBase = .seconds(100)
        let registry = registry(policy)
        let fix = ScriptedFix()
        let state = Locked(HealthStatus.unhealthy)
        registry.register(HealthCheck(name: "x", run: { HealthCheckResult(status: state.withLock { $0 }, message: "m") }, fix: {
            let message = try fix.run()
            state.withLock { $0 = .healthy }
            return message
        }))
        registry.register(HealthCheck(name: "plain") { .unhealthy("no fix for me") })
        await registry.runChecks()  // automatic attempt fails; backoff 100 s
        fix.succeed(true)
        let manual = await registry.fix("x")  // by hand, inside the backoff
        #expect(manual.outcome == .succeeded && manual.trigger == .manual && manual.message == "fixed")
        #expect(registry.report().checks[0].status == .healthy)  // re-run after the fix
        let refused = await registry.fix("plain")
        #expect(refused.outcome == .refused && refused.message == #""plain" offers no fix"#)
        let history = registry.fixHistory()
        #expect(history.map(\.outcome) == [.failed, .succeeded])  // no fix to ask for is no attempt
        #expect(history[0].trigger == .automatic && history[0].error == "still broken")
        #expect(history.allSatisfy { $0.time == clock.wallTime })
        #expect(registry.report().checks[0].fixesTried == 2)
    }

    /// `fix(name)` takes any text (weavedictl fix NAME passes it on): a name no check has is
    /// refused quoting it as every message quotes a value from outside, escaped and shortened.
    @Test func aFixOfNoCheck_isRefused_quotingTheNameGiven() async {
        let registry = registry()
        registry.register(HealthCheck(name: "disk") { .healthy() })
        let refused = await registry.fix("dsk\n'x")
        #expect(refused.outcome == .refused && refused.check == "dsk\n'x")
        #expect(refused.message == #"no health check named "dsk\n'x"; checkNames lists the checks registered"#)
        let long = await registry.fix(String(repeating: "n", count: 1000))
        #expect(long.message == #"no health check named ""# + String(repeating: "n", count: 57)
            + #"..." (1000 characters); checkNames lists the checks registered"#)
        #expect(registry.fixHistory().isEmpty)  // refused, but no attempt: not in the history
    }

    @Test func aRoundCancelled_whileItsChecksRun_startsNoFix() async throws {
        let registry = registry()
        let fix = ScriptedFix()
        let gate = Gate()
        registry.register(HealthCheck(name: "x", timeout: .seconds(1_000), run: {
            await gate.wait()
            return .unhealthy("down")
        }, fix: { try fix.run() }))
        // What the loop's round is once `stop()` cancels it.
        let cancelled = Task { await registry.runChecks() }
        try #require(await eventually { gate.waiting != 0 })
        cancelled.cancel()
        gate.open()
        #expect(await cancelled.value.checks[0].status == .unhealthy)
        #expect(fix.runs == 0)
        await registry.runChecks()  // a round of its own fixes
        #expect(fix.runs == 1)
    }

    @Test func autoFixOff_runsNoFixes() async {
        let registry = registry()
        registry.autoFixEnabled = false
        let fix = ScriptedFix()
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: { try fix.run() }))
        await registry.runChecks()
        #expect(fix.runs == 0)
    }

    @Test func loop_runsOnceAnInterval_andSleepsInBetween() async throws {
        let registry = registry()
        let runs = Atomic<Int>(0)
        registry.register(HealthCheck(name: "count", timeout: .seconds(1_000)) {
            runs.add(1, ordering: .relaxed)
            return .healthy()
        })
        registry.start(interval: .seconds(30))
        try #require(await eventually { registry.report().checks[0].lastRun != nil })
        try await waitForSleepers(clock, 1)  // first round done, loop asleep
        #expect(runs.load(ordering: .relaxed) == 1)
        clock.advance(by: .seconds(29))
        #expect(runs.load(ordering: .relaxed) == 1)
        clock.advance(by: .seconds(1))
        try #require(await eventually { registry.report().checks[0].lastRun == 1_700_000_030 })
        try await waitForSleepers(clock, 1)
        registry.stop()
        #expect(!registry.isRunning)
        #expect(runs.load(ordering: .relaxed) == 2)
    }

    /// Nor is a word said: the program (or its environment, `WEAVEDI_REGISTRY_AUTO_HEALTH=0`)
    /// turned it off, and weavedid calls `start` on every start of its own.
    @Test func loop_doesNotStart_whenAutoHealthIsOff_quietly() {
        let registry = registry()
        registry.autoHealthEnabled = false
        let capture = LogCapture()
        capture.during { registry.start(interval: .seconds(1)) }
        #expect(!registry.isRunning)
        #expect(capture.messages == [])
    }
}
