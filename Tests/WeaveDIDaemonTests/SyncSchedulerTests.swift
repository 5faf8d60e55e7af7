import Foundation
import Synchronization
import TestSupport
import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// The runs going at once across the jobs whose scripts share it, and the most there were.
final class RunsAtOnce: Sendable {
    private let state = Locked((now: 0, peak: 0))

    var peak: Int { state.withLock { $0.peak } }

    func begin() { state.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) } }
    func end() { state.withLock { $0.now -= 1 } }
}

/// A job kind whose runs do what the test says: wait at a gate, return scripted outcomes.
final class JobScript: Sendable {
    private let state = Locked((
        outcomes: [SyncResult](), runs: 0, concurrent: 0, maxConcurrent: 0, prepared: 0, insideAFix: 0, cancelled: 0, open: true))
    private let gate = Locked<[CheckedContinuation<Void, Never>]>([])
    /// Whether a cancelled run goes on waiting at the gate (a run stuck in a step).
    private let deaf: Bool
    /// Counts the script's runs with those of other scripts, if given.
    private let shared: RunsAtOnce?
    /// Whether its job's `prepareForRetry` prepares something (says "prepared"), or nothing.
    let prepares: Bool
    /// What its job's `prepareForRetry` throws, if anything.
    let preparing: (any Error & Sendable)?

    init(
        _ outcomes: [SyncResult] = [.success], open: Bool = true, deafToCancellation: Bool = false, prepares: Bool = true,
        preparing: (any Error & Sendable)? = nil, sharing shared: RunsAtOnce? = nil
    ) {
        deaf = deafToCancellation
        self.shared = shared
        self.prepares = prepares
        self.preparing = preparing
        state.withLock { $0.outcomes = outcomes; $0.open = open }
    }

    var runs: Int { state.withLock { $0.runs } }
    var maxConcurrent: Int { state.withLock { $0.maxConcurrent } }
    var prepared: Int { state.withLock { $0.prepared } }
    /// The runs that found themselves inside a fix's attempt (`FixRecord.attemptTimeLeft`).
    var runsInsideAFix: Int { state.withLock { $0.insideAFix } }
    /// The runs cancelled while they waited at the gate.
    var cancelledAtTheGate: Int { state.withLock { $0.cancelled } }

    /// Makes the runs from now on wait at the gate, until `release()`.
    func close() {
        state.withLock { $0.open = false }
    }

    func release() {
        state.withLock { $0.open = true }
        gate.withLock { waiters in waiters.forEach { $0.resume() }; waiters = [] }
    }

    func run(_ context: SyncRunContext) async -> SyncOutcome {
        let result: SyncResult = state.withLock { state in
            state.runs += 1
            if FixRecord.attemptTimeLeft != nil { state.insideAFix += 1 }
            state.concurrent += 1
            state.maxConcurrent = max(state.maxConcurrent, state.concurrent)
            return state.outcomes.count > 1 ? state.outcomes.removeFirst() : state.outcomes[0]
        }
        shared?.begin()
        defer {
            shared?.end()
            state.withLock { $0.concurrent -= 1 }
        }
        _ = try? context.session.require(RunScoped.self)
        context.progress(SyncProgress(filesDone: 1, filesTotal: 2, bytesDone: 10, bytesTotal: 20))
        if !state.withLock({ $0.open }) {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLock { $0.open }
                    if resumeNow { continuation.resume() } else { gate.withLock { $0.append(continuation) } }
                }
            } onCancel: {
                self.state.withLock { $0.cancelled += 1 }
                if !self.deaf { self.release() }
            }
        }
        if Task.isCancelled { return SyncOutcome(result: .cancelled, message: "stopped at a safe point") }
        var outcome = SyncOutcome(result: result, message: result == .failed ? "scripted failure" : nil)
        outcome.copied = 1
        outcome.bytes = 10
        return outcome
    }

    func prepare() { state.withLock { $0.prepared += 1 } }
}

/// A session-scoped service a run resolves; counts its disposals.
final class RunScoped: Disposable {
    static let disposed = Atomic<Int>(0)
    func dispose() async { RunScoped.disposed.add(1, ordering: .relaxed) }
}

struct ScriptedJob: SyncJob {
    let script: JobScript
    func run(_ context: SyncRunContext) async -> SyncOutcome { await script.run(context) }
    func prepareForRetry() async throws -> String? {
        script.prepare()
        if let error = script.preparing { throw error }
        return script.prepares ? "prepared" : nil
    }
}

@Suite(.serialized) struct SyncSchedulerTests {
    static let scripts = Locked<[String: JobScript]>([:])
    /// The state directory of the test's scheduler, removed when the test ends. (A default
    /// argument's would be removed as `scheduler` returns, and the scheduler's first write of
    /// its state file would make it again, to be left in /tmp.)
    let state = TemporaryDirectory()

    init() {
        SyncJobKinds.register("scripted") { job, _ in ScriptedJob(script: SyncSchedulerTests.scripts.withLock { $0[job.name]! }) }
    }

    func scheduler(
        _ jobs: [(String, JobScript, (inout DaemonConfiguration.Job) -> Void)], maxConcurrent: Int = 2,
        state: TemporaryDirectory? = nil, cancelledRunWait: Duration = .seconds(2)
    ) -> (SyncScheduler, UnifiedRegistry, WeaveDI.Container) {
        let state = state ?? self.state
        var configuration = DaemonConfiguration(source: .file(path: "/test.json"), environment: [:], workingDirectory: state.path)
        configuration.stateDirectory = state.path
        configuration.sync.maxConcurrentRuns = maxConcurrent
        configuration.sync.jobs = jobs.map { name, script, edit in
            SyncSchedulerTests.scripts.withLock { $0[name] = script }
            var job = DaemonConfiguration.Job(name: name)
            job.kind = "scripted"
            job.interval = .seconds(3600)
            edit(&job)
            return job
        }
        let container = WeaveDI.Container()
        container.register(RunScoped.self, scope: .session) { RunScoped() }
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let log = DaemonLog(filter: LogFilter(defaultLevel: .off, overrides: [:]), journald: false)
        let scheduler = SyncScheduler(
            store: ConfigurationStore(configuration), container: container, log: log, registry: registry, cancelledRunWait: cancelledRunWait)
        return (scheduler, registry, container)
    }

    @Test func runAtStart_runsOnce_inItsOwnSession_whichIsClosedAfter() async throws {
        let script = JobScript()
        let (scheduler, _, container) = scheduler([("a", script, { $0.runAtStart = true })])
        let disposedBefore = RunScoped.disposed.load(ordering: .relaxed)
        try await scheduler.start()
        #expect(await eventually { (await scheduler.jobs()).first?[member: "lastRun"]?[member: "result"]?.stringValue == "success" })
        #expect(script.runs == 1)
        #expect(container.openSessions.isEmpty)
        #expect(RunScoped.disposed.load(ordering: .relaxed) == disposedBefore + 1)
        await scheduler.stop()
    }

    @Test func aTickDuringARun_isSkippedAndCounted() async throws {
        let script = JobScript(open: false)
        let (scheduler, _, _) = scheduler([("slow", script, { $0.runAtStart = true; $0.interval = .milliseconds(20) })])
        try await scheduler.start()
        #expect(await eventually { (await scheduler.jobs()).first?[member: "skippedRuns"]?.intValue ?? 0 >= 2 })
        // The run may still wait for the state file's writes before its work (ticks are
        // skipped from its launch): it begins once, however many ticks came meanwhile.
        #expect(await eventually { script.runs == 1 })
        #expect(script.runs == 1)
        let manual = try await scheduler.runNow("slow") { _ in }
        #expect(manual.result == .skipped)
        script.release()
        await scheduler.stop()
    }

    /// Four jobs that run at start, under a cap of two runs at once: two run, the other two
    /// wait for a slot (queued) until one ends; never more than two go at once.
    @Test func runsAtOnce_areCapped() async throws {
        let runsAtOnce = RunsAtOnce()
        let scripts = (0..<4).map { _ in JobScript(open: false, sharing: runsAtOnce) }
        let (scheduler, _, _) = scheduler(scripts.enumerated().map { ("j\($0.offset)", $0.element, { $0.runAtStart = true }) }, maxConcurrent: 2)
        try await scheduler.start()
        // Every job either runs (at its gate) or is queued for a slot.
        func queued() async -> Int { await scheduler.jobs().filter { $0[member: "queued"].map { !$0.isNull } == true }.count }
        #expect(await eventually { await scripts.map(\.runs).reduce(0, +) + queued() == 4 })
        #expect(scripts.map(\.runs).reduce(0, +) == 2)
        #expect(await queued() == 2)
        #expect(runsAtOnce.peak == 2)
        scripts.forEach { $0.release() }
        #expect(await eventually { scripts.map(\.runs).reduce(0, +) == 4 })
        #expect(runsAtOnce.peak == 2)
        await scheduler.stop()
    }

    /// Three jobs that run at start and wait at their gates, under a cap of `cap` runs at
    /// once, all of them started; then a reload to `newCap`.
    func threeWaitingJobs(cap: Int, reloadedTo newCap: Int) async throws -> (SyncScheduler, [JobScript]) {
        let scripts = (0..<3).map { _ in JobScript(open: false) }
        let (scheduler, _, _) = scheduler(scripts.enumerated().map { ("w\($0.offset)", $0.element, { $0.runAtStart = true }) }, maxConcurrent: cap)
        try await scheduler.start()
        #expect(await eventually { scripts.map(\.runs).reduce(0, +) == cap })
        var changed = await scheduler.store.current
        changed.sync.maxConcurrentRuns = newCap
        try await scheduler.reload(changed)
        return (scheduler, scripts)
    }

    /// `ListJobs` lists the jobs in the configuration's order, whatever reloads removed and
    /// added them back meanwhile, or added between others.
    @Test func jobs_areListedInTheConfigurationsOrder_afterReloads() async throws {
        let (scheduler, _, _) = scheduler(["a", "b", "c"].map { ($0, JobScript(), { _ in }) })
        try await scheduler.start()
        let configuration = await scheduler.store.current
        var withoutA = configuration
        withoutA.sync.jobs.removeFirst()
        try await scheduler.reload(withoutA)
        #expect(await scheduler.jobs().map { $0[member: "name"]?.stringValue ?? "?" } == ["b", "c"])
        try await scheduler.reload(configuration)
        #expect(await scheduler.jobs().map { $0[member: "name"]?.stringValue ?? "?" } == ["a", "b", "c"])
        var withD = configuration
        var d = DaemonConfiguration.Job(name: "d")
        d.kind = "scripted"
        d.interval = .seconds(3600)
        SyncSchedulerTests.scripts.withLock { $0["d"] = JobScript() }
        withD.sync.jobs.insert(d, at: 1)
        try await scheduler.reload(withD)
        #expect(await scheduler.jobs().map { $0[member: "name"]?.stringValue ?? "?" } == ["a", "d", "b", "c"])
        #expect(await scheduler.renderMetrics().contains(#"weavedi_sync_queued{job="a"} 0\#nweavedi_sync_queued{job="d"} 0"#))
        await scheduler.stop()
    }

    @Test func aReloadRaisingTheCap_startsRunsWaitingForASlot() async throws {
        let (scheduler, scripts) = try await threeWaitingJobs(cap: 1, reloadedTo: 3)
        #expect(await eventually { scripts.map(\.runs).reduce(0, +) == 3 })  // not one at a time
        scripts.forEach { $0.release() }
        await scheduler.stop()
    }

    @Test func aReloadLoweringTheCap_holdsWaitingRunsUntilUnderIt() async throws {
        let (scheduler, scripts) = try await threeWaitingJobs(cap: 2, reloadedTo: 1)
        let first = try #require(scripts.first { $0.runs == 1 })
        first.release()
        try? await Task.sleep(for: .milliseconds(200))
        #expect(scripts.map(\.runs).reduce(0, +) == 2)  // one run is still going: the cap is full
        scripts.filter { $0 !== first }.forEach { $0.release() }
        #expect(await eventually { scripts.map(\.runs).reduce(0, +) == 3 })
        await scheduler.stop()
    }

    /// A scheduler whose one job, `name`, was removed by a reload while its run (deaf to
    /// cancellation) is still going; and the configuration that had it.
    func removedWhileItsRunIsStuck(
        _ name: String
    ) async throws -> (SyncScheduler, WeaveDI.Container, JobScript, DaemonConfiguration) {
        let stuck = JobScript(open: false, deafToCancellation: true)
        let (scheduler, _, container) = scheduler([(name, stuck, { $0.runAtStart = true })])
        try await scheduler.start()
        #expect(await eventually { stuck.runs == 1 })
        let configuration = await scheduler.store.current
        var without = configuration
        without.sync.jobs = []
        try await scheduler.reload(without)
        return (scheduler, container, stuck, configuration)
    }

    @Test func aRunOfARemovedJob_keepsAJobOfTheSameNameAddedBackWaiting_andIsNotBookedToIt() async throws {
        let (scheduler, container, stuck, configuration) = try await removedWhileItsRunIsStuck("r")
        let fresh = JobScript()
        SyncSchedulerTests.scripts.withLock { $0["r"] = fresh }
        var back = configuration
        back.sync.jobs[0].runAtStart = false  // its runs are the test's, by hand
        try await scheduler.reload(back)
        // ListJobs says what keeps it waiting: not scheduled as though its ticks ran.
        let waiting = try #require((await scheduler.jobs()).first)
        #expect(waiting[member: "removedRunStopping"] == .string("r-1") && waiting[member: "running"] == .bool(false), "\(waiting)")
        let refused = try await scheduler.runNow("r") { _ in }
        #expect(refused.result == .skipped && refused.message?.contains("a reload removed is still stopping") == true)
        #expect(fresh.runs == 0)
        stuck.release()  // the removed job's run ends now
        #expect(await eventually { !container.openSessions.contains { $0.id == "job-r-1" } })
        #expect(await eventually { (await scheduler.orphans).isEmpty })
        let job = try #require((await scheduler.jobs()).first)
        #expect(job[member: "lastRun"] == .null)  // its end was not booked to the new job
        #expect(job[member: "removedRunStopping"] == .null)
        let record = try await scheduler.runNow("r") { _ in }
        #expect(record.result == .success && record.id == "r-2" && fresh.runs == 1)
        await scheduler.stop()
    }

    /// A job added back with `runAtStart` while the removed job's run stops: its first tick is
    /// skipped, and the run it skipped starts once that run has ended (it waited an interval),
    /// unless the job was paused meanwhile.
    @Test(arguments: [false, true])
    func aJobAddedBackWithRunAtStart_runsOnceTheRemovedJobsRunHasEnded_unlessPaused(pausedMeanwhile: Bool) async throws {
        let name = pausedMeanwhile ? "q" : "a"
        let (scheduler, container, stuck, configuration) = try await removedWhileItsRunIsStuck(name)
        let fresh = JobScript()
        SyncSchedulerTests.scripts.withLock { $0[name] = fresh }
        try await scheduler.reload(configuration)  // runAtStart, interval an hour
        #expect(await eventually { (await scheduler.jobs()).first?[member: "skippedRuns"] == .int(1) })
        if pausedMeanwhile { try await scheduler.setPaused(name, true) }
        #expect(fresh.runs == 0)
        stuck.release()  // the removed job's run ends now
        #expect(await eventually { !container.openSessions.contains { $0.id == "job-\(name)-1" } })
        #expect(await eventually { (await scheduler.orphans).isEmpty })
        if pausedMeanwhile {
            // The run would have been launched in the same turn of the scheduler that ended
            // the removed job's run: none is going now, and none ran.
            #expect((await scheduler.jobs()).first?[member: "running"] == .bool(false))
            #expect(fresh.runs == 0)
        } else {
            #expect(await eventually { fresh.runs == 1 })
            #expect(await eventually { (await scheduler.jobs()).first?[member: "lastRun"]?[member: "id"] == .string("\(name)-2") })
        }
        await scheduler.stop()
    }

    @Test func stop_waitsForTheRunOfARemovedJob() async throws {
        let (scheduler, _, stuck, _) = try await removedWhileItsRunIsStuck("o")
        let stopped = Locked(false)
        let stopping = Task {
            await scheduler.stop()
            stopped.withLock { $0 = true }
        }
        try? await Task.sleep(for: .milliseconds(200))
        #expect(!stopped.withLock { $0 })  // the removed job's run is still going
        stuck.release()
        await stopping.value
        #expect(stopped.withLock { $0 })
    }

    /// A run waiting for a slot that is given one as the scheduler stops (before it is back on
    /// the scheduler to start) ends cancelled before it started: whoever follows it is not told
    /// it started.
    @Test func aRunGivenItsSlotAsTheSchedulerStops_isNotSaidStarted() async throws {
        let big = JobScript(open: false)
        let little = JobScript()
        let (scheduler, _, _) = scheduler([("big", big, { _ in }), ("little", little, { _ in })], maxConcurrent: 1)
        try await scheduler.start()
        _ = try await scheduler.startNow("big")
        #expect(await eventually { big.runs == 1 })
        let heard = Locked<[JobStart]>([])
        let follower = Task { try await scheduler.runNow("little", started: { start in heard.withLock { $0.append(start) } }) { _ in } }
        #expect(await eventually { !heard.withLock { $0.isEmpty } })
        try #require(heard.withLock { $0 }.first.map { if case .queued = $0 { true } else { false } } == true, "\(heard.withLock { $0 })")

        var raised = await scheduler.store.current
        raised.sync.maxConcurrentRuns = 2
        try await scheduler.reloadThenStop(raised)
        let record = try await follower.value
        #expect(record.result == .cancelled, "\(record)")
        #expect(record.message?.hasSuffix("cancelled before it started") == true, "\(record)")
        #expect(!heard.withLock { $0 }.contains { if case .started = $0 { true } else { false } }, "\(heard.withLock { $0 })")
        #expect(little.runs == 0)
    }

    /// Runs get slots in the order they were launched: a slot that frees before a queued run's
    /// task first runs is that run's, not taken by a run launched after it.
    @Test func aSlotFreedBeforeAQueuedRunWaitsForIt_isItsNotALaterRunsOne() async throws {
        let big = JobScript(open: false)
        let little = JobScript(open: false)
        let other = JobScript(open: false)
        let (scheduler, _, _) = scheduler([("big", big, { _ in }), ("little", little, { _ in }), ("other", other, { _ in })], maxConcurrent: 1)
        try await scheduler.start()
        _ = try await scheduler.startNow("big")
        #expect(await eventually { big.runs == 1 })

        var raised = await scheduler.store.current
        raised.sync.maxConcurrentRuns = 2
        try await scheduler.launchThenReloadThenLaunch("little", raised, "other")
        let jobs = await scheduler.jobs()
        let queued = { (name: String) in jobs.first { $0[member: "name"] == .string(name) }?[member: "queued"] }
        #expect(queued("little") == .null, "\(jobs)")
        #expect(queued("other") == .object([("runsGoing", .int(2)), ("maxConcurrentRuns", .int(2))]), "\(jobs)")
        #expect(await eventually { little.runs == 1 })
        #expect(other.runs == 0)
        [big, little, other].forEach { $0.release() }
        #expect(await eventually { other.runs == 1 })
        await scheduler.stop()
    }

    @Test func failures_backOffExponentially_withFullJitter_upToTheCap() async throws {
        let (scheduler, _, _) = scheduler([("f", JobScript([.failed]), { $0.interval = .seconds(10); $0.backoffCap = .seconds(60) })])
        var job = DaemonConfiguration.Job(name: "f")
        job.interval = .seconds(10)
        job.backoffCap = .seconds(60)
        for (level, ceiling) in [(1, 10), (2, 20), (3, 40), (4, 60), (9, 60)] {
            let samples = await (0..<300).asyncMap { _ in await scheduler.backoff(job, level: level) }
            #expect(samples.allSatisfy { $0 >= .zero && $0 <= .seconds(ceiling) }, "level \(level)")
            #expect(samples.contains { $0 > .seconds(ceiling) * 0.8 } && samples.contains { $0 < .seconds(ceiling) * 0.2 }, "level \(level) is jittered over its range")
        }
    }

    /// A job failed four times in a row: its timer waits out a backoff of up to 8 intervals
    /// (the cap is far). `nextRunIn` in seconds.
    func backedOff(_ script: JobScript) async throws -> SyncScheduler {
        let (scheduler, _, _) = scheduler([("f", script, { $0.interval = .seconds(3600); $0.backoffCap = .seconds(3600 * 1000) })])
        try await scheduler.start()
        for _ in 0..<4 { #expect(try await scheduler.runNow("f") { _ in }.result == .failed) }
        return scheduler
    }

    func nextRunIn(_ scheduler: SyncScheduler) async -> Double? {
        await scheduler.jobs().first?[member: "nextRunIn"]?.numberValue
    }

    /// A success resets the backoff, and so the timer: the next run is an interval away, as
    /// `ListJobs` says, not the old backoff's time (up to 8 intervals, at random).
    @Test func aSuccess_putsTheTimerBackOnTheInterval() async throws {
        let scheduler = try await backedOff(JobScript([.failed, .failed, .failed, .failed, .success]))
        #expect(try await scheduler.runNow("f") { _ in }.result == .success)
        let next = try #require(await nextRunIn(scheduler))
        #expect(next > 3500 && next <= 3600, "\(next)")
        await scheduler.stop()
    }

    /// A job a reload disabled while it waited out a backoff has no timer: a success by hand
    /// (or its fix) resets the backoff without starting one, and the job runs only when asked.
    @Test func aDisabledJobsSuccess_startsNoTimer() async throws {
        let script = JobScript([.failed, .failed, .failed, .failed, .success])
        let scheduler = try await backedOff(script)
        var disabled = await scheduler.store.current
        disabled.sync.jobs[0].enabled = false
        disabled.sync.jobs[0].interval = .milliseconds(20)
        disabled.sync.jobs[0].jitter = .zero
        try await scheduler.reload(disabled)
        #expect(try await scheduler.runNow("f") { _ in }.result == .success)
        #expect(script.runs == 5)
        // Twenty-five intervals: a timer started by the reset would have run the job by now.
        try await Task.sleep(for: .milliseconds(500))
        #expect(script.runs == 5)
        #expect(await nextRunIn(scheduler) == nil)
        await scheduler.stop()
    }

    /// The job's fix resets the backoff (`reset the backoff`): the timer goes back on the
    /// interval at once, even while the run it leaves going (or starts) has not ended.
    @Test func theFix_putsTheTimerBackOnTheInterval() async throws {
        let script = JobScript([.failed, .failed, .failed, .failed, .success])
        let scheduler = try await backedOff(script)
        script.close()
        guard case .started = try await scheduler.startNow("f") else { Issue.record("no run started"); return }
        #expect(await eventually { script.runs == 5 })
        let message = try await scheduler.fix("f")
        #expect(message.contains("reset the backoff") && message.contains("no other starts beside it"), "\(message)")
        let next = try #require(await nextRunIn(scheduler))
        #expect(next > 3500 && next <= 3600, "\(next)")
        script.release()
        await scheduler.stop()
    }

    @Test func failedRuns_makeTheJobDegraded_thenUnhealthy_andTheFixRetries() async throws {
        let script = JobScript([.failed, .failed, .success])
        let (scheduler, registry, _) = scheduler([("f", script, { $0.failureThreshold = 2; $0.backoffCap = .seconds(3600) })])
        try await scheduler.start()
        #expect(try await scheduler.runNow("f") { _ in }.result == .failed)
        #expect(await scheduler.health(of: "f").status == .degraded)
        #expect(try await scheduler.runNow("f") { _ in }.result == .failed)
        let unhealthy = await scheduler.health(of: "f")
        #expect(unhealthy.status == .unhealthy && unhealthy.message.hasPrefix("2 failed runs in a row"))
        let fix = await registry.fix("job.f")
        // The fix waits for the run it starts: the check run again after it sees the job healed.
        #expect(fix.outcome == .succeeded && fix.message.contains("prepared") && fix.message.hasSuffix("run f-3 succeeded"), "\(fix.message)")
        #expect(script.prepared == 1)
        #expect(script.runsInsideAFix == 0)  // the run the fix started is not part of the fix
        #expect(await scheduler.health(of: "f").status == .healthy)
        await scheduler.stop()
    }

    /// Auto-fix of a job whose run failed, round after round, with no run stuck and nothing to
    /// prepare, has nothing to do: no run starts (the backoff holds the next), the backoff is not
    /// reset, and nothing is recorded, counted or logged; the check says why. By hand, the fix
    /// resets the backoff and runs the job, and a run that fails leaves the fix failed.
    @Test func anAutomaticFix_startsNoRunTheScheduleWouldNot_andAFixWhoseRunFailed_failed() async throws {
        let script = JobScript([.failed], prepares: false)
        let (scheduler, registry, _) = scheduler([("f", script, { $0.interval = .seconds(3600) })])
        try await scheduler.start()
        #expect(try await scheduler.runNow("f") { _ in }.result == .failed)
        let backoff = try #require(await nextRunIn(scheduler))
        for _ in 0..<5 { await registry.runChecks() }
        #expect(script.runs == 1)
        #expect(registry.fixHistory().isEmpty)
        let check = try #require(registry.report().checks.first { $0.name == "job.f" })
        #expect(check.status == .degraded && check.breaker == .closed && check.fixesTried == 0)
        #expect(check.fixHeldBack?.hasPrefix("its fix has nothing to do: no run stuck, nothing to prepare") == true,
            "\(String(describing: check.fixHeldBack))")
        #expect(await scheduler.jobs["f"]?.backoffLevel == 1)
        let stillBackingOff = try #require(await nextRunIn(scheduler))
        #expect(stillBackingOff <= backoff)  // the same timer, not one restarted on the interval

        let byHand = await registry.fix("job.f")
        #expect(script.runs == 2)
        #expect(byHand.outcome == .failed, "\(byHand)")
        #expect(byHand.message.hasPrefix("reset the backoff; run f-2 failed: scripted failure; the check still fails after it: "),
            "\(byHand.message)")
        await scheduler.stop()
    }

    /// An automatic fix that prepared something starts a run (what the failed runs met has
    /// changed), but does not reset the backoff: the run that fails again backs off further.
    @Test func anAutomaticFixThatPrepared_runsTheJob_withoutResettingTheBackoff() async throws {
        let script = JobScript([.failed], prepares: true)
        let (scheduler, registry, _) = scheduler([("f", script, { $0.interval = .seconds(3600) })])
        try await scheduler.start()
        #expect(try await scheduler.runNow("f") { _ in }.result == .failed)
        await registry.runChecks()
        #expect(script.prepared == 1 && script.runs == 2)
        let fix = try #require(registry.fixHistory().last)
        #expect(fix.trigger == .automatic && fix.outcome == .failed, "\(fix)")
        #expect(fix.message.hasPrefix("prepared; run f-2 failed: scripted failure"), "\(fix.message)")
        #expect(await scheduler.jobs["f"]?.backoffLevel == 2)
        #expect(await scheduler.jobs["f"]?.consecutiveFailures == 2)
        await scheduler.stop()
    }

    /// A partial run is no success: it leaves `lastSuccess` (and the metrics' last success
    /// time) as it was, so a job whose runs are all partial turns unhealthy once no success
    /// came for `staleAfterIntervals` intervals; it ends the failures in a row and the backoff.
    @Test func partialRuns_areNoSuccess_andTheJobGoesStale() async throws {
        let script = JobScript([.failed, .partial])
        let (scheduler, _, _) = scheduler([("p", script, {
            $0.interval = .seconds(1)
            $0.jitter = .zero
            $0.staleAfterIntervals = 1
        })])
        try await scheduler.start()
        #expect(try await scheduler.runNow("p") { _ in }.result == .failed)
        // The timer's runs, partial from now on, every second: two of them, so more than an
        // interval since the start. Looked at as the second ends, a partial run taken for a
        // success would be a success of just now.
        #expect(await eventually { await scheduler.jobs["p"]?.runsByResult[.partial] ?? 0 >= 2 })
        #expect(await scheduler.jobs["p"]?.lastSuccess == nil)
        #expect(await scheduler.jobs["p"]?.consecutiveFailures == 0)
        #expect(await scheduler.jobs["p"]?.backoffLevel == 0)
        let health = await scheduler.health(of: "p")
        #expect(health.status == .unhealthy && health.message.hasPrefix("no successful run for "), "\(health.message)")
        #expect(await scheduler.metrics().contains(#"weavedi_sync_last_success_timestamp_seconds{job="p"} 0"#))
        await scheduler.stop()
    }

    /// A job a reload adds, without a success yet, is stale counted from the reload, not from
    /// the daemon's start: one added 3 s after the start with 2 s intervals is not stale at once.
    @Test func aJobAddedByAReload_isStaleCountedFromTheReload() async throws {
        let (scheduler, _, _) = scheduler([("a", JobScript(), { $0.interval = .seconds(3600) })])
        try await scheduler.start()
        try await Task.sleep(for: .seconds(3))
        var withB = await scheduler.store.current
        var b = DaemonConfiguration.Job(name: "b")
        b.kind = "scripted"
        b.interval = .seconds(2)
        b.jitter = .zero
        b.staleAfterIntervals = 1
        SyncSchedulerTests.scripts.withLock { $0["b"] = JobScript() }
        withB.sync.jobs.append(b)
        try await scheduler.reload(withB)
        let health = await scheduler.health(of: "b")
        #expect(health.isPending && health.message == "not run yet", "\(health.status) \(health.message)")
        await scheduler.stop()
    }

    /// `weavedi_sync_last_run_result` is 1 for the last run's result and 0 for the others; all
    /// 0 before any run.
    @Test func theLastRunResultMetric_followsEachRun() async throws {
        let script = JobScript([.failed, .success])
        let (scheduler, _, _) = scheduler([("p", script, { $0.interval = .seconds(3600); $0.jitter = .zero })])
        try await scheduler.start()
        /// The value of each result's series, in `SyncResult.allCases` order.
        func values() async -> [String: String] {
            let text = await scheduler.metrics()
            var found: [String: String] = [:]
            for result in SyncResult.allCases {
                found[result.rawValue] = text.split(separator: "\n")
                    .first { $0.hasPrefix(#"weavedi_sync_last_run_result{job="p",result="\#(result.rawValue)"} "#) }
                    .map { String($0.split(separator: " ").last ?? "") }
            }
            return found
        }
        let before = await values()
        #expect(before.count == SyncResult.allCases.count && before.values.allSatisfy { $0 == "0" }, "\(before)")
        #expect(try await scheduler.runNow("p") { _ in }.result == .failed)
        let failed = await values()
        #expect(failed["failed"] == "1" && failed.filter { $0.value == "1" }.count == 1, "\(failed)")
        #expect(try await scheduler.runNow("p") { _ in }.result == .success)
        let succeeded = await values()
        #expect(succeeded["success"] == "1" && succeeded.filter { $0.value == "1" }.count == 1, "\(succeeded)")
        await scheduler.stop()
    }

    @Test func theFix_preparesTheJobAsConfiguredAfterTheStuckRunItCancelled() async throws {
        let stuck = JobScript(open: false, deafToCancellation: true)
        // The test ends the cancelled run by hand: the fix must wait for it however loaded the
        // machine is, not give it up after 2 s.
        let (scheduler, registry, _) = scheduler(
            [("p", stuck, { $0.runAtStart = true; $0.interval = .milliseconds(20); $0.staleAfterIntervals = 1 })], cancelledRunWait: .seconds(600))
        try await scheduler.start()
        #expect(await eventually { stuck.runs == 1 })
        try? await Task.sleep(for: .milliseconds(50))  // stuck for longer than one interval
        let fixing = Task { await registry.fix("job.p") }
        #expect(await eventually { (await scheduler.jobs()).first?[member: "running"]?.boolValue == true })
        #expect(await eventually { stuck.cancelledAtTheGate == 1 })  // the fix waits for the run it cancelled
        let replacement = JobScript()
        SyncSchedulerTests.scripts.withLock { $0["p"] = replacement }
        var changed = await scheduler.store.current
        changed.sync.jobs[0].interval = .seconds(3600)
        try await scheduler.reload(changed)
        stuck.release()
        let fix = await fixing.value
        #expect(fix.outcome == .succeeded && fix.message.hasPrefix("cancelled a run stuck"))
        #expect(replacement.prepared == 1 && stuck.prepared == 0)
        // The cancelled run's record says who cancelled it and why.
        let cancelled = await scheduler.jobs["p"]?.recent.first { $0.result == .cancelled }
        #expect(cancelled?.message?.hasPrefix("cancelled by the job's fix (weavedictl fix job.p or auto-fix): stuck for more than ") == true,
            "\(cancelled.map { "\($0)" } ?? "no cancelled run")")
        await scheduler.stop()
    }

    /// An automatic fix that cancelled a stuck run (the job stale) and then could not prepare:
    /// its record says both. One whose job then has nothing an automatic fix can do (only a
    /// person can help, `FixNotApplicable`) starts no run in place of the stuck one, and says
    /// what it did and why no run.
    @Test(arguments: [false, true])
    func anAutomaticFixThatCancelledAStuckRun_thenCouldNotPrepare_saysBoth(heldBack: Bool) async throws {
        let problem: any Error & Sendable = heldBack ? FixNotApplicable("mount the disk") : TestFailure(description: "cannot prepare")
        let stuck = JobScript(open: false, deafToCancellation: true, preparing: problem)
        // The test ends the cancelled run by hand: the fix must wait for it however loaded the
        // machine is, not give it up after 2 s.
        let (scheduler, registry, _) = scheduler(
            [("p", stuck, { $0.runAtStart = true; $0.interval = .milliseconds(20); $0.staleAfterIntervals = 1 })], cancelledRunWait: .seconds(600))
        try await scheduler.start()
        #expect(await eventually { stuck.runs == 1 })
        try? await Task.sleep(for: .milliseconds(50))  // stuck for longer than one interval
        let checking = Task { await registry.runChecks() }
        #expect(await eventually { stuck.cancelledAtTheGate == 1 })  // the fix waits for the run it cancelled
        stuck.close()  // a run started after it would wait: none may start
        stuck.release()
        _ = await checking.value
        let fix = try #require(registry.fixHistory().last)
        #expect(fix.trigger == .automatic, "\(fix)")
        let said = heldBack ? fix.message : fix.error ?? ""
        #expect(said.hasPrefix("cancelled a run stuck for more than "), "\(fix)")
        #expect(said.contains(heldBack ? "; no run started: mount the disk" : "; then: cannot prepare"), "\(fix)")
        #expect(stuck.prepared == 1)
        if heldBack { #expect(stuck.runs == 1) } else { #expect(fix.outcome == .failed) }
        stuck.release()
        await scheduler.stop()
    }

    /// A run that ignores its cancellation holds a stop no longer than `cancelledRunWait`: it
    /// is given up on, booked `cancelled` saying so, and the state file written as the stop
    /// ends says it ended (no `runGoing`: the next start does not call it never ended). Before,
    /// the stop waited for it for good (the daemon exited on its shutdown timeout, 1).
    @Test func aRunDeafToCancellation_isGivenUpOn_atTheStop_andTheStateFileSaysItEnded() async throws {
        let deaf = JobScript(open: false, deafToCancellation: true)
        defer { deaf.release() }
        let (scheduler, _, _) = scheduler([("d", deaf, { $0.runAtStart = true })])
        try await scheduler.start()
        #expect(await eventually { deaf.runs == 1 })
        let stopped = Locked(false)
        Task { await scheduler.stop(); stopped.withLock { $0 = true } }
        #expect(await eventually { stopped.withLock { $0 } }, "the stop waits for the run")
        try #require(stopped.withLock { $0 })
        let saved = try JSONValue.parse(Array(try #require(state.read("jobs.json")).utf8))
        let entry = saved[member: "jobs"]?[member: "d"]
        #expect(entry?[member: "runGoing"]?.isNull == true, "\(saved)")
        #expect(entry?[member: "lastRun"]?[member: "result"]?.stringValue == "cancelled", "\(saved)")
        #expect(entry?[member: "lastRun"]?[member: "message"]?.stringValue == "the daemon is stopping; the job's run did not "
            + "stop within 2.0 s of its cancellation: given up on (it may go on until it returns, or the daemon exits)", "\(saved)")
    }

    /// The job's fix that cancels a stuck run deaf to its cancellation gives it up after
    /// `cancelledRunWait`, booked `cancelled`, and starts no run beside it (its job runs none
    /// until it has ended); once it ends, the job runs again. Before, the fix waited for it for
    /// good (`weavedictl fix` ended in CallTimedOut).
    @Test func theFix_givesUpOnAStuckRunDeafToCancellation_andStartsNoneBesideIt() async throws {
        let deaf = JobScript(open: false, deafToCancellation: true)
        defer { deaf.release() }
        let (scheduler, _, _) = scheduler([("d", deaf, { $0.runAtStart = true; $0.interval = .milliseconds(20); $0.staleAfterIntervals = 1 })])
        try await scheduler.start()
        #expect(await eventually { deaf.runs == 1 })
        try? await Task.sleep(for: .milliseconds(50))  // stuck for longer than one interval
        let said = Locked<String?>(nil)
        Task { let fix = try? await scheduler.fix("d"); said.withLock { $0 = fix ?? "threw" } }
        #expect(await eventually { said.withLock { $0 } != nil }, "the fix waits for the run")
        let fix = try #require(said.withLock { $0 })
        #expect(fix.hasPrefix("cancelled a run stuck for more than ") && fix.hasSuffix("; reset the backoff; no run started: run "
            + "d-1 did not stop within 2.0 s of its cancellation, and none starts until it has"), "\(fix)")
        #expect(deaf.runs == 1)
        let last = await scheduler.jobs["d"]?.lastKept
        #expect(last?.result == .cancelled && last?.message?.hasSuffix("the job's run did not stop within 2.0 s of its "
            + "cancellation: given up on (it may go on until it returns, or the daemon exits)") == true, "\(String(describing: last))")
        // Ended at last, it lets the job run again.
        deaf.release()
        #expect(await eventually { await scheduler.givenUpRunID(of: "d") == nil })
        // Its timer (every 20 ms) starts the next run, or this does.
        _ = try? await scheduler.startNow("d")
        #expect(await eventually { await scheduler.jobs["d"]?.lastKept?.result == .success })
        await scheduler.stop()
    }

    /// A paused job's run by hand that took on a run missed while the job was paused, and was
    /// then cancelled (here by the job's fix, stuck), not failed, did not do that run's work:
    /// the run stays missed. The fix, by hand, then runs the job, and that run takes the missed
    /// run on in turn; it fails, so the run is missed still, and the job, resumed, runs at once.
    /// Had the cancelled run been taken to have done it, the run after it would have taken on
    /// nothing, and the job, resumed, would have waited an hour for its next tick. (Its last
    /// run the cancelled one, the job would run at once when resumed anyway, as one whose last
    /// run did not finish: the failed run after it keeps that from hiding a run lost.) Through
    /// the scheduler: the daemon's runs ticking at an interval of 1 s at least, as stale as the
    /// fix needs, a tick would come between the cancelled run's end and the resume, and make a
    /// missed run of its own.
    @Test func aPausedJobsRunByHand_cancelledByTheFix_leavesTheRunItTookOnMissed() async throws {
        // Paused, as the state file says; first seen a day ago, its first tick comes at once.
        let firstSeen = SystemClock.realtimeSeconds() - 86_400
        _ = state.write("jobs.json", #"{"jobs":{"p":{"consecutiveFailures":0,"paused":true,"firstSeenAt":\#(firstSeen)}}}"#)
        let script = JobScript([.success, .failed], open: false, deafToCancellation: true)
        // The test ends the cancelled run by hand: the fix must wait for it however loaded the
        // machine is, not give it up after 2 s.
        let (scheduler, _, _) = scheduler(
            [("p", script, { $0.interval = .milliseconds(20); $0.staleAfterIntervals = 1 })], cancelledRunWait: .seconds(600))
        try await scheduler.start()
        let paused = await scheduler.jobs["p"]?.paused
        #expect(paused == true)
        #expect(await eventually { await scheduler.jobs["p"]?.missedWhilePaused != nil })
        // The run by hand, p-1, takes the missed run on, and waits at the gate.
        _ = try await scheduler.startNow("p")
        let takenOn: String? = await scheduler.jobs["p"]?.tickLeftToRun.map { $0.runID }
        let missedThen = await scheduler.jobs["p"]?.missedWhilePaused
        #expect(takenOn == "p-1" && missedThen == nil)
        #expect(await eventually { script.runs == 1 })
        try? await Task.sleep(for: .milliseconds(50))  // stuck for longer than one interval
        let fixing = Task { try await scheduler.fix("p") }
        #expect(await eventually { script.cancelledAtTheGate == 1 })  // the fix waits for the run it cancelled
        // No tick more until the resume: the next is counted from p-1's start, an hour on.
        var changed = await scheduler.store.current
        changed.sync.jobs[0].interval = .seconds(3600)
        try await scheduler.reload(changed)
        script.release()
        let fix = try await fixing.value
        #expect(fix.hasPrefix("cancelled a run stuck for more than ") && fix.hasSuffix("; reset the backoff; run p-2 failed: scripted failure"),
            "\(fix)")
        let p1 = await scheduler.jobs["p"]?.recent.first { $0.id == "p-1" }
        #expect(p1?.result == .cancelled, "\(p1.map { "\($0)" } ?? "no run p-1")")
        let last = await scheduler.jobs["p"]?.lastKept?.result
        let missed = await scheduler.jobs["p"]?.missedWhilePaused
        #expect(last == .failed)
        #expect(missed != nil, "the cancelled run left no run missed")
        #expect(script.runs == 2)
        try await scheduler.setPaused("p", paused: false)
        #expect(await eventually { script.runs == 3 })
        await scheduler.stop()
    }

    @Test func pausedJobs_doNotRun_untilResumed() async throws {
        let script = JobScript()
        let (scheduler, _, _) = scheduler([("p", script, { $0.interval = .milliseconds(30) })])
        try await scheduler.start()
        try await scheduler.setPaused("p", paused: true)
        let runsWhenPaused = script.runs
        try? await Task.sleep(for: .milliseconds(200))
        #expect(script.runs == runsWhenPaused)
        #expect((await scheduler.jobs()).first?[member: "paused"]?.boolValue == true)
        try await scheduler.setPaused("p", paused: false)
        #expect(await eventually { script.runs > runsWhenPaused })
        await #expect(throws: Error.self) { try await scheduler.setPaused("nope", paused: true) }
        await scheduler.stop()
    }

    @Test func disabledJobs_areNotScheduled_butCanRunByHand() async throws {
        let script = JobScript()
        let (scheduler, _, _) = scheduler([("off", script, { $0.enabled = false; $0.runAtStart = true; $0.interval = .milliseconds(20) })])
        try await scheduler.start()
        try? await Task.sleep(for: .milliseconds(150))
        #expect(script.runs == 0)
        #expect((await scheduler.jobs()).first?[member: "nextRunIn"] == .null)
        #expect(try await scheduler.runNow("off") { _ in }.result == .success)
        await scheduler.stop()
    }

    @Test func stop_cancelsRunningRuns_atASafePoint() async throws {
        let script = JobScript(open: false)
        let (scheduler, _, _) = scheduler([("s", script, { $0.runAtStart = true })])
        try await scheduler.start()
        #expect(await eventually { script.runs == 1 })
        await scheduler.stop()
        #expect((await scheduler.jobs()).first?[member: "lastRun"]?[member: "result"]?.stringValue == "cancelled")
        // The run says why it stopped, before what the job said of it.
        #expect((await scheduler.jobs()).first?[member: "lastRun"]?[member: "message"]?.stringValue
            == "the daemon is stopping; stopped at a safe point")
    }

    @Test func lastResults_surviveARestart() async throws {
        let state = TemporaryDirectory()
        let (first, _, _) = scheduler([("k", JobScript([.failed]), { _ in })], state: state)
        try await first.start()
        _ = try await first.runNow("k") { _ in }
        await first.stop()
        let saved = try String(contentsOfFile: state.path + "/jobs.json", encoding: .utf8)
        #expect(saved.contains(#""consecutiveFailures":1"#) && saved.contains(#""result":"failed""#))
        let (second, _, _) = scheduler([("k", JobScript([.success]), { $0.failureThreshold = 1 })], state: state)
        try await second.start()
        #expect(await second.health(of: "k").status == .unhealthy)  // it knows about the failure before any run
        await second.stop()
    }

    /// A run cancelled before it did any work (here while it waited for a slot, as the
    /// scheduler stopped) changed nothing: the job's health goes by the last run the state file
    /// keeps, as after a restart. Before, the job was degraded (its destination "may be
    /// behind") until the restart, and healthy after it.
    @Test func aRunCancelledBeforeItsWork_leavesTheJobsHealthAsTheStateFileKeepsIt() async throws {
        let state = TemporaryDirectory()
        let big = JobScript(open: false)
        let little = JobScript()
        let (first, _, _) = scheduler([("big", big, { _ in }), ("little", little, { _ in })], maxConcurrent: 1, state: state)
        try await first.start()
        let success = try await first.runNow("little") { _ in }
        #expect(success.result == .success)
        _ = try await first.startNow("big")
        #expect(await eventually { big.runs == 1 })
        let follower = Task { try await first.runNow("little") { _ in } }
        #expect(await eventually { (await first.jobs()).last?[member: "queued"].map { !$0.isNull } == true })
        await first.stop()
        let cancelled = try await follower.value
        try #require(cancelled.result == .cancelled && cancelled.message?.hasSuffix("cancelled while it waited for a slot") == true,
                     "\(cancelled)")
        let before = await first.health(of: "little")
        #expect(before.status == .healthy && before.message == "last run success", "\(before)")
        // `ListJobs`' last run and the last run's metrics go by the same run, in this process
        // and after the restart.
        /// The last run's id in `ListJobs`, and its duration and result in the metrics.
        func lastRun(_ scheduler: SyncScheduler) async -> (id: String?, duration: Double?, result: String?) {
            let id = (await scheduler.jobs()).last?[member: "lastRun"]?[member: "id"]?.stringValue
            let lines = (await scheduler.metrics()).split(separator: "\n")
            let duration = lines.first { $0.hasPrefix(#"weavedi_sync_last_run_duration_seconds{job="little"} "#) }
                .flatMap { Double($0.split(separator: " ").last ?? "") }
            let result = lines.first { $0.hasPrefix(#"weavedi_sync_last_run_result{job="little","#) && $0.hasSuffix(" 1") }
                .map { String($0.split(separator: " ").first ?? "") }
            return (id, duration, result)
        }
        let expected: (id: String?, duration: Double?, result: String?) = (success.id, success.duration, #"weavedi_sync_last_run_result{job="little",result="success"}"#)
        let shownBefore = await lastRun(first)
        #expect(shownBefore == expected, "\(shownBefore)")
        let (second, _, _) = scheduler([("big", JobScript(), { _ in }), ("little", JobScript(), { _ in })], state: state)
        try await second.start()
        let after = await second.health(of: "little")
        #expect(after.status == before.status && after.message == before.message, "\(after)")
        let shownAfter = await lastRun(second)
        #expect(shownAfter == expected, "\(shownAfter)")
        await second.stop()
    }

    @Test func aLastSuccessInTheFuture_doesNotKeepTheJobFromGoingStale() async throws {
        // The state file says the last success is a day ahead: the wall clock was set back since.
        let state = TemporaryDirectory()
        let ahead = SystemClock.realtimeSeconds() + 86_400
        try #"{"jobs":{"k":{"lastRun":null,"lastSuccess":\#(ahead),"consecutiveFailures":0}}}"#
            .write(toFile: state.path + "/jobs.json", atomically: true, encoding: .utf8)
        let script = JobScript(open: false)  // its runs never end: no success to count from
        let (scheduler, _, _) = scheduler([("k", script, { $0.interval = .milliseconds(50); $0.staleAfterIntervals = 1 })], state: state)
        try await scheduler.start()
        #expect(await eventually { await scheduler.health(of: "k").status == .unhealthy })
        #expect(await scheduler.health(of: "k").message.hasPrefix("no successful run for "))
        script.release()
        await scheduler.stop()
    }

    @Test func runNow_reportsProgress_andMetricsCountRuns() async throws {
        let (scheduler, _, _) = scheduler([("m", JobScript(), { _ in })])
        try await scheduler.start()
        let seen = Locked<[SyncProgress]>([])
        let record = try await scheduler.runNow("m") { progress in seen.withLock { $0.append(progress) } }
        #expect(record.result == .success && record.copied == 1)
        #expect(await eventually { !seen.withLock { $0 }.isEmpty })
        let metrics = await scheduler.metrics()
        #expect(metrics.contains(#"weavedi_sync_runs_total{job="m",result="success"} 1"#))
        #expect(metrics.contains(#"weavedi_sync_bytes_copied_total{job="m"} 10"#))
        await #expect(throws: Error.self) { try await scheduler.runNow("nope") { _ in } }
        await scheduler.stop()
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var result: [T] = []
        for element in self { result.append(await transform(element)) }
        return result
    }
}

extension SyncScheduler {
    /// Applies `configuration` and stops, with no other work on the scheduler between: the
    /// runs the reload gave a slot have not started yet as the stop begins.
    func reloadThenStop(_ configuration: DaemonConfiguration) async throws {
        try await reload(configuration)
        await stop()
    }
}

extension SyncScheduler {
    /// Launches a run of `first` (which waits for a slot), applies `configuration`, and launches
    /// a run of `second`, with no other work on the scheduler between: the first run's task has
    /// not run yet.
    func launchThenReloadThenLaunch(_ first: String, _ configuration: DaemonConfiguration, _ second: String) async throws {
        _ = launch(first)
        try await reload(configuration)
        _ = launch(second)
    }
}

/// An error a test's job throws, said as it is.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
}
