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

            Exit status: 0 when paused; 1 when the job does not exist; 69 when the daemon cannot be reached;
            77 without the rights.
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
            context.terminal.line("job \(name.escapingControlCharacters): paused")
        }
        return ExitStatus.ok
    }
}

extension CtlCommand {
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
