import WeaveDI
import WeaveDIDaemon

/// `weavedictl jobs`: the configured sync jobs and their last runs.
struct JobsCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "jobs",
        abstract: "List the configured sync jobs and their last runs.",
        discussion: """
            One row per job: its kind, its state, its interval, when it runs next, the result of
            its last run and its FAILED RUNS in a row (a success, or a partial run, ends them).
            The state is scheduled, paused or disabled; a run going or queued shows instead of
            scheduled, and after paused or disabled (`paused, going`: the job runs by hand, its
            timer stays stopped). A going run holds one of sync.maxConcurrentRuns' slots; a
            queued run waits for one, as that many runs are going (`queued (2 going,
            maxConcurrentRuns 2)`), and starts when one ends. A job a reload removed while its
            run went, and a later reload added back, waits for that run to stop (`waits for run
            docs-3 of the removed job to stop`); a tick of its timer meanwhile starts its run
            once that run has stopped.
            Jobs are configured in sync.jobs of the daemon's configuration; run one now with
            `weavedictl run-job NAME --wait`.
            """,
        method: "ListJobs")

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        try Self.parseNothing(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try context.call("ListJobs")
        if context.options.json {
            context.printJSON(reply.object)
            return ExitStatus.ok
        }
        let jobs = reply.array("jobs")
        guard !jobs.isEmpty else {
            context.terminal.line("No jobs configured.")
            return ExitStatus.ok
        }
        var table = Table(["JOB", "KIND", "STATE", "INTERVAL", "NEXT RUN", "LAST RESULT", "FAILED RUNS"], rightAligned: [6])
        for job in jobs {
            let last = job[member: "lastRun"]
            let result = last?.string("result") ?? "-"
            table.append([
                Table.Cell(job.text("name")), Table.Cell(job.text("kind")), Table.Cell(Self.state(job)),
                Table.Cell(Format.duration(job.number("interval") ?? 0)),
                Table.Cell(job.number("nextRunIn").map { "in " + Format.duration($0) } ?? "-"),
                Table.Cell(result, Terminal.Style.status(result)), Table.Cell(job.intText("consecutiveFailures")),
            ])
        }
        context.terminal.write(table.render(on: context.terminal))
        return ExitStatus.ok
    }

    /// `scheduled`, `paused` or `disabled` (the job's schedule); a run going (`going`) or
    /// waiting for a slot (`queued (2 going, maxConcurrentRuns 2)`) instead of `scheduled`, and
    /// after `paused` or `disabled` (`paused, queued (…)`: a paused or disabled job runs by
    /// hand, and its timer stays stopped after that run). A run of the job a reload removed,
    /// still stopping, shows the same way (`waits for run docs-3 of the removed job to stop`):
    /// the job added back does not run until it ends.
    static func state(_ job: JSONValue) -> String {
        let schedule = !job.flag("enabled") ? "disabled" : job.flag("paused") ? "paused" : nil
        guard job.flag("running") else {
            guard let stopping = job.string("removedRunStopping") else { return schedule ?? "scheduled" }
            let wait = "waits for run \(stopping) of the removed job to stop"
            return schedule.map { $0 + ", " + wait } ?? wait
        }
        let run: String
        if let queued = job[member: "queued"], queued.objectMembers != nil {
            run = "queued (\(queued.intText("runsGoing")) going, maxConcurrentRuns \(queued.intText("maxConcurrentRuns")))"
        } else {
            // A daemon before `queued` sends none: its runs waiting for a slot read as going.
            run = "going"
        }
        return schedule.map { $0 + ", " + run } ?? run
    }
}
