import WeaveDI

/// `weavedictl jobs`: the configured sync jobs and their last runs.
struct JobsCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "jobs",
        abstract: "List the configured sync jobs and their last runs.",
        discussion: """
            One row per job: its kind, its state (scheduled, paused, running, queued or
            disabled), its interval, when it runs next, the result of its last run and its
            consecutive failures. A queued run waits for a slot: sync.maxConcurrentRuns runs are
            going (`queued (2 going, maxConcurrentRuns 2)`); it starts when one ends.
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
        var table = Table(["JOB", "KIND", "STATE", "INTERVAL", "NEXT RUN", "LAST RESULT", "FAILURES"], rightAligned: [6])
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

    /// `running`, `queued (2 going, maxConcurrentRuns 2)`, `disabled`, `paused` or `scheduled`:
    /// a run going or waiting for a slot is shown whatever the job's schedule (a disabled job
    /// runs by hand).
    static func state(_ job: JSONValue) -> String {
        if job.flag("running") {
            // A daemon before `queued` sends none: its runs waiting for a slot read as running.
            guard let queued = job[member: "queued"], queued.objectMembers != nil else { return "running" }
            return "queued (\(queued.intText("runsGoing")) going, maxConcurrentRuns \(queued.intText("maxConcurrentRuns")))"
        }
        if !job.flag("enabled") { return "disabled" }
        return job.flag("paused") ? "paused" : "scheduled"
    }
}
