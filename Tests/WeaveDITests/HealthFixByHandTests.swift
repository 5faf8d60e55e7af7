import Synchronization
import TestSupport
import Testing
@testable import WeaveDI

/// A fix by hand asked while another fix of its check runs (an automatic one, which the loop's
/// rounds may start at any time, or another by hand) waits for that one to end: it takes its
/// outcome when the check passed after it, and runs its own otherwise.
@Suite struct HealthFixByHandTests {
    let clock = ManualHealthClock()

    /// The check `x`, failing until its fix heals it. The fix's first run waits at `gate`, then
    /// heals only with `firstHeals` (else throws); later runs heal at once.
    struct Fixture {
        let registry: UnifiedRegistry
        let gate = Gate()
        let runs = Locked(0)
        let events = Locked<[HealthEvent]>([])

        init(clock: ManualHealthClock, policy: AutoFixPolicy = AutoFixPolicy(), firstHeals: Bool) {
            registry = UnifiedRegistry(clock: clock, policy: policy, jitter: { $0 })
            let (gate, runs, events) = (gate, runs, events)
            let healthy = Locked(false)
            registry.setEventObserver { event in events.withLock { $0.append(event) } }
            registry.register(HealthCheck(name: "x", run: { healthy.withLock { $0 } ? .healthy() : .unhealthy("down") }, fix: {
                let run = runs.withLock { runs in
                    runs += 1
                    return runs
                }
                if run == 1 {
                    await gate.wait()
                    guard firstHeals else { throw ScriptedFix.FixError() }
                }
                healthy.withLock { $0 = true }
                return "fixed by run \(run)"
            }))
        }

        /// How many fixes by hand wait for a fix of `x` to end.
        var waiting: Int { registry.state.withLock { $0.fixWaiters.values.reduce(0) { $0 + $1.count } } }
        var fixesTold: Int { events.withLock { $0.filter { if case .fixed = $0 { true } else { false } }.count } }
    }

    /// Starts a health round whose automatic fix of `x` waits at the gate, then a fix by hand,
    /// and returns both once the fix by hand waits for the automatic one.
    func byHandDuringAnAutomaticFix(_ fixture: Fixture) async throws -> (automatic: Task<HealthReport, Never>, byHand: Task<FixRecord, Never>) {
        let automatic = Task { await fixture.registry.runChecks() }
        try #require(await eventually { fixture.gate.waiting == 1 })
        let byHand = Task { await fixture.registry.fix("x") }
        try #require(await eventually { fixture.waiting == 1 })
        return (automatic, byHand)
    }

    @Test func aFixByHand_duringAnAutomaticFixThatHeals_takesItsOutcome_withoutRunningTheFixAgain() async throws {
        let fixture = Fixture(clock: clock, firstHeals: true)
        let (automatic, byHand) = try await byHandDuringAnAutomaticFix(fixture)
        #expect(fixture.runs.withLock { $0 } == 1)
        fixture.gate.open()
        let record = await byHand.value
        _ = await automatic.value
        #expect(record.outcome == .succeeded && record.trigger == .manual && record.error == nil, "\(record)")
        #expect(record.message == "the automatic fix running as this one was asked healed the check, so it was not run again: fixed by run 1")
        #expect(fixture.runs.withLock { $0 } == 1)
        // One fix ran: one attempt recorded, counted and told, the automatic one.
        let history = fixture.registry.fixHistory()
        #expect(history.map(\.outcome) == [.succeeded] && history.map(\.trigger) == [.automatic], "\(history)")
        let check = fixture.registry.report().checks[0]
        #expect(check.status == .healthy && check.fixesTried == 1 && check.lastFix == history.first)
        #expect(fixture.fixesTold == 1)
        #expect(fixture.waiting == 0)
    }

    @Test func aFixByHand_duringAnAutomaticFixThatDoesNotHeal_runsItsOwnOnceThatOneEnds() async throws {
        let fixture = Fixture(clock: clock, firstHeals: false)
        let (automatic, byHand) = try await byHandDuringAnAutomaticFix(fixture)
        fixture.gate.open()
        let record = await byHand.value
        _ = await automatic.value
        // Run by hand past the backoff the automatic failure started, as any fix by hand.
        #expect(record.outcome == .succeeded && record.trigger == .manual && record.message == "fixed by run 2", "\(record)")
        #expect(fixture.runs.withLock { $0 } == 2)
        let history = fixture.registry.fixHistory()
        #expect(history.map(\.outcome) == [.failed, .succeeded] && history.map(\.trigger) == [.automatic, .manual], "\(history)")
        #expect(history.last == record)
        let check = fixture.registry.report().checks[0]
        #expect(check.status == .healthy && check.fixesTried == 2)
        #expect(fixture.fixesTold == 2)
    }

    /// Two by hand (two people, or a script and a person) are no different: the second waits
    /// for the first, and takes its outcome when it healed.
    @Test func aSecondFixByHand_waitsForTheFirst_andTakesItsOutcomeWhenItHealed() async throws {
        let fixture = Fixture(clock: clock, firstHeals: true)
        let first = Task { await fixture.registry.fix("x") }
        try #require(await eventually { fixture.gate.waiting == 1 })
        let second = Task { await fixture.registry.fix("x") }
        try #require(await eventually { fixture.waiting == 1 })
        fixture.gate.open()
        let (firstRecord, secondRecord) = (await first.value, await second.value)
        #expect(firstRecord.outcome == .succeeded && firstRecord.message == "fixed by run 1")
        #expect(secondRecord.outcome == .succeeded && secondRecord.trigger == .manual, "\(secondRecord)")
        #expect(secondRecord.message == "the fix by hand running as this one was asked healed the check, so it was not run again: fixed by run 1")
        #expect(fixture.runs.withLock { $0 } == 1)
        #expect(fixture.registry.fixHistory() == [firstRecord])
    }

    /// The wait ends with the attempt at its timeout: a fix that timed out and has not returned
    /// is not joined, so the fix by hand is then refused, as one asked after that is.
    @Test func aFixByHand_waitingForAnAutomaticFixThatTimesOut_isRefusedAtItsTimeout() async throws {
        var policy = AutoFixPolicy()
        policy.attemptTimeout = .seconds(5)
        let fixture = Fixture(clock: clock, policy: policy, firstHeals: true)
        // A round without auto-fix counts the failure; the automatic attempt is then started
        // alone, so that its timeout is the only sleeper on the clock.
        fixture.registry.autoFixEnabled = false
        await fixture.registry.runChecks()
        fixture.registry.autoFixEnabled = true
        try #require(await eventually { clock.sleeperCount == 0 })
        let automatic = Task { await fixture.registry.autoFixIfDue("x") }
        try #require(await eventually { fixture.gate.waiting == 1 })
        let byHand = Task { await fixture.registry.fix("x") }
        try #require(await eventually { fixture.waiting == 1 })
        try await waitForSleepers(clock, 1)
        clock.advance(by: .seconds(5))
        let record = await byHand.value
        await automatic.value
        #expect(record.outcome == .refused && record.trigger == .manual, "\(record)")
        #expect(record.message == #"the fix of "x" that timed out is still running 5 s after it started: none starts until it returns"#)
        #expect(fixture.registry.fixHistory().map(\.outcome) == [.timedOut, .refused])
        #expect(fixture.runs.withLock { $0 } == 1)
        fixture.gate.open()
    }
}

/// `fixesRecorded()`, which `weavedi_fixes_total` exposes, counts every record the fix history
/// was given since the registry was made, those it no longer keeps included: a counter whose
/// value went down as old records left the history would read as a restart.
@Suite struct HealthFixesRecordedTests {
    @Test func fixesRecorded_countsEveryRecord_pastTheHistoryLimit() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock(), jitter: { $0 })
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: { throw ScriptedFix.FixError() }))
        let asked = UnifiedRegistry.historyLimit + 10
        var told: [FixRecord.Outcome: Int] = [:]
        var records: [FixRecord] = []
        for _ in 0..<asked {
            let record = await registry.fix("x")
            told[record.outcome, default: 0] += 1
            records.append(record)
        }
        // Failed until the attempt limit, refused after: both outcomes, each counted in full.
        #expect(told.count == 2 && told[.failed, default: 0] > 0 && told[.refused, default: 0] > 0, "\(told)")
        #expect(registry.fixesRecorded() == told)
        #expect(registry.fixHistory() == Array(records.suffix(UnifiedRegistry.historyLimit)))
    }

    @Test func aNameWithoutAFix_isNoAttempt_andIsNotCounted() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock(), jitter: { $0 })
        registry.register(HealthCheck(name: "x", run: { .healthy() }))
        #expect(await registry.fix("x").outcome == .refused)
        #expect(await registry.fix("y").outcome == .refused)
        #expect(registry.fixesRecorded().isEmpty && registry.fixHistory().isEmpty)
    }
}
