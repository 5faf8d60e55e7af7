import WeaveDI
import WeaveDIControl
import WeaveDIPosix

extension SyncScheduler {
    /// Starts a run of `name` (waiting for a free slot first: a slot free now is taken now, so
    /// that whoever asked is told truly whether the run waits); returns its task.
    func launch(_ name: String) -> Task<SyncRunRecord, Never>? {
        guard let state = jobs[name], state.running == nil, !stopping, !hasOrphanRun(name), givenUpRunID(of: name) == nil else {
            return nil
        }
        // Held at the most the state file takes (2^53 − 1, far beyond any number of runs: only a
        // file edited gets there): past it the next start would refuse the count, and give
        // ids again from the jobs' last runs. There, runs repeat the last id.
        runCounter = min(runCounter + 1, SyncStateStore.maximumRunNumber)
        let runID = "\(name)-\(runCounter)"
        // The count is saved as the run is launched, not only once it ends: a daemon killed
        // during the run (SIGKILL, a crash, the power) gives no later run this id.
        saveState()
        let job = state.job
        let listeners = state.listeners
        let runsGoing = slotsInUse
        let holdsSlot = takeFreeSlot()
        if !holdsSlot { joinLine(runID, of: name) }
        // A run a fix starts is not part of the fix: neither the fix's attempt (its time
        // left) nor who asked for it follows it.
        let task = Task {
            await FixRecord.outsideAnyFix {
                await self.execute(name, runID: runID, job: job, listeners: listeners, holdsSlot: holdsSlot)
            }
        }
        let queued = holdsSlot ? nil : SlotWait(runsGoing: runsGoing, maxConcurrentRuns: maxRuns)
        if let queued {
            log.info("sync", "\(name): run \(runID) waits for a slot (\(queued))")
        }
        jobs[name]?.running = ActiveRun(task: task, id: runID, started: holdsSlot ? .now : nil, queued: queued)
        jobs[name]?.progress = SyncProgress()
        // A run missed while the job was paused is made up by this one; the job still paused,
        // this run does that tick's work as if the tick had come while it went
        // (`tickLeftToRun`): a failure or a cancellation leaves it missed (`finish`).
        if let missed = jobs[name]?.missedWhilePaused, jobs[name]?.paused == true {
            jobs[name]?.tickLeftToRun = (runID, missed)
        }
        jobs[name]?.missedWhilePaused = nil
        return task
    }

    private func execute(
        _ name: String, runID: String, job: any SyncJob, listeners: ProgressListeners, holdsSlot: Bool
    ) async -> SyncRunRecord {
        // In line for a slot first, in the order the runs were launched; a run cancelled there
        // ends at once, and takes none.
        let waited = !holdsSlot
        var holdsSlot = holdsSlot
        if waited { holdsSlot = await acquireSlot(for: runID) }
        let startWall = SystemClock.realtimeSeconds()
        let start = ContinuousClock.now
        var outcome: SyncOutcome
        // Whether it went to its work: one cancelled before changed nothing (`lastKept`).
        var worked = false
        // The job's memory of files changing as they are copied after this run, if it tells.
        var changingAfter: ChangingFiles?
        if !holdsSlot {
            outcome = SyncOutcome(result: .cancelled, message: "cancelled while it waited for a slot")
        } else if stopping || Task.isCancelled {
            outcome = SyncOutcome(result: .cancelled, message: "cancelled before it started")
        } else {
            // The job as it is now, not as it was at the launch: a reload while the run waited
            // for its slot changed what it copies, and where (only a run going keeps its
            // settings). Its session, opened below, serves that job.
            let job = jobs[name].flatMap { $0.running?.id == runID ? $0.job : nil } ?? job
            // Who follows a run that waited hears it started now, not once it had its slot: a
            // run given one as the daemon stops ends above, without starting.
            if waited { listeners.sendStarted() }
            // The state file says the run is going until it ends: a daemon that stops without
            // ending it (killed, crashed, the power) is told so at its next start.
            if jobs[name]?.running?.id == runID {
                jobs[name]?.running?.startedAt = startWall
                saveState()
            }
            // A write of the state file makes a temporary file in the state directory, which a
            // job may mirror (a backup of /var/lib): the run's walk would meet it vanishing. The
            // writes asked for so far are waited for, up to `stateWriteWait`, so that a state
            // directory that stops answering holds a run no longer than that.
            _ = await withTimeout(Self.stateWriteWait, clock: SystemHealthClock()) { [stateStore] in await stateStore.flush() }
            let session = container.openSession(id: "job-\(runID)", attributes: ["kind": "job", "job": name])
            // What the runs before skipped as changed while being copied, of the roots this run
            // copies (`ChangingFiles`).
            let roots = jobs[name]?.roots ?? (source: "", destination: "")
            let changing = jobs[name]?.changing.flatMap { $0.isOf(source: roots.source, destination: roots.destination) ? $0 : nil }
                ?? ChangingFiles(source: roots.source, destination: roots.destination)
            var context = SyncRunContext(runID: runID, job: name, session: session, log: log) { [weak self] progress in
                listeners.send(progress)
                Task { await self?.note(progress, for: name, runID: runID) }
            }
            context.sourceMounts = jobs[name]?.sourceMounts
            context.cleanupDue = jobs[name]?.cleanupDue ?? false
            context.changingFiles = changing.runs
            log.info("sync", "\(name): run \(runID) started")
            worked = true
            let kind = jobs[name]?.config.kind ?? "?"
            outcome = await session.withCurrent { await job.run(context) }
            // What a kind returns is checked once, here: its counts, items and mount points are
            // what the daemon keeps, shows and writes.
            let (checked, problems) = outcome.checked()
            if !problems.isEmpty {
                log.warning("sync", "job \(PersistedStateProblem.quoted(name)) (kind \(PersistedStateProblem.quoted(kind))) returned "
                    + problems.joined(separator: "; "))
            }
            outcome = checked
            changingAfter = outcome.changedWhileCopying.map { changing.after($0) }
            await session.close()
        }
        // A run given up on (it did not stop within `cancelledRunWait` of its cancellation) was
        // booked then, and its slot freed: its end now is only logged.
        if givenUp.removeValue(forKey: runID) != nil {
            cancelReasons[runID] = nil
            log.notice("sync", "\(name): run \(runID), given up on as it did not stop when cancelled, has ended at last "
                + "(\(outcome.result.rawValue))")
            startRunSkippedForRemovedRun(name)
            return SyncRunRecord(
                id: runID, job: name, outcome: outcome, startedAt: startWall, endedAt: SystemClock.realtimeSeconds(),
                duration: seconds(ContinuousClock.now - start))
        }
        if holdsSlot { releaseSlot() }
        // A run the daemon cancelled says why (its job removed by a reload, the daemon stopping).
        if let reason = cancelReasons.removeValue(forKey: runID), outcome.result == .cancelled {
            outcome.message = reason + (outcome.message.map { "; " + $0 } ?? "")
        }
        let duration = ContinuousClock.now - start
        let record = SyncRunRecord(
            id: runID, job: name, outcome: outcome, startedAt: startWall,
            endedAt: SystemClock.realtimeSeconds(), duration: seconds(duration))
        finish(name, record, worked: worked, outcome: outcome, changing: changingAfter)
        // The job's check says how this run went as soon as it ends, not at the next round of
        // the health loop: whoever waited for the run (`run-job --wait`) and asks for the
        // health next sees it there.
        await registry.runCheck("job.\(name)")
        return record
    }

    /// Starts the run of `name` a tick skipped while the run of the removed job of that name
    /// stopped, now that it (the last of them) has ended, unless the job was paused, disabled
    /// or removed since, or already runs (by hand).
    private func startRunSkippedForRemovedRun(_ name: String) {
        guard let state = jobs[name], state.runsAfterRemovedRun, !hasOrphanRun(name) else { return }
        jobs[name]?.runsAfterRemovedRun = false
        guard state.config.enabled, !state.paused, state.running == nil, !stopping else { return }
        log.info("sync", "\(name): the removed job's run has ended; the run its timer skipped starts now")
        _ = launch(name)
    }

    /// Waits for the run `runID` of `name` (its `task`), cancelled, until `deadline`: its record
    /// once it ended, or nil when it did not stop by then, given up on (`giveUp`).
    func waitForCancelled(
        _ name: String, runID: String, task: Task<SyncRunRecord, Never>, until deadline: ContinuousClock.Instant
    ) async -> SyncRunRecord? {
        let left = max(.zero, deadline - ContinuousClock.now)
        if let record = await withTimeout(left, clock: SystemHealthClock(), { await task.value }) { return record }
        giveUp(name, runID: runID)
        return nil
    }

    /// Gives up on the run `runID` of `name`, cancelled, that did not stop within
    /// `cancelledRunWait` (a job kind that ignores its cancellation): it is booked `cancelled`
    /// now, saying so, its slot freed and the state file written (no longer `runGoing`); its
    /// job starts no run until it has ended at last. A removed job's run is only logged.
    private func giveUp(_ name: String, runID: String) {
        let limit = Format.duration(seconds(cancelledRunWait))
        let said = "the job's run did not stop within \(limit) of its cancellation: given up on (it may go on until it "
            + "returns, or the daemon exits)"
        if orphans.removeValue(forKey: runID) != nil {
            givenUp[runID] = name
            log.warning("sync", "\(name): run \(runID) of a job removed by a reload: \(said)")
            if persisted[name]?.runGoing?.id == runID { saveState() }
            return
        }
        guard let run = jobs[name]?.running, run.id == runID else { return }
        givenUp[runID] = name
        log.warning("sync", "\(name): run \(runID): \(said)")
        if run.started != nil { releaseSlot() } else { leaveLine(runID) }
        let message = (cancelReasons.removeValue(forKey: runID).map { $0 + "; " } ?? "") + said
        let now = SystemClock.realtimeSeconds()
        let duration = run.started.map { seconds(ContinuousClock.now - $0) } ?? 0
        let record = SyncRunRecord(
            id: runID, job: name, outcome: SyncOutcome(result: .cancelled, message: message),
            startedAt: run.startedAt ?? now, endedAt: now, duration: duration)
        finish(name, record, worked: run.startedAt != nil, outcome: SyncOutcome(result: .cancelled, message: message))
    }

    /// The id of a run of `name` given up on that has not ended yet, if any.
    func givenUpRunID(of name: String) -> String? {
        givenUp.filter { $0.value == name }.keys.min()
    }

    /// Whether a run of a removed job named `name` is still stopping.
    func hasOrphanRun(_ name: String) -> Bool {
        orphans.values.contains { $0.job == name }
    }

    /// The id of the run of a removed job named `name` that is still stopping, if any (the
    /// first by id, should there be more than one).
    func orphanRunID(of name: String) -> String? {
        orphans.filter { $0.value.job == name }.keys.min()
    }

    /// Keeps the latest progress for `ListJobs`.
    private func note(_ progress: SyncProgress, for name: String, runID: String) {
        guard jobs[name]?.running?.id == runID else { return }
        jobs[name]?.progress = progress
    }

    /// Books a finished run: counters, backoff, recent runs, persistence, metrics file.
    /// A run of a job that reloads removed (and maybe added again since) is only logged.
    /// `changing`, the job's memory of files changing as they are copied after the run, is
    /// taken when the run told it, of the roots the job has now.
    func finish(_ name: String, _ record: SyncRunRecord, worked: Bool, outcome: SyncOutcome, changing: ChangingFiles? = nil) {
        guard var state = jobs[name], state.running?.id == record.id else {
            orphans.removeValue(forKey: record.id)
            // Its end in the line of every run's end, with its counts and message.
            var summary = SyncRunSummary(record)
            summary.id = nil
            let line = "\(name): run \(record.id) of a job removed by a reload " + summary.text()
            if record.result == .failed { log.error("sync", line) } else { log.info("sync", line) }
            // The state file no longer says it is going.
            if persisted[name]?.runGoing?.id == record.id { saveState() }
            startRunSkippedForRemovedRun(name)
            return
        }
        state.running = nil
        state.progress = nil
        state.recent.append(record)
        if worked || record.result != .cancelled { state.lastKept = record }
        // A run that did work is the job's last: a run before it that never ended is behind it.
        if worked {
            state.unfinished = false
            state.neverEndedTwice = nil
            // What the run says is left of a run that never ended, and what it found mounted
            // below the source (nil: it did not look, and what was remembered stays).
            state.cleanupDue = outcome.cleanupDue
            if let mounts = outcome.sourceMounts { state.sourceMounts = mounts.paths.isEmpty ? nil : mounts }
        }
        if state.recent.count > Self.recentRunLimit { state.recent.removeFirst(state.recent.count - Self.recentRunLimit) }
        state.runsByResult[record.result, default: 0] += 1
        state.filesCopied = state.filesCopied.saturatingAdd(record.copied).saturatingAdd(record.updated)
        state.bytesCopied = state.bytesCopied.saturatingAdd(record.bytes)
        state.filesSkipped = state.filesSkipped.saturatingAdd(record.skipped)
        if let changing, changing.isOf(source: state.roots.source, destination: state.roots.destination) {
            state.changing = changing.runs.isEmpty ? nil : changing
        }
        // Only a success is a success (`lastSuccess`, which `staleAfterIntervals` and the metrics
        // file's last success time go by): a partial run, some items failed (every one, on a
        // destination that turned read-only), is not one. But it went through the tree, so it is
        // no failed run either: it ends the failures in a row and the backoff, which wait for a
        // source or a destination to come back; the job runs at its interval, degraded, and
        // turns unhealthy once no success came for `staleAfterIntervals` intervals.
        switch record.result {
        case .success:
            state.consecutiveFailures = 0
            state.lastSuccess = record.endedAt
            state.lastSuccessInstant = ContinuousClock.now
        case .partial:
            state.consecutiveFailures = 0
        case .failed:
            // Held at the most the state file takes: past it the next start would refuse the
            // job's entry, and start it without its previous results.
            state.consecutiveFailures = min(state.consecutiveFailures + 1, PersistedJobState.maximumFailures)
            state.backoffLevel = min(state.backoffLevel + 1, PersistedJobState.maximumFailures)
        case .cancelled, .skipped:
            break
        }
        // A tick that came while the job was paused, whose work this run was to do: a run that
        // failed or was cancelled did not do it, and the job, still paused, has missed it (it
        // runs once resumed, as if nothing had been going). A job resumed meanwhile (and not
        // paused again) goes by the run's end as any other: a failure backs off.
        if let tick = state.tickLeftToRun, tick.runID == record.id {
            state.tickLeftToRun = nil
            if state.paused, record.result == .failed || record.result == .cancelled {
                state.missedWhilePaused = min(state.missedWhilePaused ?? tick.at, tick.at)
                log.debug("sync", "\(name): run \(record.id), which was to do the work of a run due while the job was paused, "
                    + "\(record.result.rawValue): that run is missed, and runs once the job is resumed")
            }
        }
        jobs[name] = state
        if record.result == .success || record.result == .partial { resetBackoff(name) }
        // The line weavedictl shows for the run's end too (`run-job --wait`).
        let line = "\(name): " + SyncRunSummary(record).text()
        if record.result == .failed { log.error("sync", line) } else { log.info("sync", line) }
        if record.result == .failed, !stopping, state.config.enabled, !state.paused {
            let wait = backoff(state.config, level: state.backoffLevel)
            let failures = state.failuresInARow
            // Durations as in the run's line just above (`failed in 16 ms`).
            log.notice("sync", "\(name): retrying in \(Format.duration(seconds(wait))) (backoff after \(failures))")
            schedule(name, after: wait)
            jobs[name]?.inBackoff = true
            jobs[name]?.backoffSince = .now
        }
        saveState()
        writeMetricsFile()
    }

    /// Writes the jobs' last results to the state file: those of the jobs configured, and of at
    /// most `removedJobEntryLimit` jobs that are not (any more), those that ran last.
    @discardableResult
    func saveState() -> UInt64 {
        var states: [String: PersistedJobState] = [:]
        // A run going of a job that a reload removed (and maybe added back since) is said
        // going until it ends, as the job's own.
        func orphanGoing(_ name: String) -> PersistedJobState.RunGoing? {
            persisted[name]?.runGoing.flatMap { orphans[$0.id] == nil ? nil : $0 }
        }
        for (name, state) in jobs {
            let last = state.lastKept ?? persisted[name]?.lastRun
            let going = state.running.flatMap { run in run.startedAt.map { PersistedJobState.RunGoing(id: run.id, startedAt: $0) } }
            states[name] = PersistedJobState(
                lastRun: last, lastSuccess: state.lastSuccess, consecutiveFailures: state.consecutiveFailures,
                backoffLevel: state.backoffLevel, runGoing: going ?? orphanGoing(name), paused: state.paused,
                firstSeenAt: state.firstSeenAt, endedUnfinished: state.unfinished, sourceMounts: state.sourceMounts,
                cleanupDue: state.cleanupDue)
            states[name]?.changing = state.changing
        }
        // A job removed and added back keeps its last result (health knows how old its last
        // success is); but a configuration churned through many names must not grow the file
        // for ever: past 16 MiB it would not be read at all, and every job would start afresh.
        var removed = persisted.filter { states[$0.key] == nil }.map { (name: $0.key, state: $0.value) }
        if removed.count > Self.removedJobEntryLimit {
            // The most recent first (by name among equals, so that the same ones are kept).
            removed.sort { ($0.state.lastActivity, $1.name) > ($1.state.lastActivity, $0.name) }
            removed.removeLast(removed.count - Self.removedJobEntryLimit)
        }
        for (name, state) in removed {
            states[name] = state
            states[name]?.runGoing = orphanGoing(name)
            // A job a reload removed forgets its files changing as they are copied.
            states[name]?.changing = nil
        }
        persisted = states
        return stateStore.save(states, lastRunNumber: runCounter)
    }

    /// What a run asked for by hand became: started, or skipped (and why).
    enum ManualStart {
        case started(ActiveRun)
        case skipped(SyncRunRecord)
    }

    /// Starts a run of `name` now, without waiting for it; a job already running (or the
    /// daemon stopping) gives a `skipped` record, not counted in `skippedRuns` (which counts
    /// the timer's ticks only: the caller is told already). Its `goingRunID` names the run
    /// that kept it from starting (the job's, or the removed job's of that name), if any.
    func startNow(_ name: String) throws(VarlinkFailure) -> ManualStart {
        guard jobs[name] != nil else { throw .noSuchJob(name) }
        guard launch(name) != nil, let run = jobs[name]?.running else {
            let now = SystemClock.realtimeSeconds()
            let orphan = stopping ? nil : orphanRunID(of: name)
            let going = stopping || orphan != nil ? nil : jobs[name]?.running
            let reason = stopping ? "the daemon is stopping"
                : orphan.map { "run \($0) of the job \(name) that a reload removed is still stopping" }
                ?? going.map { running in
                    running.isQueued
                        ? "run \(running.id) waits for a slot; a job has one run at a time"
                        : "run \(running.id) is already going"
                } ?? "a run of \(name) is already going"
            var record = SyncRunRecord(
                id: "", job: name, outcome: SyncOutcome(result: .skipped, message: reason),
                startedAt: now, endedAt: now, duration: 0)
            record.goingRunID = orphan ?? going?.id
            return .skipped(record)
        }
        return .started(run)
    }

    /// Runs `name` now and waits for the run's end, calling `started` as it is launched
    /// (`.started` with its id, or `.queued` when it waits for a slot, then `.started` once it
    /// has one), and `progress` on the way. A job already running gives a `skipped` record at
    /// once.
    public func runNow(
        _ name: String, started: @escaping @Sendable (JobStart) -> Void = { _ in },
        progress: @escaping @Sendable (SyncProgress) -> Void
    ) async throws(VarlinkFailure) -> SyncRunRecord {
        let run: ActiveRun
        switch try startNow(name) {
        case let .started(started): run = started
        case let .skipped(record): return record
        }
        let key = runCounter
        let listeners = jobs[name]?.listeners
        // Before the run can start: it needs this actor first.
        listeners?.add(key, started: { [id = run.id] in started(.started(id)) }, progress: progress)
        started(run.queued.map { .queued(run.id, runsGoing: $0.runsGoing, maxConcurrentRuns: $0.maxConcurrentRuns) } ?? .started(run.id))
        let record = await run.task.value
        listeners?.remove(key)
        return record
    }

    /// Pauses (no timer runs) or resumes (`resumeTimer`: a job due runs at once, another at its
    /// next run as planned) `name`, and writes the state file, waiting for the write: returns
    /// whether the job already was so (`unchanged`: a pause of a paused job, a resume of one not
    /// paused, which change nothing and log no change), and why the file could not be written
    /// (the change holds in this process, but a restart would undo it), nil once it was.
    @discardableResult
    public func setPaused(_ name: String, paused: Bool) async throws(VarlinkFailure) -> PauseChange {
        guard let state = jobs[name] else { throw .noSuchJob(name) }
        let unchanged = state.paused == paused
        if unchanged {
            log.info("sync", "\(name): \(paused ? "already paused: nothing changed" : "not paused: nothing to resume")")
        } else {
            jobs[name]?.paused = paused
            let said = !paused && state.config.enabled ? resumeTimer(name) : paused ? "paused" : "resumed"
            log.notice("sync", "\(name) \(said)")
        }
        // Kept in the state file: a restart (a crash, the watchdog, a reboot) does not resume
        // a job paused for maintenance. Written even when unchanged, so that asking again tells
        // whether it is saved now.
        // The write holding this change is waited for, not every write (a steady stream of
        // saves, or one stalled before it): the answer comes before the call times out.
        let callTimeout = store.current.control.callTimeout
        let limit = min(StepDeadline.stepLimit + .seconds(1), callTimeout * 3 / 4)
        let notSaved: String?
        if await !stateStore.waitForSave(saveState(), limit: limit) {
            notSaved = "not written yet (the state file's write did not end within \(Format.duration(seconds(limit))))"
        } else if let problem = stateStore.lastWriteProblem ?? nil {
            notSaved = "cannot write the jobs' state file \(JSONValue.quotedPathForMessage(stateStore.path)): \(problem)"
        } else {
            notSaved = nil
        }
        return PauseChange(unchanged: unchanged, notSaved: notSaved)
    }
}

extension String {
    /// `1.25` with two decimals.
    init(format2 value: Double) {
        let hundredths = Int((value * 100).rounded())
        let fraction = abs(hundredths % 100)
        self = "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

extension SystemClock {
    /// Seconds since the Unix epoch, with a fraction.
    static func realtimeSeconds() -> Double {
        let now = realtime()
        return Double(now.seconds) + Double(now.nanoseconds) / 1e9
    }
}

extension PersistedJobState {
    /// When the job was last heard of: its last run's end, or its last success; 0 for neither.
    var lastActivity: Double {
        max(lastRun?.endedAt ?? 0, lastSuccess ?? 0)
    }
}
