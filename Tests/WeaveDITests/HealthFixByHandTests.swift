import Foundation
import Synchronization
import TestSupport
import Testing
@testable import WeaveDI

/// A fix by hand asked while another fix of its check runs (an automatic one, which the loop's
/// rounds may start at any time, or another by hand) waits for that one to end: it takes its
/// outcome when the check passed after it, or when it started a remedy that goes on, and runs
/// its own otherwise, unless its caller went away meanwhile.
@Suite struct HealthFixByHandTests {
    let clock = ManualHealthClock()

    /// How the first run of the fixture's fix ends, once past its gate.
    enum FirstRun {
        /// It heals the check.
        case heals
        /// It throws.
        case fails
        /// It starts a remedy that goes on (`FixRecord.remedyInProgress`), the check failing.
        case leavesARemedyGoing
        /// It has nothing to do (`FixNotApplicable`).
        case hasNothingToDo
    }

    /// The check `x`, failing until its fix heals it. The fix's first run waits at `gate`, then
    /// ends as `first` says; later runs heal at once.
    struct Fixture {
        let registry: UnifiedRegistry
        let gate = Gate()
        let runs = Locked(0)
        let events = Locked<[HealthEvent]>([])
        /// How many fixes by hand `fixByHand()` started have been answered.
        let answered = Locked(0)

        init(clock: ManualHealthClock, policy: AutoFixPolicy = AutoFixPolicy(), first: FirstRun) {
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
                    switch first {
                    case .heals: break
                    case .fails: throw ScriptedFix.FixError()
                    case .leavesARemedyGoing:
                        FixRecord.remedyInProgress { true }
                        return "started a remedy"
                    case .hasNothingToDo: throw FixNotApplicable("nothing to do")
                    }
                }
                healthy.withLock { $0 = true }
                return "fixed by run \(run)"
            }))
        }

        /// Asks for a fix of `x` by hand in a task of its own, counted in `answered` once answered.
        func fixByHand() -> Task<FixRecord, Never> {
            let (registry, answered) = (registry, answered)
            return Task {
                let record = await registry.fix("x")
                answered.withLock { $0 += 1 }
                return record
            }
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
        let byHand = fixture.fixByHand()
        try #require(await eventually { fixture.waiting == 1 })
        return (automatic, byHand)
    }

    /// Opens the gate, waits until the automatic fix has its answer, and returns the fix by
    /// hand's once both have ended.
    func openTheGate(
        _ fixture: Fixture, _ automatic: Task<HealthReport, Never>, _ byHand: Task<FixRecord, Never>
    ) async throws -> FixRecord {
        fixture.gate.open()
        try #require(await eventually { fixture.answered.withLock { $0 } == 1 })
        let record = await byHand.value
        _ = await automatic.value
        return record
    }

    @Test func aFixByHand_duringAnAutomaticFixThatHeals_takesItsOutcome_withoutRunningTheFixAgain() async throws {
        let fixture = Fixture(clock: clock, first: .heals)
        let (automatic, byHand) = try await byHandDuringAnAutomaticFix(fixture)
        let record = try await openTheGate(fixture, automatic, byHand)
        #expect(record.outcome == .succeeded && record.trigger == .manual && record.error == nil, "\(record)")
        #expect(record.message == "the automatic fix running as this one was asked healed the check; this one was not run: fixed by run 1")
        #expect(fixture.runs.withLock { $0 } == 1)
        // One fix ran: one attempt recorded, counted and told, the automatic one.
        let history = fixture.registry.fixHistory()
        #expect(history.map(\.outcome) == [.succeeded] && history.map(\.trigger) == [.automatic], "\(history)")
        let check = fixture.registry.report().checks[0]
        #expect(check.status == .healthy && check.fixesTried == 1 && check.lastFix == history.first)
        #expect(fixture.fixesTold == 1)
        #expect(fixture.waiting == 0)
    }

    /// Run again while the remedy the automatic fix started goes on, the fix would only find it
    /// going, and be recorded once more: the fix by hand is answered so instead.
    @Test func aFixByHand_duringAnAutomaticFixWhoseRemedyGoesOn_takesItsOutcome_withoutRunningTheFixAgain() async throws {
        let fixture = Fixture(clock: clock, first: .leavesARemedyGoing)
        let (automatic, byHand) = try await byHandDuringAnAutomaticFix(fixture)
        let record = try await openTheGate(fixture, automatic, byHand)
        #expect(record.outcome == .inProgress && record.trigger == .manual && record.error == nil, "\(record)")
        #expect(record.message == "the automatic fix running as this one was asked started a remedy that goes on; this one was not run: "
            + "started a remedy; the check still fails while it goes on: down")
        #expect(fixture.runs.withLock { $0 } == 1)
        let history = fixture.registry.fixHistory()
        #expect(history.map(\.outcome) == [.inProgress] && history.map(\.trigger) == [.automatic], "\(history)")
        let check = fixture.registry.report().checks[0]
        #expect(check.fixesTried == 1 && check.fixInProgress != nil, "\(check)")
        #expect(fixture.fixesTold == 1 && fixture.waiting == 0)
    }

    @Test func aFixByHand_duringAnAutomaticFixThatDoesNotHeal_runsItsOwnOnceThatOneEnds() async throws {
        let fixture = Fixture(clock: clock, first: .fails)
        let (automatic, byHand) = try await byHandDuringAnAutomaticFix(fixture)
        let record = try await openTheGate(fixture, automatic, byHand)
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

    /// An automatic fix with nothing to do is neither recorded nor told, but ends all the same
    /// for the fix by hand waiting for it, which then runs its own.
    @Test func aFixByHand_duringAnAutomaticFixWithNothingToDo_isWoken_andRunsItsOwn() async throws {
        let fixture = Fixture(clock: clock, first: .hasNothingToDo)
        let (automatic, byHand) = try await byHandDuringAnAutomaticFix(fixture)
        let record = try await openTheGate(fixture, automatic, byHand)
        #expect(record.outcome == .succeeded && record.trigger == .manual && record.message == "fixed by run 2", "\(record)")
        #expect(fixture.runs.withLock { $0 } == 2)
        #expect(fixture.registry.fixHistory() == [record])
        #expect(fixture.waiting == 0)
    }

    /// A check removed while a fix by hand waits for its fix: the fix goes on to its end, which
    /// answers the fix by hand as one asked then would be, no such check.
    @Test func aFixByHand_whoseCheckIsRemovedWhileItWaits_isAnsweredAsTheFixEnds() async throws {
        let fixture = Fixture(clock: clock, first: .fails)
        let (automatic, byHand) = try await byHandDuringAnAutomaticFix(fixture)
        #expect(fixture.registry.unregister("x"))
        #expect(fixture.waiting == 1)
        let record = try await openTheGate(fixture, automatic, byHand)
        #expect(record.outcome == .refused && record.message == #"no health check named "x"; checkNames lists the checks registered"#, "\(record)")
        #expect(fixture.runs.withLock { $0 } == 1)
        #expect(fixture.registry.fixHistory().map(\.trigger) == [.automatic])
        #expect(fixture.waiting == 0)
    }

    /// Two by hand (two people, or a script and a person) are no different: the second waits
    /// for the first, and takes its outcome when it healed.
    @Test func aSecondFixByHand_waitsForTheFirst_andTakesItsOutcomeWhenItHealed() async throws {
        let fixture = Fixture(clock: clock, first: .heals)
        let first = fixture.fixByHand()
        try #require(await eventually { fixture.gate.waiting == 1 })
        let second = fixture.fixByHand()
        try #require(await eventually { fixture.waiting == 1 })
        fixture.gate.open()
        // Both answered within a bounded wait: a second never woken fails the test, not hangs it.
        try #require(await eventually { fixture.answered.withLock { $0 } == 2 })
        let (firstRecord, secondRecord) = (await first.value, await second.value)
        #expect(firstRecord.outcome == .succeeded && firstRecord.message == "fixed by run 1")
        #expect(secondRecord.outcome == .succeeded && secondRecord.trigger == .manual, "\(secondRecord)")
        #expect(secondRecord.message == "the fix by hand running as this one was asked healed the check; this one was not run: fixed by run 1")
        #expect(fixture.runs.withLock { $0 } == 1)
        #expect(fixture.registry.fixHistory() == [firstRecord])
    }

    /// The wait ends with the attempt at its timeout: a fix that timed out and has not returned
    /// is not joined, so the fix by hand is then refused, as one asked after that is.
    @Test func aFixByHand_waitingForAnAutomaticFixThatTimesOut_isRefusedAtItsTimeout() async throws {
        var policy = AutoFixPolicy()
        policy.attemptTimeout = .seconds(5)
        let fixture = Fixture(clock: clock, policy: policy, first: .heals)
        // A round without auto-fix counts the failure; the automatic attempt is then started
        // alone, so that its timeout is the only sleeper on the clock.
        fixture.registry.autoFixEnabled = false
        await fixture.registry.runChecks()
        fixture.registry.autoFixEnabled = true
        try #require(await eventually { clock.sleeperCount == 0 })
        let automatic = Task { await fixture.registry.autoFixIfDue("x") }
        try #require(await eventually { fixture.gate.waiting == 1 })
        let byHand = fixture.fixByHand()
        try #require(await eventually { fixture.waiting == 1 })
        try await waitForSleepers(clock, 1)
        clock.advance(by: .seconds(5))
        // Answered within a bounded wait: a fix by hand the timeout does not wake fails the
        // test instead of hanging it (the gate stays shut until the end).
        try #require(await eventually { fixture.answered.withLock { $0 } == 1 })
        let record = await byHand.value
        await automatic.value
        #expect(record.outcome == .refused && record.trigger == .manual, "\(record)")
        #expect(record.message == #"the fix of "x" that timed out is still running 5 s after it started: none starts until it returns"#)
        #expect(fixture.registry.fixHistory().map(\.outcome) == [.timedOut, .refused])
        #expect(fixture.runs.withLock { $0 } == 1)
        fixture.gate.open()
    }

    static let callerGone = #"the fix of "x" was not run: its caller went away while it waited for a fix of "x" to end"#

    /// A caller that goes away while it waits (weavedid's `Fix` call at `control.callTimeout`,
    /// which cancels it) is answered at once, and no fix is run for it when the one it waited
    /// for ends without healing: it would be recorded, and take a place among the attempts the
    /// window allows, for a caller told the call failed.
    @Test func aFixByHand_whoseCallerGoesAwayWhileItWaits_isAnsweredAtOnce_andRunsNoFix() async throws {
        let fixture = Fixture(clock: clock, first: .fails)
        let (automatic, byHand) = try await byHandDuringAnAutomaticFix(fixture)
        byHand.cancel()
        // Answered while the automatic fix still runs, and no longer among the waiters.
        try #require(await eventually { fixture.answered.withLock { $0 } == 1 })
        #expect(fixture.waiting == 0 && fixture.gate.waiting == 1)
        let record = await byHand.value
        #expect(record.outcome == .refused && record.trigger == .manual && record.error == nil && record.duration == 0, "\(record)")
        #expect(record.message == Self.callerGone)
        fixture.gate.open()
        _ = await automatic.value
        #expect(fixture.runs.withLock { $0 } == 1)
        // Nothing ran for it: neither recorded, counted nor told.
        let history = fixture.registry.fixHistory()
        #expect(history.map(\.outcome) == [.failed] && history.map(\.trigger) == [.automatic], "\(history)")
        #expect(fixture.registry.fixesRecorded() == [.failed: 1])
        #expect(fixture.fixesTold == 1)
    }

    /// A caller that goes away as the fix it waited for ends unhealed (after that fix took its
    /// waiters out, before the wait returned) runs no fix either.
    @Test func aFixByHand_whoseCallerGoesAwayAsTheFixItWaitedForEndsUnhealed_runsNoFix() async throws {
        let fixture = Fixture(clock: clock, first: .fails)
        let (automatic, byHand) = try await byHandDuringAnAutomaticFix(fixture)
        // Told as the automatic fix ends, after its waiters were taken out, before they are resumed.
        fixture.registry.setEventObserver { event in
            if case .fixed = event { byHand.cancel() }
        }
        let record = try await openTheGate(fixture, automatic, byHand)
        #expect(record.outcome == .refused && record.message == Self.callerGone, "\(record)")
        #expect(fixture.runs.withLock { $0 } == 1)
        #expect(fixture.registry.fixHistory().map(\.trigger) == [.automatic])
        #expect(fixture.waiting == 0)
    }

    /// A caller already gone as it would wait does not: the fix running is not waited for.
    @Test func aFixByHand_whoseCallerIsGoneAsItWouldWait_isAnsweredAtOnce() async throws {
        let fixture = Fixture(clock: clock, first: .heals)
        let automatic = Task { await fixture.registry.runChecks() }
        try #require(await eventually { fixture.gate.waiting == 1 })
        let (registry, answered) = (fixture.registry, fixture.answered)
        let byHand = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let record = await registry.fix("x")
            answered.withLock { $0 += 1 }
            return record
        }
        try #require(await eventually { answered.withLock { $0 } == 1 })
        #expect(await byHand.value.message == Self.callerGone)
        #expect(fixture.waiting == 0)
        fixture.gate.open()
        _ = await automatic.value
        #expect(fixture.runs.withLock { $0 } == 1 && fixture.registry.fixHistory().map(\.trigger) == [.automatic])
    }

    /// A caller that goes away just as the fix it waits for ends gets one answer, whichever
    /// came first: its own refusal, or the end's (and then, unhealed, the fix it ran or the
    /// refusal it got as its caller was gone). A continuation resumed twice would crash.
    @Test func aFixByHand_whoseCallerGoesAwayAsTheFixEnds_getsOneAnswer() async throws {
        for _ in 0..<40 {
            let fixture = Fixture(clock: clock, first: .fails)
            let (automatic, byHand) = try await byHandDuringAnAutomaticFix(fixture)
            await withTaskGroup(of: Void.self) { group in
                group.addTask { fixture.gate.open() }
                group.addTask { byHand.cancel() }
            }
            let record = await byHand.value
            _ = await automatic.value
            #expect(record.message == Self.callerGone || record.message == "fixed by run 2", "\(record)")
            #expect(fixture.answered.withLock { $0 } == 1 && fixture.waiting == 0)
            #expect(fixture.registry.fixHistory().count == (record.message == Self.callerGone ? 1 : 2))
        }
    }
}

/// A fix by hand asked inside a fix of its own check (by that fix, or by another check's fix it
/// asked for) is refused at once: waiting for the fix running, its own caller, it would wait
/// until that one timed out, recorded so.
@Suite struct HealthFixInsideItsOwnTests {
    static let refusal = #"asked for inside a fix of "x": a fix cannot wait for itself to end"#

    /// Registers `x`, whose fix asks for the fix of `asks` and keeps the answer in `inner`, and
    /// `y`, whose fix asks for the fix of `x`; both checks fail.
    func registry(xAsksFor asks: String, inner: Locked<[FixRecord]>) -> UnifiedRegistry {
        let registry = UnifiedRegistry(clock: ManualHealthClock(), jitter: { $0 })
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: {
            let record = await registry.fix(asks)
            inner.withLock { $0.append(record) }
            return "asked for \(asks)"
        }))
        registry.register(HealthCheck(name: "y", run: { .unhealthy("down") }, fix: {
            let record = await registry.fix("x")
            inner.withLock { $0.append(record) }
            return "asked for x"
        }))
        return registry
    }

    /// The answer of a fix by hand of `x`, which comes without the clock moving (a fix that
    /// waited for itself would wait for ever): the test fails rather than hangs.
    static func fixOfXAnswered(_ registry: UnifiedRegistry) async throws -> FixRecord {
        let answered = Locked(false)
        let outer = Task {
            let record = await registry.fix("x")
            answered.withLock { $0 = true }
            return record
        }
        try #require(await eventually { answered.withLock { $0 } })
        return await outer.value
    }

    @Test func aFixThatAsksForItsOwn_isRefusedAtOnce() async throws {
        let inner = Locked<[FixRecord]>([])
        let registry = registry(xAsksFor: "x", inner: inner)
        let record = try await Self.fixOfXAnswered(registry)
        let asked = try #require(inner.withLock { $0 }.first)
        #expect(asked.outcome == .refused && asked.trigger == .manual && asked.message == Self.refusal, "\(asked)")
        #expect(record.outcome == .failed && record.message.hasPrefix("asked for x"), "\(record)")
        #expect(registry.fixHistory() == [asked, record])
    }

    @Test func aFixThatAsksForItsOwn_throughAnotherChecksFix_isRefusedAtOnce() async throws {
        let inner = Locked<[FixRecord]>([])
        let registry = registry(xAsksFor: "y", inner: inner)
        let record = try await Self.fixOfXAnswered(registry)
        // y's fix asked for x's, refused; x's fix asked for y's, which ran (and failed).
        let asked = inner.withLock { $0 }
        try #require(asked.count == 2)
        #expect(asked[0].check == "x" && asked[0].outcome == .refused && asked[0].message == Self.refusal, "\(asked[0])")
        #expect(asked[1].check == "y" && asked[1].outcome == .failed, "\(asked[1])")
        #expect(record.check == "x" && record.outcome == .failed, "\(record)")
        #expect(registry.fixHistory() == [asked[0], asked[1], record])
    }

    /// Another check's fix asked for inside a fix is run as any: only a fix of the same check
    /// would wait for itself.
    @Test func aFixThatAsksForAnotherChecksFix_runsIt() async throws {
        let inner = Locked<[FixRecord]>([])
        let registry = UnifiedRegistry(clock: ManualHealthClock(), jitter: { $0 })
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: {
            let record = await registry.fix("y")
            inner.withLock { $0.append(record) }
            return "asked for y"
        }))
        registry.register(HealthCheck(name: "y", run: { .healthy() }, fix: { "y fixed" }))
        await registry.fix("x")
        #expect(inner.withLock { $0 }.map(\.outcome) == [.succeeded])
        #expect(registry.fixHistory().map(\.check) == ["y", "x"])
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

/// A fix of every failing check (weavedid's `Fix` without a check) whose caller went away (the
/// call cut at `control.callTimeout`) starts no fix more.
@Suite struct HealthFixAllCancelTests {
    @Test func fixAll_whoseCallerWentAway_startsNoFix() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock(), jitter: { $0 })
        let runs = Locked(0)
        for name in ["a", "b"] {
            registry.register(HealthCheck(name: name, run: { .unhealthy("down") }, fix: {
                runs.withLock { $0 += 1 }
                return "tried"
            }))
        }
        registry.autoFixEnabled = false
        _ = await registry.runChecks()
        #expect(registry.report().checks.allSatisfy { $0.status == .unhealthy })
        let records = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await registry.fixAll()
        }.value
        #expect(records.isEmpty && runs.withLock { $0 } == 0, "\(records)")
        // Not cancelled, it fixes both.
        #expect(await registry.fixAll().count == 2 && runs.withLock { $0 } == 2)
    }

    /// A caller that goes away part-way (here during the fix of `a`, which cancels the task of
    /// the whole `fixAll`, as weavedid's `Fix` call cut at `control.callTimeout` does): the fix
    /// that had started, `a`'s, runs to its end and is answered; the next one, `b`'s, is not
    /// run. Only the check before the first fix was covered; this is the check between two.
    @Test func fixAll_whoseCallerWentAwayDuringAFix_startsNoFixAfterIt() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock(), jitter: { $0 })
        let ran = Locked<[String]>([])
        // The task of the whole `fixAll`, which `a`'s fix cancels: set before that task asks
        // for any fix (it waits for `go` first).
        let caller = Locked<Task<[FixRecord], Never>?>(nil)
        for name in ["a", "b"] {
            registry.register(HealthCheck(name: name, run: { .unhealthy("down") }, fix: {
                ran.withLock { $0.append(name) }
                if name == "a" { caller.withLock { $0?.cancel() } }
                return "tried"
            }))
        }
        registry.autoFixEnabled = false
        _ = await registry.runChecks()
        #expect(registry.report().checks.allSatisfy { $0.status == .unhealthy })
        let (go, start) = AsyncStream<Void>.makeStream()
        let task = Task {
            for await _ in go { break }
            return await registry.fixAll()
        }
        caller.withLock { $0 = task }
        start.yield()
        start.finish()
        let records = await task.value
        #expect(task.isCancelled)
        #expect(records.map(\.check) == ["a"] && ran.withLock { $0 } == ["a"], "\(records), ran \(ran.withLock { $0 })")
        #expect(records.first?.message.hasPrefix("tried") == true, "\(records)")
    }
}

/// `stop()` and `start(interval:)` cancel the loop's task, whose round may be inside a fix's
/// attempt, under a cancellation handler: cancelled under the registry's lock, a handler that
/// takes it would deadlock the thread, and the registry with it.
@Suite struct HealthLoopCancelTests {
    /// Starts and stops the loop (1 ms rounds) 3,000 times, at random moments, while its rounds
    /// attempt the fix of a failing check: what it catches is a deadlock of `stop()` or
    /// `start(interval:)` against a round's fix attempt (on code that cancelled the loop's task
    /// under the registry's lock while the attempt's cancellation handler took that lock, it hung
    /// 3 times out of 3). A timing bet it is, not a proof: a cycle of 0 to 200 µs may end before
    /// its round begins, so one cycle in 30 waits until a fix of its own was attempted before it
    /// stops the loop, and the end checks that rounds ran and that fixes were attempted. The
    /// policy lets a fix run every round (no backoff, no breaker, no cap), so that every round
    /// past the first goes through an attempt.
    @Test func stoppingTheLoop_whileItsRoundsAttemptFixes_neverHangs() async throws {
        var policy = AutoFixPolicy()
        policy.backoffBase = .zero
        policy.breakerThreshold = .max
        policy.window = .zero
        let registry = UnifiedRegistry(policy: policy, jitter: { $0 })
        registry.autoHealthEnabled = true
        let fixes = Locked(0)
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: {
            fixes.withLock { $0 += 1 }
            throw ScriptedFix.FixError()
        }))
        // On a thread of its own, detached: a deadlock leaves it blocked for good, and fails the
        // test instead of hanging the run.
        let done = Locked(false)
        let waitingForAFix = Locked(false)
        let gaveUp = Locked(false)
        Thread.detach {
            for cycle in 0..<3_000 {
                let before = fixes.withLock { $0 }
                registry.start(interval: .milliseconds(1))
                if cycle % 30 == 0 {
                    // Until this cycle's rounds attempted a fix, or the test gave up.
                    waitingForAFix.withLock { $0 = true }
                    while fixes.withLock({ $0 }) == before, !gaveUp.withLock({ $0 }) { usleep(100) }
                    waitingForAFix.withLock { $0 = false }
                }
                usleep(UInt32.random(in: 0...200))
                registry.stop()
                if gaveUp.withLock({ $0 }) { return }
            }
            done.withLock { $0 = true }
        }
        // Polls, not a time, as `eventually` counts (12,000 of 10 ms: 120 s at least): while
        // blocking tests beside this one hold the pool's threads, the loop's rounds wait, and
        // so do the polls.
        for _ in 0..<12_000 where !done.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        let waiting = waitingForAFix.withLock { $0 }
        gaveUp.withLock { $0 = true }
        // Required: a thread blocked in `stop()` may hold the registry's lock, which `report()`
        // below would wait for.
        try #require(done.withLock { $0 }, waiting ? "the loop's rounds attempted no fix" : "start() or stop() hung")
        let check = try #require(registry.report().checks.first)
        #expect(check.runsStarted > 100, "\(check)")
        let attempts = fixes.withLock { $0 }
        #expect(attempts >= 100, "\(attempts) fixes attempted")
        #expect(registry.fixHistory().contains { $0.trigger == .automatic && $0.outcome == .failed }, "\(registry.fixHistory())")
    }
}
