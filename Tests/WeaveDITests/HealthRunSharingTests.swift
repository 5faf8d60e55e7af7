import Glibc
import Synchronization
import TestSupport
import Testing
@testable import WeaveDI

/// What a task started by a test answered, once it has: read without awaiting the task, so that
/// a test can wait for it with `eventually` and fail, rather than hang, when it never comes.
final class Answered<Value: Sendable>: Sendable {
    private let value = Locked<Value?>(nil)
    var answer: Value? { value.withLock { $0 } }
    init(_ work: @escaping @Sendable () async -> Value) {
        Task { [value] in
            let answer = await work()
            value.withLock { $0 = answer }
        }
    }
}

/// A check whose runs are counted and numbered, each able to be held by a gate of its own.
final class CountedCheck: Sendable {
    private let state = Locked((runs: 0, gates: [Int: Gate]()))
    var runs: Int { state.withLock { $0.runs } }

    /// Holds run `run` (from 1) at its start until the returned gate opens.
    func hold(run: Int) -> Gate {
        let gate = Gate()
        state.withLock { $0.gates[run] = gate }
        return gate
    }

    /// Runs: counts itself, waits at its gate if it has one, and answers `result(run)`.
    func run(_ result: @Sendable (Int) -> HealthCheckResult = { .healthy("run \($0)") }) async -> HealthCheckResult {
        let (run, gate) = state.withLock { state in
            state.runs += 1
            return (state.runs, state.gates[state.runs])
        }
        await gate?.wait()
        return result(run)
    }
}

/// Runs of one check shared by its callers: one at a time; a caller that comes while one goes
/// shares the next one with everyone who came meanwhile, and never takes the result of a run
/// that started before it asked.
@Suite struct HealthRunSharingTests {
    let clock = ManualHealthClock()

    func registry(_ policy: AutoFixPolicy = AutoFixPolicy()) -> UnifiedRegistry {
        UnifiedRegistry(clock: clock, policy: policy, jitter: { $0 })
    }

    /// How many callers of the check named `name` wait for an answer: those of the run going
    /// and those behind it.
    /// A registry whose check `x` (timeout 1,000 s) has a run going, held by `gate`, for
    /// `look`, a round that only looks: the run a check registered again meanwhile finds.
    func aRunOfACheckWithALongTimeoutGoing() async throws -> (UnifiedRegistry, Gate, Answered<HealthReport>) {
        let registry = registry()
        let gate = Gate()
        registry.register(HealthCheck(name: "x", timeout: .seconds(1_000)) {
            await gate.wait()
            return .healthy("old")
        })
        let look = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { gate.waiting == 1 })
        return (registry, gate, look)
    }

    func waiting(_ registry: UnifiedRegistry, _ name: String) -> Int {
        registry.state.withLock { ($0.runsInFlight[name]?.callers.count ?? 0) + ($0.nextRuns[name]?.callers.count ?? 0) }
    }

    @Test func twentyCallersWhileARunIsHeld_shareOneRunAfterIt() async throws {
        let registry = registry()
        let check = CountedCheck()
        let first = check.hold(run: 1)
        registry.register(HealthCheck(name: "x") { await check.run() })
        let leader = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { first.waiting == 1 })
        // Rounds that look, rounds that may fix, and runCheck: all share the next run.
        let callers = (0..<20).map { index in
            Answered { () -> String? in
                switch index % 3 {
                case 0: await registry.runChecks(fixing: false).checks.first?.message
                case 1: await registry.runChecks().checks.first?.message
                default: await registry.runCheck("x")?.message
                }
            }
        }
        try #require(await eventually { waiting(registry, "x") == 21 || check.runs > 1 })
        #expect(check.runs == 1)
        first.open()
        try #require(await eventually { leader.answer != nil && callers.allSatisfy { $0.answer != nil } })
        #expect(check.runs == 2)
        #expect(callers.compactMap { $0.answer ?? nil } == Array(repeating: "run 2", count: 20))
    }

    /// `runsStarted` counts each run once, however many callers share it: twenty callers that
    /// come while a run is held add no run beside it and one run after it, not twenty.
    @Test func runsStarted_countsASharedRunOnce_notItsCallers() async throws {
        let registry = registry()
        let check = CountedCheck()
        let first = check.hold(run: 1)
        registry.register(HealthCheck(name: "x") { await check.run() })
        func runsStarted() -> Int? { registry.report().checks.first?.runsStarted }
        #expect(runsStarted() == 0)
        let leader = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { first.waiting == 1 })
        #expect(runsStarted() == 1)
        let callers = (0..<20).map { index in
            Answered { () -> Int? in
                index.isMultiple(of: 2)
                    ? await registry.runChecks(fixing: false).checks.first?.runsStarted : await registry.runCheck("x")?.runsStarted
            }
        }
        try #require(await eventually { waiting(registry, "x") == 21 || runsStarted() != 1 })
        #expect(runsStarted() == 1, "twenty callers wait behind the held run, and start none beside it")
        first.open()
        try #require(await eventually { leader.answer != nil && callers.allSatisfy { $0.answer != nil } })
        #expect(runsStarted() == 2)
        #expect(runsStarted() == check.runs)
        // Each caller's report counts the run it shared.
        #expect(callers.compactMap { $0.answer ?? nil } == Array(repeating: 2, count: 20))
    }

    /// A run that times out counts as started; callers answered while it still goes (the check
    /// is not run again until it returns) add nothing; the runs after it count on.
    @Test func runsStarted_countsARunThatTimedOut_andNoneForItsStillRunningAnswers() async throws {
        let registry = registry()
        let check = CountedCheck()
        let stuck = check.hold(run: 1)
        registry.register(HealthCheck(name: "stuck", timeout: .seconds(2)) { await check.run() })
        func runsStarted() -> Int? { registry.report().checks.first?.runsStarted }
        let leader = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { stuck.waiting == 1 })
        try await waitForSleepers(clock, 1)
        clock.advance(by: .seconds(2))
        try #require(await eventually { leader.answer != nil })
        #expect(leader.answer?.checks[0].message.hasPrefix("timed out after 2 s") == true)
        let late = await registry.runChecks(fixing: false)
        #expect(late.checks[0].message.hasPrefix("timed out after 2 s, and still running") == true)
        #expect(late.checks[0].runsStarted == 1)
        #expect(runsStarted() == 1)
        stuck.open()
        try #require(await eventually { registry.state.withLock { $0.runsInFlight["stuck"] == nil } })
        #expect(await registry.runChecks(fixing: false).checks[0].runsStarted == 2)
        #expect(check.runs == 2)
    }

    /// A program that changes what a check looks at and then runs it (`runCheck`, as weavedid
    /// does as a job's run ends) gets a run that started after it asked, never the result of
    /// the run going then, which looked before the change.
    @Test func aCallerThatComesDuringARun_getsARunThatStartedAfterIt() async throws {
        let registry = registry()
        let broken = Atomic<Bool>(false)
        let check = CountedCheck()
        let first = check.hold(run: 1)
        registry.register(HealthCheck(name: "file") {
            let seen = broken.load(ordering: .relaxed)
            return await check.run { _ in seen ? .degraded("cannot write") : .healthy("written") }
        })
        let round = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { first.waiting == 1 })  // the round's run has looked: all was well
        broken.store(true, ordering: .relaxed)
        let asked = Answered { await registry.runCheck("file") }
        try #require(await eventually { waiting(registry, "file") == 2 })
        first.open()
        try #require(await eventually { asked.answer != nil && round.answer != nil })
        #expect(asked.answer??.status == .degraded)
        #expect(asked.answer??.message == "cannot write")
        #expect(check.runs == 2)
        let report = registry.report().checks[0]
        #expect(report.message == "cannot write" && report.consecutiveFailures == 1)
    }

    /// A run shared by a round that may fix and rounds that only look counts toward auto-fix's
    /// threshold: a round that may fix asked for it. One that only lookers share does not.
    @Test func aSharedRun_countsTowardTheThreshold_whenARoundThatMayFixAskedForIt() async throws {
        let registry = registry()
        let fix = ScriptedFix()
        let check = CountedCheck()
        let first = check.hold(run: 1)
        registry.register(HealthCheck(name: "x", failureThreshold: 2, run: { await check.run { _ in .unhealthy("down") } }, fix: {
            try fix.run()
        }))
        func fixingRoundFailures() -> Int { registry.state.withLock { $0.checks["x"]!.fixingRoundFailures } }
        // Held: a look; behind it, a look, a round that may fix, and a look again.
        let looking = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { first.waiting == 1 })
        let second = check.hold(run: 2)
        var lookers = [Answered { await registry.runChecks(fixing: false) }]
        try #require(await eventually { waiting(registry, "x") == 2 })
        let fixing = Answered { await registry.runChecks() }
        try #require(await eventually { waiting(registry, "x") == 3 })
        lookers.append(Answered { await registry.runChecks(fixing: false) })
        try #require(await eventually { waiting(registry, "x") == 4 })
        first.open()
        try #require(await eventually { second.waiting == 1 })
        #expect(fixingRoundFailures() == 0)  // the first run only looked
        second.open()
        try #require(await eventually { looking.answer != nil && fixing.answer != nil && lookers.allSatisfy { $0.answer != nil } })
        #expect(check.runs == 2)
        #expect(fixingRoundFailures() == 1)
        #expect(fix.runs == 0)  // one failure of the two the threshold asks
        // A run that only lookers share counts nothing.
        let third = check.hold(run: 3)
        let held = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { third.waiting == 1 })
        let more = (0..<3).map { _ in Answered { await registry.runChecks(fixing: false) } }
        try #require(await eventually { waiting(registry, "x") == 4 })
        third.open()
        try #require(await eventually { held.answer != nil && more.allSatisfy { $0.answer != nil } })
        #expect(check.runs == 4)
        #expect(fixingRoundFailures() == 1)
        await registry.runChecks()  // the second failure a round that may fix saw: the fix runs
        #expect(fix.runs == 1)
    }

    /// A caller waits no longer than the check's timeout: one whose turn came behind a run and
    /// whose run still goes at its timeout is answered so, unrecorded (the run is within its
    /// own timeout, and its result is recorded when it returns).
    @Test func aCallerWhoseSharedRunOutlastsItsTimeout_isAnsweredAtItsTimeout() async throws {
        let registry = registry()
        let check = CountedCheck()
        let first = check.hold(run: 1)
        let second = check.hold(run: 2)
        registry.register(HealthCheck(name: "slow", timeout: .seconds(2)) { await check.run() })
        let leader = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { first.waiting == 1 })
        try await waitForSleepers(clock, 1)  // the first run's timer: due at 2 s
        clock.advance(by: .milliseconds(500))
        let caller = Answered { await registry.runChecks(fixing: false) }  // at 0.5 s: its time is up at 2.5 s
        try #require(await eventually { waiting(registry, "slow") == 2 })
        clock.advance(by: .seconds(1))
        first.open()  // at 1.5 s: the caller's run starts
        try #require(await eventually { leader.answer != nil && second.waiting == 1 })
        #expect(leader.answer?.checks[0].message == "run 1")
        try #require(await eventually { clock.sleeperCount == 1 })  // the second run's timer
        clock.advance(by: .seconds(1))  // 2.5 s: the caller's timeout; the run's is at 3.5 s
        try #require(await eventually { caller.answer != nil })
        let answered = try #require(caller.answer?.checks[0])
        #expect(answered.status == .unhealthy)
        #expect(answered.message == "timed out after 2 s waiting for its run, which started 1 s after the call, once the run going "
            + "then had ended, and is still going (its result is recorded when it returns)")
        #expect(answered.duration == 2 && answered.consecutiveFailures == 1)
        // Not recorded: the state says what the last run that returned found.
        #expect(registry.report().checks[0].message == "run 1")
        #expect(registry.report().checks[0].consecutiveFailures == 0)
        second.open()
        try #require(await eventually { registry.report().checks[0].message == "run 2" })
        #expect(registry.report().checks[0].status == .healthy)
        #expect(check.runs == 2)
    }

    /// Callers waiting behind a run that passes its timeout are answered then, as a caller that
    /// comes after it is: the check is not run again until that run returns. They share that
    /// answer as they would have shared a run: it is recorded once.
    @Test func callersBehindARunThatTimesOut_areAnsweredAtItsTimeout_recordedOnce() async throws {
        let registry = registry()
        let check = CountedCheck()
        let stuck = check.hold(run: 1)
        registry.register(HealthCheck(name: "stuck", timeout: .seconds(2)) { await check.run() })
        let leader = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { stuck.waiting == 1 })
        try await waitForSleepers(clock, 1)
        clock.advance(by: .seconds(1))
        let callers = (0..<10).map { _ in Answered { await registry.runChecks(fixing: false) } }
        try #require(await eventually { waiting(registry, "stuck") == 11 })
        clock.advance(by: .seconds(1))
        try #require(await eventually { leader.answer != nil && callers.allSatisfy { $0.answer != nil } })
        #expect(leader.answer?.checks[0].message.hasPrefix("timed out after 2 s") == true)
        for caller in callers {
            #expect(caller.answer?.checks[0].message
                == "timed out after 2 s, and still running 2 s after it started: not run again until it returns")
        }
        #expect(registry.report().checks[0].consecutiveFailures == 2)  // the run's timeout, and the callers' answer
        #expect(check.runs == 1)
        stuck.open()
        try #require(await eventually { registry.state.withLock { $0.runsInFlight["stuck"] == nil } })
        #expect(await registry.runChecks(fixing: false).checks[0].message == "run 2")
    }

    /// A check removed while its run goes and callers wait behind it: they are all answered at
    /// once (the check is gone from their reports), and a check registered again under the name
    /// runs at once, beside the old run still going.
    @Test func aCheckRemovedWhileItsRunGoes_answersItsCallersAtOnce() async throws {
        let registry = registry()
        let check = CountedCheck()
        let first = check.hold(run: 1)
        registry.register(HealthCheck(name: "job.x", timeout: .seconds(1_000)) { await check.run { _ in .unhealthy("old") } })
        registry.register(HealthCheck(name: "other") { .healthy("fine") })
        let leader = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { first.waiting == 1 })
        let callers = (0..<5).map { _ in Answered { await registry.runChecks(fixing: false) } }
        let asked = Answered { await registry.runCheck("job.x") }
        try #require(await eventually { waiting(registry, "job.x") == 7 })
        #expect(registry.unregister("job.x"))
        try #require(await eventually { leader.answer != nil && asked.answer != nil && callers.allSatisfy { $0.answer != nil } })
        #expect(callers.allSatisfy { $0.answer?.checks.map(\.name) == ["other"] })
        #expect(asked.answer! == nil)
        registry.register(HealthCheck(name: "job.x") { .healthy("the new one") })
        #expect(await registry.runCheck("job.x")?.message == "the new one")
        #expect(check.runs == 1)
        first.open()
    }

    /// A fix's run of its check, to judge it, waits for the run going (a look someone asked
    /// for just before) and then for its own, whose timeout counts from its own start: a fix
    /// that healed the check is judged by that run, not timed out for having waited. Before, the
    /// wait counted from the fix's return, and the fix was recorded failed (backoff, breaker).
    @Test func aFixsRunOfItsCheck_behindALook_judgesTheFixByItsOwnRun() async throws {
        let registry = registry()
        let check = CountedCheck()
        let first = check.hold(run: 1)
        let second = check.hold(run: 2)
        let fix = ScriptedFix()
        fix.succeed(true)
        registry.register(HealthCheck(name: "x", timeout: .seconds(2), run: { await check.run() }, fix: { try fix.run() }))
        let look = Answered { await registry.runChecks(fixing: false) }  // t=0: run 1, held
        try #require(await eventually { first.waiting == 1 })
        let fixed = Answered { await registry.fix("x") }  // the fix returns; its run waits behind run 1
        try #require(await eventually { fix.runs == 1 && waiting(registry, "x") == 2 })
        clock.advance(by: .milliseconds(1_500))
        first.open()  // t=1.5: run 1 returns; run 2, the fix's, starts, held
        try #require(await eventually { look.answer != nil && second.waiting == 1 })
        clock.advance(by: .milliseconds(1_000))  // t=2.5: past 2 s from the fix's return, within run 2's time
        #expect(await eventually { clock.sleeperCount == 1 })
        #expect(fixed.answer == nil, "\(String(describing: fixed.answer))")
        second.open()
        try #require(await eventually { fixed.answer != nil })
        #expect(fixed.answer?.outcome == .succeeded, "\(String(describing: fixed.answer))")
        #expect(registry.report().checks[0].status == .healthy)
        #expect(registry.report().checks[0].message == "run 2")
    }

    /// A check registered again with a shorter timeout while a run of the one it replaced goes:
    /// a caller waiting behind that run is answered at its own timeout, not at the old run's.
    @Test func aCallerBehindARunOfAReplacedCheck_isAnsweredAtItsOwnTimeout() async throws {
        let (registry, gate, leader) = try await aRunOfACheckWithALongTimeoutGoing()
        registry.register(HealthCheck(name: "x", timeout: .seconds(2)) { .healthy("new") })
        let caller = Answered { await registry.runCheck("x") }
        try #require(await eventually { waiting(registry, "x") == 2 && clock.sleeperCount == 2 })
        clock.advance(by: .seconds(2))
        #expect(await eventually { caller.answer != nil }, "a caller with a 2 s timeout still waits")
        #expect(caller.answer??.message.hasPrefix("timed out after 2 s waiting behind a run that started before the call") == true,
                "\(String(describing: caller.answer))")
        #expect(leader.answer == nil)
        gate.open()
        #expect(await eventually { leader.answer != nil })
        #expect(registry.report().checks[0].message == "old")
    }

    /// The changes of one check are told in the order of its runs: the next run starts after
    /// the change of the one before it was told (an observer that takes its time, as a log
    /// write may, included).
    @Test func transitionsOfOneCheck_areToldInTheOrderOfItsRuns() async throws {
        let registry = registry()
        let check = CountedCheck()
        let first = check.hold(run: 1)
        registry.register(HealthCheck(name: "x") {
            await check.run { $0 == 1 ? .unhealthy("down") : .healthy("up") }
        })
        let told = Locked<[HealthStatus]>([])
        registry.setEventObserver { event in
            guard case let .transition(_, _, to, _) = event else { return }
            if to == .unhealthy {
                // Slow on the first change: time for run 2 to be recorded, were it started.
                let until = ContinuousClock.now + .milliseconds(500)
                while ContinuousClock.now < until, registry.state.withLock({ $0.checks["x"]!.status }) != .healthy { usleep(1_000) }
            }
            told.withLock { $0.append(to) }
        }
        let a = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { first.waiting == 1 })
        let b = Answered { await registry.runChecks(fixing: false) }
        try #require(await eventually { waiting(registry, "x") == 2 })
        first.open()
        try #require(await eventually { a.answer != nil && b.answer != nil && told.withLock { $0.count } == 2 })
        #expect(told.withLock { $0 } == [.unhealthy, .healthy])
    }

    /// A fix's re-run behind a run of the check it replaced, which has a longer timeout, is
    /// answered at its own timeout too: the fix is not held until the old run's.
    @Test func aFixsRunBehindARunOfAReplacedCheck_isAnsweredAtItsOwnTimeout() async throws {
        let (registry, gate, look) = try await aRunOfACheckWithALongTimeoutGoing()
        let fix = ScriptedFix()
        fix.succeed(true)
        registry.register(HealthCheck(name: "x", timeout: .seconds(2), run: { .healthy("new") }, fix: { try fix.run() }))
        let fixed = Answered { await registry.fix("x") }
        try #require(await eventually { fix.runs == 1 && waiting(registry, "x") == 2 && clock.sleeperCount == 2 })
        clock.advance(by: .seconds(2))
        #expect(await eventually { fixed.answer != nil }, "the fix is held by the old run")
        #expect(fixed.answer?.message.contains("waiting behind a run that started before the call") == true,
                "\(String(describing: fixed.answer))")
        gate.open()
        #expect(await eventually { look.answer != nil })
    }

    /// The timers of callers waiting behind a run of a replaced check end once the callers are
    /// answered by their run: none is left sleeping out its timeout, holding the registry.
    @Test func callersAnsweredByTheirRun_leaveNoTimerSleeping() async throws {
        let (registry, gate, look) = try await aRunOfACheckWithALongTimeoutGoing()
        registry.register(HealthCheck(name: "x", timeout: .seconds(100)) { .healthy("new") })
        let callers = (0..<20).map { _ in Answered { await registry.runCheck("x") } }
        try #require(await eventually { waiting(registry, "x") == 21 && clock.sleeperCount == 21 })
        gate.open()
        try #require(await eventually { callers.allSatisfy { $0.answer != nil } && look.answer != nil })
        #expect(callers.allSatisfy { $0.answer??.message == "new" })
        #expect(await eventually { clock.sleeperCount == 0 }, "\(clock.sleeperCount) timers still sleeping")
    }
}
