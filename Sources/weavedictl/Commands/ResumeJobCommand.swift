import WeaveDIControl

/// `weavedictl resume-job NAME`: schedules a paused job again.
struct ResumeJobCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "resume-job",
        abstract: "Schedule a paused sync job again.",
        arguments: "NAME",
        discussion: """
            Arguments:
              NAME   the job (see `weavedictl jobs`)

            A job due runs at once (its last run never ended or was cancelled, or its next run
            came while it was paused); any other at the next run it had, not an interval from
            now (the daemon's log says which). `weavedictl run-job NAME` runs it at once.
            Needs administrator rights (see `weavedictl fix --help`).

            Exit status: 0 when resumed (or not paused: `not paused (nothing to resume)`); 1 when the job does not exist; 69 when the daemon cannot be reached;
            75 when resumed, but the daemon could not save that in its state file (a warning names the file
            and the error: until it can, a restart would pause the job again); 77 without the rights.
            """,
        method: "ResumeJob")

    /// The job.
    var name: String

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        name = try Self.parseJobName(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try context.call("ResumeJob", [("name", .string(name))])
        if context.options.json {
            context.printJSON(reply.object)
        } else {
            // A job not paused: nothing changed.
            let unchanged = reply.parameter("unchanged")?.boolValue == true
            context.terminal.line("job \(name.escapingControlCharacters): \(unchanged ? "not paused (nothing to resume)" : "resumed")")
        }
        return Self.warnIfNotSaved(reply, job: name, verb: "resumed", undo: "a restart would pause the job again")
    }
}
