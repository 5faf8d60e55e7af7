import WeaveDIControl

/// `weavedictl pause-job NAME`: stops scheduling a job; a run in progress finishes.
struct PauseJobCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "pause-job",
        abstract: "Stop scheduling a sync job (a run in progress finishes).",
        arguments: "NAME",
        discussion: """
            Arguments:
              NAME   the job (see `weavedictl jobs`)

            The job stays paused until `weavedictl resume-job NAME`, across restarts of the
            daemon (which keeps the pause in its state directory). Needs administrator rights
            (see `weavedictl fix --help`).

            Exit status: 0 when paused (or paused already: `already paused`); 1 when the job does not exist; 69 when the daemon cannot be reached;
            75 when paused, but the daemon could not save that in its state file (a warning names the file
            and the error: until it can, a restart would resume the job); 77 without the rights.
            """,
        method: "PauseJob")

    /// The job.
    var name: String

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        name = try Self.parseJobName(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try context.call("PauseJob", [("name", .string(name))])
        if context.options.json {
            context.printJSON(reply.object)
        } else {
            // A job paused already: nothing changed (the daemon says so since it can).
            let unchanged = reply.parameter("unchanged")?.boolValue == true
            context.terminal.line("job \(name.escapingControlCharacters): \(unchanged ? "already paused" : "paused")")
        }
        return Self.warnIfNotSaved(reply, job: name, verb: "paused", undo: "a restart would resume the job")
    }
}

extension CtlCommand {
    /// The exit status of `pause-job` or `resume-job` after `reply`: 0, or, when the daemon
    /// says the change is not saved (`notSaved`), a warning on standard error naming the state
    /// file and the error, and 75 (EX_TEMPFAIL).
    static func warnIfNotSaved(_ reply: VarlinkReply, job: String, verb: String, undo: String) -> Int32 {
        guard let problem = reply.parameter("notSaved")?.stringValue else { return ExitStatus.ok }
        Terminal.error("weavedictl: warning: job \(job.escapingControlCharacters) is \(verb), but not saved: "
            + "\(problem.escapingControlCharacters); it holds until the daemon stops, but \(undo) (free space or mend the "
            + "state directory, then run this command again)")
        return ExitStatus.notSaved
    }

    /// Parses the single `NAME` argument of `pause-job` and `resume-job`.
    static func parseJobName(_ reader: inout ArgumentReader) throws(UsageError) -> String {
        guard let name = try parseOptionalArgument(&reader) else { throw reader.error("missing argument NAME (the job)") }
        return name
    }

    /// Parses at most one argument (`jobs [NAME]`, `fix [CHECK]`), and the global options.
    static func parseOptionalArgument(_ reader: inout ArgumentReader) throws(UsageError) -> String? {
        var found: String?
        while let token = reader.next() {
            switch token {
            case let .option(option, value): try reader.shared(option, inline: value)
            case let .argument(argument):
                guard found == nil else { throw reader.unexpected(argument) }
                found = argument
            }
        }
        return found
    }
}
