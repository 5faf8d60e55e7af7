import WeaveDI
import WeaveDIPosix

extension SyncScheduler {
    /// `job.NAME`: degraded after a failed (or partial) run, unhealthy after `failureThreshold`
    /// failed runs in a row or no success within `staleAfterIntervals` intervals. Its fix does
    /// what the job's schedule cannot do itself, and, asked by hand, runs the job now (see
    /// `fix(_:)`).
    func registerHealthCheck(_ name: String) {
        registry.register(HealthCheck(name: "job.\(name)", tags: [HealthCheck.readiness, "sync"]) { [weak self] in
            await self?.health(of: name) ?? .healthy("job removed")
        } fix: { [weak self] in
            guard let self else { throw FixNotApplicable("job removed") }
            return try await self.fix(name)
        })
    }

    func health(of name: String) -> HealthCheckResult {
        guard let state = jobs[name] else { return .healthy("job removed") }
        let config = state.config
        var data = ["consecutiveFailures": "\(state.consecutiveFailures)", "skippedRuns": "\(state.skippedRuns)"]
        if let lastSuccess = state.lastSuccess { data["lastSuccess"] = "\(lastSuccess)" }
        // The last run the state file keeps (`lastKept`): one cancelled before it did any work
        // (waiting for a slot, or at its start) changed nothing, and the job's health after a
        // restart goes by the same run.
        let last = state.lastKept
        if let last { data["lastResult"] = last.result.rawValue }
        if state.consecutiveFailures >= config.failureThreshold {
            return .unhealthy("\(state.consecutiveFailures) failed runs in a row; last: \(last?.message ?? "no message")", data: data)
        }
        let staleAfter = config.staleAfterSeconds
        // How long since the last success: on the monotonic clock for one in this process, which
        // the wall clock set back or forward does not move; from the state file's wall time for
        // an earlier one, unless that is in the future (the clock was set back since), when it
        // counts, as no success at all does, from when this process took the job on (its start,
        // or the reload that added it).
        let wallAge = state.lastSuccess.map { SystemClock.realtimeSeconds() - $0 }
        let age: Double
        if let instant = state.lastSuccessInstant {
            age = seconds(ContinuousClock.now - instant)
        } else if let wallAge, wallAge >= 0 {
            age = wallAge
        } else {
            age = seconds(ContinuousClock.now - state.addedAt)
        }
        if config.enabled, !state.paused, age > staleAfter {
            // What comes next, so that a stale job about to catch up (overdue at a start, after
            // the daemon was down) does not read as broken.
            let next: String
            if let running = state.running {
                next = running.state
            } else if let at = state.nextRun {
                let left = seconds(at - ContinuousClock.now)
                next = left <= 0 ? "a run is due now" : "next run in \(Format.duration(left))"
            } else {
                next = "no run is scheduled"
            }
            return .unhealthy("no successful run for \(Int(age)) s (more than \(config.staleAfterIntervals) intervals); \(next)", data: data)
        }
        if let last, last.result == .failed || last.result == .partial {
            return .degraded("last run \(last.result.rawValue): \(last.message ?? "\(last.errorCount) error(s)")", data: data)
        }
        // A run cancelled (the daemon stopping, the job's fix) left the destination behind, maybe
        // half done: no success, until the next run ends.
        if let last, last.result == .cancelled {
            return .degraded("last run cancelled: \(last.message ?? "no message"); the destination may be behind until the "
                + "next run", data: data)
        }
        if state.paused { return .healthy("paused", data: data) }
        // A job that never ran (in this process, or before it as the state file says) has no
        // health yet: its first finding, how its first run went, is its check's first result
        // (`unknown -> degraded` in the log), on a first start as after a restart.
        guard let last else { return .pending("not run yet", data: data) }
        return .healthy("last run \(last.result.rawValue)", data: data)
    }

    /// The job's fix. It cancels a run stuck for longer than `staleAfterSeconds` and lets the
    /// job prepare (a mirror, asked by hand, recreates a missing destination root; an
    /// automatic one has nothing to do while only a person can help, `FixNotApplicable`, and
    /// a failure after the cancelling says both). Then:
    ///
    /// - Asked by hand (`weavedictl fix job.NAME`, or called outside the registry), it resets
    ///   the backoff and runs the job now, whatever its schedule says.
    /// - Automatic (`FixRecord.Trigger.current`), it never resets the backoff, and starts a run
    ///   only in place of the stuck run it cancelled, or after the job prepared something (what
    ///   the failed runs met has changed: the backoff waits for no more); never for a job paused
    ///   or disabled. Otherwise it has nothing to do (`FixNotApplicable`): the runs, and their
    ///   retries after a failure, are the schedule's (interval, backoff, `runAtStart`), and a
    ///   fix run every health round would run the job every round.
    ///
    /// The run it starts is waited for a while; the registry judges the fix by the check run
    /// again after it, so a run that failed leaves the fix failed.
    func fix(_ name: String) async throws -> String {
        guard let state = jobs[name] else { return "job removed" }
        let automatic = FixRecord.Trigger.current == .automatic
        var actions: [String] = []
        var cancelledStuck = false
        let stuckAfter = state.config.staleAfterSeconds
        // Timed from when the run got its slot: one waiting in line for a slot is not stuck.
        if let run = state.running, let started = run.started, seconds(ContinuousClock.now - started) > stuckAfter {
            // The run's record says who stopped it, as for a reload's or a shutdown's.
            cancelReasons[run.id] = "cancelled by the job's fix (weavedictl fix job.\(name) or auto-fix): stuck for more than "
                + "\(SecondsRange.format(stuckAfter)) s"
            run.task.cancel()
            // Waited for a while: a run that ignores its cancellation is given up on, booked
            // cancelled, and the job starts no run until it has ended (the fix says so below).
            _ = await waitForCancelled(name, runID: run.id, task: run.task, until: .now + cancelledRunWait)
            actions.append("cancelled a run stuck for more than \(SecondsRange.format(stuckAfter)) s")
            cancelledStuck = true
        }
        // Waiting for the run, a reload may have changed or removed the job: prepare what is
        // configured now, not what was (a mirror would recreate a destination no longer wanted).
        guard let current = jobs[name] else { return (actions + ["job removed"]).joined(separator: "; ") }
        // An automatic fix leaves a job that does not run on its own (paused, disabled) as it is.
        let scheduled = current.config.enabled && !current.paused
        var prepared = false
        // Prepared first: a fix that fails there (a destination auto-fix does not recreate)
        // leaves the backoff as it is, so the job does not retry at its full rate meanwhile.
        if !automatic || scheduled {
            let preparation: String?
            do {
                preparation = try await current.job.prepareForRetry()
            } catch let nothing as FixNotApplicable where automatic && cancelledStuck {
                // Only a person can help (a disk to mount): no run in place of the stuck one,
                // which would fail on it.
                return (actions + ["no run started: \(nothing.reason)"]).joined(separator: "; ")
            } catch let nothing as FixNotApplicable {
                throw nothing
            } catch where !actions.isEmpty {
                // The record says what was done before it failed.
                throw FixPreparationFailure(description: (actions + ["then: \(error)"]).joined(separator: "; "))
            }
            if let preparation {
                actions.append(preparation)
                prepared = true
            }
        }
        if automatic {
            guard cancelledStuck || prepared else { throw FixNotApplicable(nothingToDo(name)) }
            guard let now = jobs[name], now.config.enabled, !now.paused else {
                return (actions + ["no run started: the job is \(jobs[name]?.paused == true ? "paused" : "disabled")"])
                    .joined(separator: "; ")
            }
        } else {
            resetBackoff(name)
            actions.append("reset the backoff")
        }
        if let task = launch(name), let run = jobs[name]?.running {
            // The check runs again as soon as the fix returns, and judges it: the run is waited
            // for a while, so that one that heals the job in that time counts, but not past
            // the attempt's time limit (cancelling a stuck run and preparing took some of it).
            // A longer run goes on, and the job's check heals when it succeeds; meanwhile the fix
            // is in progress, and auto-fix leaves the run alone.
            let wait = min(Self.fixRunWait, (FixRecord.attemptTimeLeft ?? Self.fixRunWait) - Self.fixReturnMargin)
            if wait > .zero, let record = await withTimeout(wait, clock: SystemHealthClock(), { await task.value }) {
                actions.append(Self.howItWent(record))
            } else if jobs[name]?.running?.id == run.id, jobs[name]?.running?.isQueued == true {
                actions.append("started run \(run.id), which waits for a slot (\(slotsGoing))")
                remedyInProgress(name, run: run)
            } else {
                let waited = SecondsRange.format((seconds(wait) * 10).rounded() / 10)
                actions.append("started run \(run.id)" + (wait > .zero ? ", still going after \(waited) s" : ""))
                remedyInProgress(name, run: run)
            }
        } else if let abandoned = givenUpRunID(of: name) {
            actions.append("no run started: run \(abandoned) did not stop within "
                + "\(Format.duration(seconds(cancelledRunWait))) of its cancellation, and none starts until it has")
        } else if let run = jobs[name]?.running {
            // A run going (not stuck), or waiting for a slot: another would be skipped; the
            // job's check heals when that one succeeds.
            if let started = run.started {
                actions.append("run \(run.id) is going (for \(Int(seconds(ContinuousClock.now - started))) s): no other starts beside it")
            } else {
                actions.append("run \(run.id) waits for a slot (\(slotsGoing)): "
                    + "no other starts beside it")
            }
            remedyInProgress(name, run: run)
        }
        return actions.joined(separator: "; ")
    }

    /// A job's preparation that failed after the fix had done something (cancelled a stuck
    /// run): both said.
    struct FixPreparationFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Why an automatic fix of `name` has nothing to do: the same words round after round, so
    /// that the check's `fixHeldBack` does not change while nothing does.
    private func nothingToDo(_ name: String) -> String {
        guard let state = jobs[name] else { return "the job was removed" }
        let byHand = "`weavedictl fix job.\(name)` resets the backoff and runs it now"
        if !state.config.enabled { return "the job is disabled: no run starts but by hand (\(byHand))" }
        if state.paused { return "the job is paused: no run starts until it is resumed, or by hand (\(byHand))" }
        if let run = state.running, run.isQueued {
            return "run \(run.id) waits for a slot (sync.maxConcurrentRuns): it starts when a run going ends; the check heals "
                + "when a run succeeds"
        }
        if let run = state.running {
            return "run \(run.id) is going, not stuck (for less than \(SecondsRange.format(state.config.staleAfterSeconds)) s): "
                + "the check heals when a run succeeds"
        }
        return "no run stuck, nothing to prepare: the job's schedule starts its next run (at its interval, or after its backoff "
            + "while runs fail); an automatic fix starts none (\(byHand))"
    }

    /// `run docs-3 failed: the source does not exist`: how the run a fix started went.
    static func howItWent(_ record: SyncRunRecord) -> String {
        let how = switch record.result {
        case .success: "succeeded"
        case .partial: "was partial"
        case .failed: "failed"
        case .cancelled: "was cancelled"
        case .skipped: "was skipped"
        }
        let detail = record.message ?? (record.errorCount > 0 ? "\(record.errorCount) error(s)" : nil)
        return "run \(record.id) \(how)" + (detail.map { ": \($0)" } ?? "")
    }

    /// Tells the registry that the fix's remedy, `run`, goes on: auto-fix does not run the fix
    /// again until the run has ended (see `FixRecord.Outcome.inProgress`).
    private func remedyInProgress(_ name: String, run: ActiveRun) {
        FixRecord.remedyInProgress { [weak self, id = run.id] in await self?.isRunGoing(name, id: id) ?? false }
    }

    /// Whether the run `id` of `name` is still going (or waiting for a slot).
    func isRunGoing(_ name: String, id: String) -> Bool {
        jobs[name]?.running?.id == id
    }

    /// How long a job's fix waits for the run it started, at most: half the default
    /// `attemptTimeout`, and less when the attempt has less time left (see `fixReturnMargin`).
    static let fixRunWait: Duration = .seconds(5)
    /// The time the fix keeps back from its attempt's limit, to return in time after the wait.
    static let fixReturnMargin: Duration = .seconds(1)
}

extension SyncScheduler {
    /// The name of the metrics file's check.
    static let metricsFileCheck = "sync.metricsFile"

    /// `sync.metricsFile`: degraded while the last write of the metrics file failed (its
    /// directory missing, not writable), for node_exporter then reads stale metrics, or none.
    /// Its fix writes the file again, at once, and fails while that write does.
    func registerMetricsFileCheck() {
        registry.register(HealthCheck(name: Self.metricsFileCheck, tags: ["sync"]) { [weak self] in
            await self?.metricsFileHealth() ?? .healthy("the scheduler is gone")
        } fix: { [weak self] in
            guard let self else { throw FixNotApplicable("the scheduler is gone") }
            return try await self.rewriteMetricsFile()
        })
    }

    func metricsFileHealth() -> HealthCheckResult {
        guard let path = store.current.sync.metricsFile else { return .healthy("no metrics file configured") }
        guard let last = metricsWriter.lastWrite, last.path == path else {
            return .healthy("not written yet (it is written after each run)", data: ["path": path])
        }
        if let problem = last.problem {
            return .degraded(
                "cannot write the metrics file \(JSONValue.quotedPathForMessage(path)): \(problem); node_exporter reads stale job metrics, or none, until a write "
                    + "succeeds: create its directory, or set sync.metricsFile to a place the daemon may write (the check's fix "
                    + "writes it again: weavedictl fix \(Self.metricsFileCheck))", data: ["path": path])
        }
        return .healthy("the last write succeeded", data: ["path": path])
    }

    /// The check's fix: writes the metrics file now and waits for the write.
    func rewriteMetricsFile() async throws -> String {
        guard let path = store.current.sync.metricsFile else { throw FixNotApplicable("no metrics file configured: nothing to write") }
        writeMetricsFile()
        await metricsWriter.flush()
        if let last = metricsWriter.lastWrite, last.path == path, let problem = last.problem {
            throw FileWriteFailure(description: "cannot write the metrics file \(JSONValue.quotedPathForMessage(path)): \(problem)")
        }
        return "wrote \(JSONValue.quotedPathForMessage(path))"
    }

    /// The fix of the metrics file's check, or of the state file's, could not write the file.
    struct FileWriteFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// `1 run going, maxConcurrentRuns 1`: why a run waits for a slot, as the job's fix says it.
    private var slotsGoing: SlotWait { SlotWait(runsGoing: slotsInUse, maxConcurrentRuns: maxRuns) }
}
