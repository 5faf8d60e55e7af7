import WeaveDI
import WeaveDIPosix

/// Runs the configured jobs on their schedules: a timer per job (interval plus jitter, or at
/// start), a global cap on runs at once, no overlapping runs of one job (a tick that finds
/// the previous run still going is skipped and counted, as systemd timers do), exponential
/// backoff with full jitter after failures (success resets it), runs by hand, pause and
/// resume, and a safe stop. Each run is a WeaveDI session.
public actor SyncScheduler: DaemonService {
    public nonisolated let name = "sync"
    let store: ConfigurationStore
    let container: WeaveDI.Container
    let log: DaemonLog
    let registry: UnifiedRegistry
    let stateStore: SyncStateStore
    /// The middle of the metrics file's temporary files' names: `.weavedi.prom.weavedid-tmp.N`.
    static let metricsTemporaryMarker = "weavedid-tmp"
    /// Writes `sync.metricsFile` after each run.
    let metricsWriter: LatestFileWriter

    var jobs: [String: JobState] = [:]
    var order: [String] = []
    var loops: [String: Task<Void, Never>] = [:]
    /// Runs of jobs that reloads removed, still stopping, by run id: a shutdown waits for them,
    /// and a job of the same name added back does not run until they are gone.
    var orphans: [String: (job: String, task: Task<SyncRunRecord, Never>)] = [:]
    /// Whether the reload under way added back a job the state file says is paused: it starts
    /// unpaused, and the file is written again so that a restart does not pause it.
    private var pauseDropped = false
    /// Whether a job was first seen (`JobState.firstSeenAt`) since the state file was last
    /// written: the file is written again, so that the time outlives a restart.
    private var firstSeenNoted = false
    /// Why the daemon cancelled a run, by run id: the run's message starts with it.
    var cancelReasons: [String: String] = [:]
    /// Runs cancelled that did not stop within `cancelledRunWait` (a job kind that ignores its
    /// cancellation), by run id, with their job's name: booked `cancelled` then and their slot
    /// freed (`giveUp`), they may still be going; their job starts no run until they end.
    var givenUp: [String: String] = [:]
    /// How long a run the daemon cancelled (a shutdown, the job's fix) is waited for before it
    /// is given up on: a run stops at a safe point within moments, and a mirror's step that
    /// does not answer within 2 s of its cancellation is left behind likewise.
    /// (2 s; tests that end such a run by hand wait longer.)
    let cancelledRunWait: Duration
    var slotsInUse = 0
    /// `sync.maxConcurrentRuns` of the configuration in effect (a reload changes it before the
    /// configuration store does).
    var maxRuns: Int
    /// Runs waiting for a slot, in the order they were launched (`launch` puts them in line):
    /// see `SlotWaiter`.
    var slotWaiters: [SlotWaiter] = []
    /// Runs given a slot before their task asked for it (`acquireSlot`), by run id.
    var slotsGiven: Set<String> = []
    /// The number of the last run started (`NAME-N`), of any job; continued from the state
    /// file's at start.
    var runCounter = 0
    /// How long a run waits, before its work, for the state file's writes asked for so far
    /// (its number, that it is going): they take milliseconds; a state directory that stopped
    /// answering takes the step limit (5 s) to give one up, and holds a run this long at most.
    static let stateWriteWait: Duration = .seconds(1)
    /// Why the jobs' state file could not be read at the start (nil if it was, or there was
    /// none): `sync.stateFile` says so until a write replaces the file.
    var stateFileUnreadable: SyncStateStore.Unreadable?
    var stopping = false
    var persisted: [String: PersistedJobState] = [:]

    /// Who wants a job's progress, and to hear when a run that waited for a slot starts:
    /// called straight from the run, with no hop through the actor, so no report is lost to a
    /// run that ends first.
    final class ProgressListeners: Sendable {
        struct Listener: Sendable {
            let started: @Sendable () -> Void
            let progress: @Sendable (SyncProgress) -> Void
        }

        private let listeners = Locked<[Int: Listener]>([:])

        func add(_ key: Int, started: @escaping @Sendable () -> Void, progress: @escaping @Sendable (SyncProgress) -> Void) {
            listeners.withLock { $0[key] = Listener(started: started, progress: progress) }
        }

        func remove(_ key: Int) {
            _ = listeners.withLock { $0.removeValue(forKey: key) }
        }

        func send(_ progress: SyncProgress) {
            for listener in listeners.withLock({ Array($0.values) }) { listener.progress(progress) }
        }

        /// A run that waited for a slot starts now (it has its slot, and is not stopped before).
        func sendStarted() {
            for listener in listeners.withLock({ Array($0.values) }) { listener.started() }
        }
    }

    /// How many recent runs of each job are kept in memory.
    static let recentRunLimit = 20
    /// At most this many entries of jobs that are not in the configuration are kept in the
    /// state file, those that ran last (`saveState`).
    static let removedJobEntryLimit = 100

    /// A run under way: its task, its id, and when it got its slot.
    struct ActiveRun {
        let task: Task<SyncRunRecord, Never>
        /// A run of a job removed and added again by reloads ends into the state of the job
        /// that replaced it, which it must leave alone: its id tells them apart.
        let id: String
        /// When it got its slot (at its launch, or once one was free); nil while it waits for
        /// one. A run in line is not stuck, however long it waits: the job's fix times a run
        /// from here.
        var started: ContinuousClock.Instant?
        /// When its work started, in seconds since 1970 (its record's `startedAt`); nil until
        /// then. The state file keeps it (`runGoing`) until the run ends.
        var startedAt: Double?
        /// Launched while every slot was taken: it waits for one (see `SlotWait`); nil for a
        /// run that had one at once.
        let queued: SlotWait?

        /// Whether it waits for a slot still.
        var isQueued: Bool { started == nil }

        /// `run docs-2 is going`, or `run docs-2 waits for a slot`, for the log and health.
        var state: String { "run \(id) \(isQueued ? "waits for a slot" : "is going")" }
    }

    /// A run in line for a slot, by job and run id. Its task, once it asks (`acquireSlot`),
    /// waits on `continuation`: resumed with true when given a slot, with false when cancelled
    /// first. nil until then: a slot given before goes to `slotsGiven`.
    struct SlotWaiter {
        let job: String
        let runID: String
        var continuation: CheckedContinuation<Bool, Never>?
    }

    /// Why a run launched waits before it starts: the runs going then (holding a slot), and
    /// `sync.maxConcurrentRuns` in effect.
    struct SlotWait: Sendable, Equatable, CustomStringConvertible {
        let runsGoing: Int
        let maxConcurrentRuns: Int

        /// `1 run going, maxConcurrentRuns 1`, as the log and the job's fix say it.
        var description: String {
            "\(runsGoing) run\(runsGoing == 1 ? "" : "s") going, maxConcurrentRuns \(maxConcurrentRuns)"
        }
    }

    struct JobState {
        var config: DaemonConfiguration.Job
        var job: any SyncJob
        /// When this process took the job on (its start, or the reload that added it): a job
        /// without a success is stale counted from then, not from the daemon's start.
        let addedAt = ContinuousClock.now
        var paused = false
        /// The run under way, if any.
        var running: ActiveRun?
        var progress: SyncProgress?
        let listeners = ProgressListeners()
        var consecutiveFailures = 0
        /// How far the backoff has grown (`PersistedJobState.backoffLevel`): kept across restarts.
        var backoffLevel = 0
        /// Whether the timer's next tick waits out a backoff (after a failed run), rather than
        /// the interval: a reset of the backoff (a success, the job's fix) puts it back on the
        /// interval, so that `nextRun`, which `ListJobs` shows, is the time the timer really uses.
        var inBackoff = false
        var lastSuccess: Double?
        /// When `lastSuccess` was, on the monotonic clock: set by a success in this process.
        var lastSuccessInstant: ContinuousClock.Instant?
        var recent: [SyncRunRecord] = []
        /// The last run the state file keeps as the job's last: every run that ended, but for
        /// one cancelled before it did any work (waiting for a slot, or at its start), which
        /// changed nothing. A run a stop cancelled is kept: after the restart the job shows it,
        /// and its health says the destination may be behind.
        var lastKept: SyncRunRecord?
        /// When the daemon first had the job, in seconds since 1970 (`firstSeenAt` of the state
        /// file): the first run of a job that never ran is counted from it across restarts.
        var firstSeenAt: Double?
        /// Whether the job's last run that did work never ended (`PersistedJobState.endedUnfinished`):
        /// kept in the state file until a run of the job does work.
        var unfinished = false
        /// What the job's runs found mounted below its source (`PersistedJobState.sourceMounts`).
        var sourceMounts: SyncSourceMounts?
        /// Whether a run that never ended still calls for a cleanup (`PersistedJobState.cleanupDue`).
        var cleanupDue = false
        var skippedRuns = 0
        /// Whether a tick met the run of a removed job of this name still stopping: the run
        /// it skipped starts as soon as that run ends, not an interval later (a job added back
        /// with `runAtStart` ran an interval late).
        var runsAfterRemovedRun = false
        var nextRun: ContinuousClock.Instant?
        /// When the backoff being waited out (`inBackoff`) started: the failed run's end. A
        /// reload that lowers `backoffCap` ends it no later than the new cap after this.
        var backoffSince: ContinuousClock.Instant?
        /// When a tick of the job's timer came while it was paused (the first such): the run it
        /// missed starts at once when the job is resumed, as systemd's `Persistent=true` timers
        /// catch up. nil once a run of it started (which, the job still paused, takes it on as
        /// `tickLeftToRun`), or its timer was started again.
        var missedWhilePaused: ContinuousClock.Instant?
        /// When a tick of the job's timer came while it was paused and a run of it was going
        /// (by hand), the first such, with that run's id; or a run missed (`missedWhilePaused`)
        /// that a run by hand started while the job was paused took on (`launch`): the run does
        /// the tick's work, unless it fails or is cancelled; then, the job still paused, the tick
        /// is a run missed (`missedWhilePaused`, from when it came). nil once that run ended; a
        /// timer started again meanwhile (a reload) leaves it, as the run goes on.
        var tickLeftToRun: (runID: String, at: ContinuousClock.Instant)?
        /// Set at the start when two runs of the job in a row never ended
        /// (`PersistedJobState.neverEndedTwice`), until a run of it does work: its last run that
        /// never ended does not make it run at once when it is resumed either.
        var neverEndedTwice: PersistedJobState.NeverEndedTwice?
        var runsByResult: [SyncResult: Int] = [:]
        var filesCopied = 0
        var bytesCopied = 0
        /// Entries its runs skipped (`weavedi_sync_files_skipped_total`).
        var filesSkipped = 0
        /// The files its runs skipped in a row as changed while being copied (`ChangingFiles`),
        /// of the roots configured; nil when none.
        var changing: ChangingFiles?

        /// `1 failed run`, or `3 failed runs in a row`: what a backoff follows, for the log.
        var failuresInARow: String {
            consecutiveFailures == 1 ? "1 failed run" : "\(consecutiveFailures) failed runs in a row"
        }

        /// Why its timer's next run is where it is, for the log: ` (run docs-2 is going)`,
        /// ` (backoff after 2 failed runs in a row)`, or nothing.
        var plannedNote: String {
            if let running { return " (\(running.state))" }
            return inBackoff ? " (backoff after \(failuresInARow))" : ""
        }

        /// The roots of the job as configured (empty for a kind without them): what
        /// `changing` counts on.
        var roots: (source: String, destination: String) {
            (config.mirror?.source ?? "", config.mirror?.destination ?? "")
        }
    }

    init(
        store: ConfigurationStore, container: WeaveDI.Container, log: DaemonLog, registry: UnifiedRegistry,
        cancelledRunWait: Duration = .seconds(2)
    ) {
        self.store = store
        self.cancelledRunWait = cancelledRunWait
        self.container = container
        self.log = log
        self.registry = registry
        // A write that ends otherwise than the one before runs the file's check at once: health
        // says how the last write went as soon as it ended, not at the loop's next round.
        stateStore = SyncStateStore(stateDirectory: store.current.stateDirectory, log: log) { [registry] in
            _ = await registry.runCheck(Self.stateFileCheck)
        }
        // Its directory is shared (node_exporter's textfile collector): its temporary files carry
        // a marker of their own, by which those a crash left are known to be the daemon's.
        metricsWriter = LatestFileWriter(
            purpose: "the metrics file", permissions: 0o644, durable: false, temporaryMarker: Self.metricsTemporaryMarker, log: log
        ) { [registry] in
            _ = await registry.runCheck(Self.metricsFileCheck)
        }
        maxRuns = store.current.sync.maxConcurrentRuns
    }

    /// Makes the jobs, restores their last results, registers their health checks and starts
    /// their timers. A job whose kind cannot be made fails the start.
    public func start() async throws {
        let configuration = store.current
        if configuration.isBuiltInDefault { ExampleJob.prepare(configuration, log: log) }
        let saved = stateStore.load()
        persisted = saved.jobs
        // Run ids go on from the last one started before: one id, one run, across restarts.
        runCounter = saved.lastRunNumber
        stateFileUnreadable = saved.unreadable
        firstSeenNoted = false
        for config in configuration.sync.jobs { add(config, restoringPause: true) }
        // Jobs seen for the first time are written down now, not at the next run's end: a host
        // restarted more often than a job's interval would otherwise see it anew at every start,
        // and never run it. A file that could not be read is left as it is until a run's start
        // (its check says so meanwhile).
        if firstSeenNoted, saved.unreadable == nil { saveState() }
        registerStateFileCheck()
        if configuration.sync.metricsFile != nil { registerMetricsFileCheck() }
        log.info("sync", configuration.sync.jobs.isEmpty ? "no sync jobs configured" : "\(order.count) job(s): \(order.joined(separator: ", "))")
    }

    /// Adds the job `config`, with its last results from the state file; paused as the file
    /// says when `restoringPause` (at the start: a pause outlives a restart, while a job a
    /// reload adds back starts unpaused, as configured anew).
    private func add(_ config: DaemonConfiguration.Job, restoringPause: Bool = false) {
        var state = JobState(config: config, job: make(config))
        // First seen when the file does not say (a new job, a file written before it was kept),
        // and, for a job that has never run, when a reload adds it (back): its timer counts from
        // now.
        if let seen = persisted[config.name]?.firstSeenAt, restoringPause || persisted[config.name]?.lastRun != nil {
            // One in the future (a clock set back, a file edited) is taken as now, and written
            // so: kept, it would count the first run of a job that never ran from a time still to
            // come at every start (`firstWaitAtStart` says so in the log).
            let now = SystemClock.realtimeSeconds()
            state.firstSeenAt = min(seen, now)
            if seen > now { firstSeenNoted = true }
        } else {
            state.firstSeenAt = SystemClock.realtimeSeconds()
            firstSeenNoted = true
        }
        if let saved = persisted[config.name] {
            state.consecutiveFailures = saved.consecutiveFailures
            state.backoffLevel = saved.backoffLevel
            state.lastSuccess = saved.lastSuccess
            if let last = saved.lastRun { state.recent = [last] }
            state.lastKept = saved.lastRun
            state.unfinished = saved.endedUnfinished
            state.sourceMounts = saved.sourceMounts
            state.cleanupDue = saved.cleanupDue
            if restoringPause { state.neverEndedTwice = saved.neverEndedTwice }
            // Only at the start, and for the roots it was counted on: a job a reload adds back,
            // or whose roots changed while the daemon was down, counts afresh.
            if restoringPause, let changing = saved.changing, changing.isOf(source: state.roots.source, destination: state.roots.destination) {
                state.changing = changing
            }
            if restoringPause, saved.paused {
                state.paused = true
                log.notice("sync", "\(config.name): paused, as it was when the daemon stopped (weavedictl resume-job \(config.name) resumes it)")
            } else if saved.paused {
                // Added back by a reload, unpaused: the file must not pause it again at a restart.
                pauseDropped = true
            }
        }
        jobs[config.name] = state
        order.append(config.name)
        registerHealthCheck(config.name)
        if config.enabled, restoringPause {
            let first = firstWaitAtStart(config)
            schedule(config.name, after: first.wait)
            if let since = first.backoffSince {
                jobs[config.name]?.inBackoff = true
                jobs[config.name]?.backoffSince = since
            }
        } else if config.enabled {
            schedule(config.name, after: config.runAtStart ? .zero : config.interval + jitter(config.jitter))
        }
    }

    /// How long after the daemon's start `config`'s first run waits, as systemd timers'
    /// `Persistent=true` do: with `runAtStart`, none. Otherwise the interval is counted from
    /// the start of the job's last run that the state file keeps: the run waits what is left of
    /// it (never more than an interval: a time in the future, for a wall clock set back or a
    /// file edited, is taken as now, and the log says so), plus jitter; a job overdue
    /// at the start (that time has passed, while the daemon was down), or whose last run did
    /// not finish (cancelled by a stop, or never ended), runs now, after its jitter alone, and
    /// the log says why (for a job paused, that it stays paused: it does not run). A job that
    /// has no last run has its first run counted likewise from when the daemon first had it
    /// (`firstSeenAt` of the state file; this start for a job new to it): a weekly job that has
    /// never run runs a week after it was configured, however often the host restarts in
    /// between. A job whose last run failed, its backoff not reset since (`backoffLevel`),
    /// waits out a backoff as after that run, counted from the run's end: drawn anew (the draw
    /// before the stop is not kept), and said in the log as at the run's end (`retrying in …
    /// (backoff after 7 failed runs in a row, counted from the end of its last run docs-7)`); a
    /// backoff that has passed while the daemon was down runs the job now. `backoffSince` is
    /// that run's end, for a backoff still to wait out.
    private func firstWaitAtStart(_ config: DaemonConfiguration.Job) -> (wait: Duration, backoffSince: ContinuousClock.Instant?) {
        let name = config.name
        let saved = persisted[name]
        // Two runs of the job in a row never ended, the later one run again at once at a start:
        // a run that crashes the daemon would crash it at every start, at once (a restart loop
        // under systemd, until its start limit). It waits its interval, `runAtStart` or not.
        if let twice = saved?.neverEndedTwice {
            let runs = twice.runs
            let paused = jobs[name]?.paused == true ? " (it is paused)" : ""
            log.error("sync", "\(name): its \(runs) both never ended: the job's runs stopped the daemon twice in a row (a run "
                + "that crashes it?); it is not run again at once, but at its interval (\(Format.duration(seconds(config.interval))))"
                + "\(paused); weavedictl run-job \(name) runs it now")
            return (config.interval + jitter(config.jitter), nil)
        }
        if config.runAtStart { return (.zero, nil) }
        // A last run that never ended (a file whose `lastRun` was dropped as damaged keeps
        // saying so) runs again whatever the time.
        if let saved, saved.endedUnfinished || saved.lastRun?.result == .cancelled {
            log.notice("sync", "\(name): \(Self.unfinished(saved.lastRun?.id, neverEnded: saved.endedUnfinished))\(dueNow(config, again: "again "))")
            return (jitter(config.jitter), nil)
        }
        // A failed last run backs off as it did before the stop: the interval is not counted
        // from its start, which would run a job failing for hours every interval across restarts.
        if let saved, let last = saved.lastRun, last.result == .failed, saved.consecutiveFailures > 0, saved.backoffLevel > 0,
            let state = jobs[name]
        {
            // A run that ended in the future (a clock set back, a file edited) ended now.
            let ago = max(0, SystemClock.realtimeSeconds() - last.endedAt)
            let left = backoff(config, level: saved.backoffLevel) - .seconds(ago)
            guard left > .zero else {
                log.notice("sync", "\(name): its backoff after \(state.failuresInARow), counted from the end of its last run "
                    + "\(last.id), has passed\(dueNow(config, again: ""))")
                return (jitter(config.jitter), nil)
            }
            // A paused job keeps the timer (a resume before its end keeps the backoff), and stays paused.
            log.notice("sync", "\(name): retrying in \(Format.duration(seconds(left))) (backoff after \(state.failuresInARow), "
                + "counted from the end of its last run \(last.id))\(state.paused ? "; it stays paused" : "")")
            return (left, ContinuousClock.now - .seconds(ago))
        }
        // From the last run's start; for a job that has never run, from when it was first seen
        // (as the file says it: `add` takes one in the future as now).
        let counted = countedWait(
            config, last: saved?.lastRun.map { ($0.id, $0.startedAt) }, firstSeenAt: saved?.firstSeenAt ?? jobs[name]?.firstSeenAt)
        if let ahead = counted.ahead {
            log.warning("sync", "\(stateStore.path): job \(PersistedStateProblem.quoted(name)): \(ahead.field) is "
                + "\(Format.duration(ahead.by)) in the future (the clock was set back?); its next run is counted from now")
        }
        if counted.overdue {
            log.notice("sync", "\(name): overdue: \(counted.overdueText)\(dueNow(config, again: ""))")
        }
        return (counted.wait, nil)
    }

    /// What becomes of `config`'s job due now, for the log: a paused one does not run.
    /// Why a job whose last run did not finish runs again at once (at a start, a reload, a
    /// resume): `its last run docs-3 never ended (the destination may be behind)`.
    static func unfinished(_ lastRunID: String?, neverEnded: Bool) -> String {
        let run = lastRunID.map { "its last run \($0)" } ?? "its last run"
        return "\(run) \(neverEnded ? "never ended" : "was cancelled") (the destination may be behind)"
    }

    private func dueNow(_ config: DaemonConfiguration.Job, again: String) -> String {
        if jobs[config.name]?.paused == true { return "; it stays paused" }
        return ": it runs \(again)" + (config.jitter > .zero ? "within its jitter (\(Format.duration(seconds(config.jitter))))" : "now")
    }

    /// The next run of a job, counted as systemd's `Persistent=true` timers count it
    /// (`countedWait`): from the start of its last run, or when it was first seen.
    struct CountedWait {
        /// What is left of the interval (never more than one), plus jitter; jitter alone when
        /// overdue.
        let wait: Duration
        /// Whether the interval has passed since then: the job is due now.
        let overdue: Bool
        /// What it is counted from, for the log: `its last run docs-7 started`, or `it has never
        /// run, and was first seen`.
        let since: String
        /// How long ago that was, in seconds (none for a time in the future, taken as now).
        let ago: Double
        /// A time in the future (a clock set back, a file edited), taken as now: the state
        /// file's field that holds it (`lastRun.startedAt`, `firstSeenAt`), and how far ahead.
        let ahead: (field: String, by: Double)?
        /// The job's interval, in seconds.
        let interval: Double

        /// `its last run docs-41 started 2h 00m ago, more than its interval (1h 00m)`.
        var overdueText: String {
            "\(since) \(Format.duration(ago)) ago, more than its interval (\(Format.duration(interval)))"
        }
    }

    /// How long `config`'s job waits for its next run, counted from the start of its last run
    /// (`last`, its id and start in seconds since 1970), or, for a job that has never run, from
    /// when it was first seen (`firstSeenAt`; now when nil): what is left of the interval since
    /// then, plus jitter, never more than an interval (a time in the future is taken as now);
    /// jitter alone once the interval has passed (overdue). The start counts a job's first run
    /// so (`firstWaitAtStart`), and a reload the next run of a job whose schedule it changed
    /// (`reloadTimer`); each says it in the log in its own words.
    func countedWait(_ config: DaemonConfiguration.Job, last: (id: String, startedAt: Double)?, firstSeenAt: Double?) -> CountedWait {
        let now = SystemClock.realtimeSeconds()
        let (counted, field) = last.map { ($0.startedAt, "lastRun.startedAt") } ?? (firstSeenAt ?? now, "firstSeenAt")
        // A last run's times stay as they are (they are its history): only the count takes now.
        let from = min(counted, now)
        let interval = seconds(config.interval)
        let left = from + interval - now
        let since = last.map { "its last run \($0.id) started" } ?? "it has never run, and was first seen"
        return CountedWait(
            wait: left > 0 ? min(.seconds(left), config.interval) + jitter(config.jitter) : jitter(config.jitter), overdue: left <= 0,
            since: since, ago: now - from, ahead: counted > now ? (field, counted - now) : nil, interval: interval)
    }

    /// Stops the timers and cancels running runs, which stop at a safe point; waits for them.
    public func stop() async {
        stopping = true
        for loop in loops.values { loop.cancel() }
        loops = [:]
        for run in jobs.values.compactMap(\.running) { cancelReasons[run.id] = "the daemon is stopping" }
        let running = jobs.values.compactMap(\.running?.task) + orphans.values.map(\.task)
        // The runs in line leave it now: a slot freed by a run stopping goes to none of them.
        for waiter in slotWaiters { waiter.continuation?.resume(returning: false) }
        slotWaiters = []
        for run in running { run.cancel() }
        // Waited for `cancelledRunWait` at most from now: a run that ignores its cancellation is
        // given up on, booked cancelled, so that the state file written below says it ended and
        // the daemon exits normally (not after its shutdown timeout, the run said never ended).
        let deadline = ContinuousClock.now + cancelledRunWait
        for (name, run) in jobs.compactMap({ name, state in state.running.map { (name, $0) } }) {
            _ = await waitForCancelled(name, runID: run.id, task: run.task, until: deadline)
        }
        for (id, orphan) in orphans {
            _ = await waitForCancelled(orphan.job, runID: id, task: orphan.task, until: deadline)
        }
        saveState()
        await stateStore.flush()
        await metricsWriter.flush()
    }

    /// Applies new job settings: jobs added, removed or changed take effect now (a running run
    /// of a changed job finishes under its old settings, one waiting for a slot starts under
    /// the new ones; its schedule is kept where it can be, `reloadTimer`), and a raised cap on
    /// runs at once starts runs waiting for a slot.
    public func reload(_ configuration: DaemonConfiguration) async throws {
        maxRuns = configuration.sync.maxConcurrentRuns
        defer { admitWaiters() }
        if configuration.sync.metricsFile == nil {
            registry.unregister(Self.metricsFileCheck)
        } else if store.current.sync.metricsFile == nil {
            registerMetricsFileCheck()
        }
        let wanted = Dictionary(uniqueKeysWithValues: configuration.sync.jobs.map { ($0.name, $0) })
        for name in order where wanted[name] == nil {
            loops.removeValue(forKey: name)?.cancel()
            if let run = jobs[name]?.running {
                cancelReasons[run.id] = "the job was removed from the configuration by a reload"
                run.task.cancel()
                leaveLine(run.id)
                orphans[run.id] = (name, run.task)
            }
            jobs.removeValue(forKey: name)
            registry.unregister("job.\(name)")
        }
        pauseDropped = false
        firstSeenNoted = false
        defer { if pauseDropped || firstSeenNoted { saveState() } }
        for config in configuration.sync.jobs {
            guard var state = jobs[config.name] else {
                add(config)
                continue
            }
            if state.config != config {
                // Files changing in other roots say nothing of these.
                if state.config.mirror?.source != config.mirror?.source || state.config.mirror?.destination != config.mirror?.destination {
                    state.changing = nil
                }
                let old = state.config
                state.job = make(config)
                state.config = config
                jobs[config.name] = state
                // Set before the line, not in it: the line's text is made only when the log takes
                // it, and a sync log quieter than notice would leave the timer as it was (a job
                // enabled again with none, one disabled still running, a new interval unused).
                let timer = reloadTimer(config.name, was: old)
                log.notice("sync", "\(config.name): changed by the reload; \(timer)")
            }
        }
        // The jobs in the configuration's order (`ListJobs`, the metrics), not in the order they
        // came: a job added back by a later reload, or added between two, stands where it is
        // configured.
        order = configuration.sync.jobs.map(\.name)
    }

    /// Sets the timer of `name`, whose configuration a reload changed (it was `old`); says how,
    /// for the log. A change that leaves its schedule alone (`interval`, `jitter` and `enabled`
    /// as they were) leaves its timer going: its next run, a backoff being waited out (one that
    /// a lower `backoffCap` ends sooner: no later than the new cap after the failed run), a run
    /// missed while paused. A new `interval` or `jitter`, or a job enabled again, has its next
    /// run counted from the start of its last run, as at the start (`countedWait`), not a whole
    /// interval from the reload; overdue, it runs now (after its jitter), and so does one whose
    /// last run did not finish (never ended, or was cancelled), as at a start. A backoff being waited
    /// out ends then (the failures in a row stay counted: the next failure backs off further).
    /// A paused job stays paused, its timer set likewise. A job disabled loses its timer.
    private func reloadTimer(_ name: String, was old: DaemonConfiguration.Job) -> String {
        guard let state = jobs[name] else { return "" }
        let config = state.config
        guard config.enabled else {
            loops.removeValue(forKey: name)?.cancel()
            // No timer, no backoff being waited out: a reset (a success, the fix) must not
            // start a timer for a job disabled here.
            jobs[name]?.inBackoff = false
            return old.enabled ? "disabled: its timer is stopped (a run by hand still works)" : "it is disabled"
        }
        let paused = state.paused ? "; it stays paused" : ""
        let now = ContinuousClock.now
        if old.enabled, old.interval == config.interval, old.jitter == config.jitter, loops[name] != nil, let next = state.nextRun {
            if let missed = state.missedWhilePaused, state.paused {
                return "it stays paused; a run was due while it was paused (\(Format.duration(seconds(now - missed))) ago): "
                    + "it runs once resumed"
            }
            var why = state.plannedNote
            var how = ", as planned"
            var when = next
            // A backoff drawn under the cap it had: a lower one ends it no later than the new
            // cap after the failed run (at once when that has passed).
            if state.running == nil, state.inBackoff, let since = state.backoffSince, since + config.backoffCap < next {
                when = max(now, since + config.backoffCap)
                schedule(name, after: when - now)
                jobs[name]?.inBackoff = true
                how = ""
                why = " (backoff after \(state.failuresInARow), ended sooner by the new backoffCap, "
                    + "\(Format.duration(seconds(config.backoffCap))))"
            }
            return "next run in \(Format.duration(seconds(max(.zero, when - now))))\(how)\(why)\(paused)"
        }
        // Two runs in a row that never ended: as at the start, not counted from them (a run
        // that crashes the daemon would run again at once), but an interval from now.
        if let twice = state.neverEndedTwice {
            let wait = config.interval + jitter(config.jitter)
            schedule(name, after: wait)
            let runs = twice.runs
            return "next run in \(Format.duration(seconds(wait))) (an interval from now: its \(runs) both never ended)\(paused)"
        }
        // A run going is the job's last run: counted from its start; one waiting for a slot, or
        // started more than an interval ago, does the run due, and the next comes an interval
        // from now (a tick at once would only be skipped beside it).
        if let run = state.running {
            if let started = run.startedAt {
                let counted = countedWait(config, last: (run.id, started), firstSeenAt: nil)
                if !counted.overdue {
                    schedule(name, after: counted.wait)
                    return "next run in \(Format.duration(seconds(counted.wait))) (counted from its run \(run.id), going, started "
                        + "\(Format.duration(counted.ago)) ago)\(paused)"
                }
            }
            let wait = config.interval + jitter(config.jitter)
            schedule(name, after: wait)
            // The run due, of a job paused: one that fails or is cancelled leaves it missed,
            // made up once the job is resumed (`tickLeftToRun`), as a tick beside the run would.
            if state.paused, state.tickLeftToRun == nil { jobs[name]?.tickLeftToRun = (run.id, now) }
            return "next run in \(Format.duration(seconds(wait))) (an interval from now: its run \(run.id) "
                + "\(run.isQueued ? "waits for a slot" : "is going, started more than an interval ago"))\(paused)"
        }
        let last = state.lastKept
        // A last run that did not finish (never ended, or was cancelled), no run having done
        // work since, is run again now, as at a start and a resume: a job disabled while its
        // run never ended (the daemon stopped) catches up once enabled again.
        if state.unfinished || last?.result == .cancelled {
            schedule(name, after: jitter(config.jitter))
            return "\(Self.unfinished(last?.id, neverEnded: state.unfinished))\(dueNow(config, again: "again "))"
        }
        let counted = countedWait(config, last: last.map { ($0.id, $0.startedAt) }, firstSeenAt: state.firstSeenAt)
        schedule(name, after: counted.wait)
        if counted.overdue { return "overdue: \(counted.overdueText)\(dueNow(config, again: ""))" }
        let from = last.map { "its last run \($0.id)" } ?? "when it was first seen"
        let ago = counted.ahead.map { "\(Format.duration($0.by)) in the future (the clock was set back?), so from now" }
            ?? "\(Format.duration(counted.ago)) ago"
        return "next run in \(Format.duration(seconds(counted.wait))) (counted from \(from), \(ago))\(paused)"
    }

    /// The job for `config`; one that cannot be made fails every run with the reason, so
    /// health shows it while the other jobs go on.
    private func make(_ config: DaemonConfiguration.Job) -> any SyncJob {
        guard let maker = SyncJobKinds.maker(for: config.kind) else {
            log.error("sync", "job \(config.name): no job kind '\(config.kind)' in this build")
            return UnavailableJob(reason: "no job kind '\(config.kind)' in this build")
        }
        do { return try maker(config, container) } catch {
            log.error("sync", "job \(config.name): \(error)")
            return UnavailableJob(reason: "\(error)")
        }
    }

    // MARK: Timers

    /// (Re)starts `name`'s timer: the first tick after `delay`, then every interval plus jitter.
    func schedule(_ name: String, after delay: Duration) {
        loops.removeValue(forKey: name)?.cancel()
        guard !stopping else { return }
        jobs[name]?.nextRun = ContinuousClock.now + delay
        jobs[name]?.inBackoff = false
        jobs[name]?.missedWhilePaused = nil
        // A tick left to the run going (`tickLeftToRun`) stays: that run does its work still, or
        // leaves it missed (a reload that counts the next run from that run, while it goes).
        // A timer a fix (re)starts is not part of the fix: neither the fix's attempt nor who
        // asked for it follows it.
        loops[name] = Task { [weak self] in
            await FixRecord.outsideAnyFix {
                var wait = delay
                while !Task.isCancelled {
                    do { try await Task.sleep(for: wait) } catch { return }
                    guard let self, let next = await self.tick(name) else { return }
                    wait = next
                }
            }
        }
    }

    /// One timer tick: starts a run unless paused or already running; returns the next wait.
    /// Nothing for a loop cancelled meanwhile: one whose sleep had ended, waiting for the actor
    /// when `schedule` (a resume, a reload, a reset of the backoff) replaced it, would start a
    /// run the new timer does not plan. It runs on the actor after the code that cancelled it,
    /// so it sees that.
    private func tick(_ name: String) -> Duration? {
        guard !Task.isCancelled, var state = jobs[name], !stopping else { return nil }
        let next = state.config.interval + jitter(state.config.jitter)
        state.nextRun = ContinuousClock.now + next
        state.inBackoff = false
        if state.paused {
            // A run of it going (by hand) does the work of this one: nothing is missed, as an
            // unpaused job's tick beside its run is only skipped.
            if let running = state.running {
                // Unless it fails, or is cancelled: then this tick is a run missed (`finish`).
                if state.tickLeftToRun == nil { state.tickLeftToRun = (running.id, .now) }
                log.debug("sync", "\(name): a run is due while the job is paused, and run \(running.id) of it is going: that run "
                    + "does its work")
            } else if state.missedWhilePaused == nil {
                state.missedWhilePaused = .now
                log.debug("sync", "\(name): a run is due, but the job is paused: it runs once resumed")
            }
            jobs[name] = state
            return next
        }
        jobs[name] = state
        if let removed = orphanRunID(of: name) {
            jobs[name]?.skippedRuns += 1
            jobs[name]?.runsAfterRemovedRun = true
            log.notice("sync", "\(name): run \(removed) of the removed job of this name is still stopping; this run starts once it has")
            return next
        }
        if state.running != nil {
            jobs[name]?.skippedRuns += 1
            log.notice("sync", "\(name): the previous run is still going; this run is skipped")
            return next
        }
        _ = launch(name)
        return next
    }

    /// Starts `name`'s timer again as the job is resumed (it was paused, and is enabled); says
    /// how, for the log. A job due runs at once (after its jitter), as systemd's
    /// `Persistent=true` timers catch up, and by the rules of the start (`firstWaitAtStart`):
    /// its last run did not finish (never ended, or was cancelled) and no run has done work
    /// since, but for two in a row that never ended; or a tick of its timer came while it was
    /// paused (`missedWhilePaused`: the run it missed; the start's first tick of a job overdue
    /// then is one, and so is one that came before a run by hand, or while it went, when that
    /// run then failed or was cancelled, `tickLeftToRun`), or is due now. Otherwise its timer
    /// goes on as planned (the interval, or a backoff being waited out), not a whole interval
    /// from now; and so it does while a run of the job is going, which does its work (a tick
    /// would skip).
    func resumeTimer(_ name: String) -> String {
        guard let state = jobs[name] else { return "resumed" }
        let config = state.config
        let now = ContinuousClock.now
        func runsNow(_ again: String) -> String {
            schedule(name, after: jitter(config.jitter))
            return "it runs \(again)" + (config.jitter > .zero ? "within its jitter (\(Format.duration(seconds(config.jitter))))" : "now")
        }
        if state.running == nil {
            if state.unfinished || state.lastKept?.result == .cancelled, state.neverEndedTwice == nil {
                return "resumed: \(Self.unfinished(state.lastKept?.id, neverEnded: state.unfinished)); \(runsNow("again "))"
            }
            if let due = state.missedWhilePaused ?? state.nextRun.flatMap({ $0 <= now ? $0 : nil }) {
                return "resumed: a run was due while it was paused (\(Format.duration(seconds(now - due))) ago); \(runsNow(""))"
            }
        }
        jobs[name]?.missedWhilePaused = nil
        guard loops[name] != nil, let next = state.nextRun else {
            // No timer going: started anew.
            let wait = config.interval + jitter(config.jitter)
            schedule(name, after: wait)
            return "resumed; next run in \(Format.duration(seconds(wait)))"
        }
        if state.running == nil, !state.inBackoff, let twice = state.neverEndedTwice {
            return "resumed: its \(twice.runs) both never ended, so it is not run again at once, but at its interval; next run in "
                + "\(Format.duration(seconds(next - now))) (weavedictl run-job \(name) runs it now)"
        }
        return "resumed; next run in \(Format.duration(seconds(next - now)))\(state.plannedNote)"
    }

    /// Resets `name`'s backoff (a success, the job's fix): a timer waiting out a backoff is
    /// started again on the interval, as after a run that did not fail.
    func resetBackoff(_ name: String) {
        jobs[name]?.backoffLevel = 0
        guard let state = jobs[name], state.inBackoff, state.config.enabled else { return }
        schedule(name, after: state.config.interval + jitter(state.config.jitter))
    }

    /// The wait after `failures` failed runs in a row: full jitter over an exponential backoff
    /// starting at the interval, capped at the job's backoffCap.
    func backoff(_ config: DaemonConfiguration.Job, level: Int) -> Duration {
        var ceiling = config.interval
        // Doubled until the cap, not once per level: a level of millions (a job failing for
        // years, a file edited) costs a few rounds.
        var doublings = 1
        while doublings < level, ceiling < config.backoffCap {
            ceiling = ceiling * 2
            doublings += 1
        }
        return fullJitter(min(ceiling, config.backoffCap))
    }

    func jitter(_ maximum: Duration) -> Duration {
        maximum > .zero ? fullJitter(maximum) : .zero
    }

    // MARK: The cap on runs at once

    /// Takes a free slot for a run being launched, if there is one and no run waits for one
    /// before it: true when taken.
    func takeFreeSlot() -> Bool {
        guard slotsInUse < maxRuns, slotWaiters.isEmpty else { return false }
        slotsInUse += 1
        return true
    }

    /// Puts the run `runID` of `job`, being launched without a slot, in line for one, behind
    /// the runs launched before it. On the actor, as it is launched: a slot that frees before
    /// the run's task first runs is its, not a run's launched after it (`takeFreeSlot` takes
    /// none while a run waits).
    func joinLine(_ runID: String, of job: String) {
        slotWaiters.append(SlotWaiter(job: job, runID: runID))
    }

    /// Waits in its place in line (`joinLine`) for a slot for the run `runID`: true once it
    /// holds one (its `started` set then). A run cancelled while it waits (its job removed by a
    /// reload, the daemon stopping) leaves the line at once: false, and no slot taken.
    func acquireSlot(for runID: String) async -> Bool {
        if slotsGiven.remove(runID) != nil { return true }
        if Task.isCancelled {
            leaveLine(runID)
            return false
        }
        guard slotWaiters.contains(where: { $0.runID == runID }) else { return false }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if let index = slotWaiters.firstIndex(where: { $0.runID == runID }) {
                    slotWaiters[index].continuation = continuation
                } else {
                    // Out of line meanwhile: given a slot, or taken out as cancelled.
                    continuation.resume(returning: slotsGiven.remove(runID) != nil)
                }
            }
        } onCancel: {
            Task { await self.leaveLine(runID) }
        }
    }

    /// Takes the run `runID`, cancelled, out of the line for a slot; nothing when it is no
    /// longer in it (it was given a slot first, and stops before it starts).
    func leaveLine(_ runID: String) {
        guard let index = slotWaiters.firstIndex(where: { $0.runID == runID }) else { return }
        slotWaiters.remove(at: index).continuation?.resume(returning: false)
    }

    func releaseSlot() {
        slotsInUse -= 1
        admitWaiters()
    }

    /// Hands free slots to waiting runs, first come first served. After a reload lowered the
    /// cap, runs beyond it finish and none starts until the count is under the new cap.
    private func admitWaiters() {
        while slotsInUse < maxRuns, !slotWaiters.isEmpty {
            slotsInUse += 1
            let waiter = slotWaiters.removeFirst()
            markStarted(waiter.runID, of: waiter.job)
            if let continuation = waiter.continuation {
                continuation.resume(returning: true)
            } else {
                slotsGiven.insert(waiter.runID)
            }
        }
    }

    /// The run `runID` of `job` holds a slot from now: it is no longer queued (`ListJobs`, the
    /// metrics), and the job's fix counts it stuck from here, not from its launch.
    private func markStarted(_ runID: String, of job: String) {
        if jobs[job]?.running?.id == runID { jobs[job]?.running?.started = .now }
    }
}
