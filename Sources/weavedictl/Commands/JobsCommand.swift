import WeaveDI
import WeaveDIDaemon

/// `weavedictl jobs [NAME]`: the configured sync jobs and their last runs; one job in full.
struct JobsCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "jobs",
        abstract: "List the configured sync jobs and their last runs, or show one job in full.",
        arguments: "[NAME]",
        discussion: """
            Arguments:
              NAME   show this job alone, in full: what it copies where and how, its state and
                     schedule, and its last run with the items that failed in it

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

            Exit status: 0 when the jobs, or job NAME, are shown; 1 when NAME is no configured
            job; 69 when the daemon cannot be reached.
            """,
        method: "ListJobs")

    /// The job to show in full, or nil for the table of all.
    var name: String?

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        name = try Self.parseOptionalArgument(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try context.call("ListJobs")
        let jobs = reply.array("jobs")
        if let name {
            guard let job = jobs.first(where: { $0.string("name") == name }) else {
                Terminal.error(Self.noSuchJob(name, among: jobs.compactMap { $0.string("name") }))
                return ExitStatus.failure
            }
            if context.options.json {
                context.printJSON(job)
            } else {
                for line in Self.details(job, on: context.terminal) { context.terminal.line(line) }
            }
            return ExitStatus.ok
        }
        if context.options.json {
            context.printJSON(reply.object)
            return ExitStatus.ok
        }
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
                Table.Cell(Self.interval(job)), Table.Cell(Self.nextRun(job)),
                Table.Cell(result, Terminal.Style.status(result)), Table.Cell(job.intText("consecutiveFailures")),
            ])
        }
        context.terminal.write(table.render(on: context.terminal))
        return ExitStatus.ok
    }

    /// The job's interval (`5m 00s`), in the table and in `jobs NAME`.
    static func interval(_ job: JSONValue) -> String {
        Format.duration(job.number("interval") ?? 0)
    }

    /// When the job runs next (`in 4m 10s`), or `-` when no timer runs it (paused, disabled).
    static func nextRun(_ job: JSONValue) -> String {
        job.number("nextRunIn").map { "in " + Format.duration($0) } ?? "-"
    }

    /// What `jobs NAME` says of a name no job has, in the words of the daemon's `NoSuchJob` for
    /// the other commands, with the jobs there are (the first 10, each quoted and shortened as
    /// a name weavedictl was given, then how many more).
    static func noSuchJob(_ name: String, among names: [String]) -> String {
        let quote = { (name: String) in JSONValue.quotedForMessage(name).escapingControlCharacters }
        var text = "weavedictl: no job is named \(quote(name))"
        guard !names.isEmpty else { return text + "; no jobs are configured." }
        text += "; the jobs: " + names.prefix(10).map(quote).joined(separator: ", ")
        return text + (names.count > 10 ? " and \(names.count - 10) more." : ".")
    }

    /// One job in full, a line per fact (`Source:       /srv/docs`): what `weavedictl jobs NAME`
    /// prints. Mirror settings only for a mirror job; the last run as the log's line for its end,
    /// with its failed items below.
    static func details(_ job: JSONValue, on terminal: Terminal, now: Double = Format.now()) -> [String] {
        var rows: [(String, String)] = [
            ("Job", job.text("name")), ("Kind", job.text("kind")), ("State", state(job)),
            ("Interval", interval(job)), ("Next run", nextRun(job)),
            ("Failed runs", job.intText("consecutiveFailures") + " in a row"),
            ("Skipped runs", job.intText("skippedRuns") + " (ticks that came while a run went)"),
        ]
        if let mirror = job[member: "mirror"], mirror.objectMembers != nil {
            let mount = mirror.flag("destinationMountPoint") ? " (must be a mount point)" : ""
            rows.append(("Source", mirror.text("source")))
            rows.append(("Destination", mirror.text("destination") + mount))
            var how = [mirror.flag("durable") ? "durable" : "not durable", "compare " + mirror.text("compare")]
            how.append(mirror.flag("delete") ? "deletes what the source no longer has" : "keeps what the source no longer has")
            how.append(mirror.int("workers") == 1 ? "1 worker" : mirror.intText("workers") + " workers")
            rows.append(("Copies", how.joined(separator: ", ")))
        }
        var lines = rows.map { label, value in
            label + ":" + String(repeating: " ", count: max(1, 13 - label.count)) + value.escapingControlCharacters
        }
        guard let last = job[member: "lastRun"], last.objectMembers != nil else {
            lines.append("Last run:     none yet")
            return lines
        }
        lines.append("Last run:     ended " + Format.ago(last.number("endedAt"), now: now) + ": " + RunJobCommand.outcome(last, on: terminal))
        lines += RunJobCommand.failedItems(last)
        return lines
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
