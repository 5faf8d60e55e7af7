import WeaveDI
import WeaveDIControl
import WeaveDIPosix

extension SyncScheduler: JobControl {
    public func jobs() async -> [JSONValue] {
        let slotWait = JobStart.slotWait(runsGoing: slotsInUse, maxConcurrentRuns: maxRuns)
        return order.compactMap { name in
            guard let state = jobs[name] else { return nil }
            let next = state.nextRun.map { max(0, seconds($0 - ContinuousClock.now)) }
            return .object([
                ("name", .string(name)), ("kind", .string(state.config.kind)), ("enabled", .bool(state.config.enabled)),
                // `running` stays true for a run waiting for a slot, as older clients read it
                // (the job's run is going: a tick, or `RunJob`, is skipped); `queued` tells them
                // apart, with the runs going and the cap as they stand.
                ("paused", .bool(state.paused)), ("running", .bool(state.running != nil)),
                ("queued", state.running?.isQueued == true ? slotWait : .null),
                // A run of the job of this name that a reload removed, still stopping: until it
                // ends, this job's ticks are skipped and `RunJob` answers `skipped`. Not a run of
                // this job (`running` stays false), but what keeps it from running.
                ("removedRunStopping", orphanRunID(of: name).map(JSONValue.string) ?? .null),
                ("interval", .double(seconds(state.config.interval))),
                ("consecutiveFailures", .int(state.consecutiveFailures)), ("skippedRuns", .int(state.skippedRuns)),
                ("nextRunIn", state.config.enabled && !state.paused ? next.map(JSONValue.double) ?? .null : .null),
                // The last run the state file keeps (`lastKept`), as the job's health and the
                // metrics go by: one cancelled while it waited for a slot changed nothing, and
                // after a restart it would be gone.
                ("lastRun", state.lastKept.map(SyncRunEncoding.record) ?? .null),
                ("mirror", state.config.mirror.map(Self.mirrorSettings) ?? .null),
            ])
        }
    }

    /// A mirror job's settings as the `Job`'s `mirror` (`MirrorSettings` of the interface):
    /// what it copies where, and how; `workers` as runs use it (one per core unless set).
    static func mirrorSettings(_ mirror: DaemonConfiguration.Mirror) -> JSONValue {
        .object([
            ("source", .string(mirror.source)), ("destination", .string(mirror.destination)),
            ("compare", .string(mirror.compare.rawValue)), ("delete", .bool(mirror.delete)), ("durable", .bool(mirror.durable)),
            ("workers", .int(MirrorSettings(mirror).workers)),
            ("destinationMountPoint", .bool(mirror.destinationMountPoint)),
        ])
    }

    public func run(
        _ name: String, started: @escaping @Sendable (JobStart) -> Void, progress: @escaping @Sendable (JSONValue) -> Void
    ) async throws(VarlinkFailure) -> JSONValue {
        let record = try await runNow(name, started: started) { progress(SyncRunEncoding.progress($0)) }
        return SyncRunEncoding.record(record)
    }

    public func start(_ name: String) async throws(VarlinkFailure) -> JobStart {
        switch try startNow(name) {
        case let .started(run):
            run.queued.map { .queued(run.id, runsGoing: $0.runsGoing, maxConcurrentRuns: $0.maxConcurrentRuns) } ?? .started(run.id)
        case let .skipped(record): .notStarted(SyncRunEncoding.record(record))
        }
    }

    @discardableResult
    public func setPaused(_ name: String, _ paused: Bool) async throws(VarlinkFailure) -> PauseChange {
        try await setPaused(name, paused: paused)
    }

    public func metrics() async -> String {
        renderMetrics()
    }

    /// The metrics, in Prometheus' text format.
    func renderMetrics() -> String {
        var out = PrometheusText()
        out.header("weavedi_sync_runs_total", "Job runs by result.", type: "counter")
        for name in order {
            for result in SyncResult.allCases {
                out.sample("weavedi_sync_runs_total", [("job", name), ("result", result.rawValue)], Double(jobs[name]?.runsByResult[result] ?? 0))
            }
        }
        out.header("weavedi_sync_files_copied_total", "Files copied or updated.", type: "counter")
        for name in order { out.sample("weavedi_sync_files_copied_total", [("job", name)], Double(jobs[name]?.filesCopied ?? 0)) }
        out.header("weavedi_sync_files_skipped_total", "Entries skipped with a warning (changed while being copied, vanished, special files).", type: "counter")
        for name in order { out.sample("weavedi_sync_files_skipped_total", [("job", name)], Double(jobs[name]?.filesSkipped ?? 0)) }
        out.header("weavedi_sync_bytes_copied_total", "Bytes written.", type: "counter")
        for name in order { out.sample("weavedi_sync_bytes_copied_total", [("job", name)], Double(jobs[name]?.bytesCopied ?? 0)) }
        out.header("weavedi_sync_last_success_timestamp_seconds", "When the job last succeeded (0: never).", type: "gauge")
        for name in order { out.sample("weavedi_sync_last_success_timestamp_seconds", [("job", name)], jobs[name]?.lastSuccess ?? 0) }
        // One series per result, 1 for the last run's (as `ListJobs` shows it, across restarts),
        // 0 for the others: the Prometheus way of a state, which an alert can match
        // (`weavedi_sync_last_run_result{result="failed"} == 1`). All 0 for a job never run.
        out.header("weavedi_sync_last_run_result", "1 for the result of the job's last run (kept across restarts), 0 for the others.", type: "gauge")
        for name in order {
            let last = jobs[name]?.lastKept?.result
            for result in SyncResult.allCases {
                out.sample("weavedi_sync_last_run_result", [("job", name), ("result", result.rawValue)], last == result ? 1 : 0)
            }
        }
        // The same last run as `weavedi_sync_last_run_result`'s (and `ListJobs`').
        out.header("weavedi_sync_last_run_duration_seconds", "How long the job's last run took (kept across restarts; 0: never run).", type: "gauge")
        for name in order { out.sample("weavedi_sync_last_run_duration_seconds", [("job", name)], jobs[name]?.lastKept?.duration ?? 0) }
        // A run waiting for a slot (`sync.maxConcurrentRuns`) is queued, not running: running
        // counts the runs that hold a slot.
        out.header("weavedi_sync_running", "1 while a run is going (holding one of sync.maxConcurrentRuns' slots).", type: "gauge")
        for name in order { out.sample("weavedi_sync_running", [("job", name)], jobs[name]?.running.map { $0.isQueued ? 0 : 1 } ?? 0) }
        out.header("weavedi_sync_queued", "1 while a run waits for a slot (sync.maxConcurrentRuns runs going).", type: "gauge")
        for name in order {
            out.sample("weavedi_sync_queued", [("job", name)], jobs[name]?.running?.isQueued == true ? 1 : 0)
        }
        out.header("weavedi_sync_skipped_runs_total", "Ticks of the job's timer skipped because its run was still going (a run asked for then is refused, not counted).", type: "counter")
        for name in order { out.sample("weavedi_sync_skipped_runs_total", [("job", name)], Double(jobs[name]?.skippedRuns ?? 0)) }
        return out.text
    }

    /// Writes the metrics to `sync.metricsFile` (for node_exporter's textfile collector),
    /// replacing it atomically, off the actor (`LatestFileWriter`).
    func writeMetricsFile() {
        guard let path = store.current.sync.metricsFile else { return }
        metricsWriter.write(Array(renderMetrics().utf8), to: path)
    }
}
