import WeaveDIControl

/// `weavedictl metrics`: the daemon's metrics in the Prometheus text exposition format.
struct MetricsCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "metrics",
        abstract: "Print the daemon's metrics (Prometheus text format).",
        discussion: """
            Prints the text as the daemon renders it (HELP and TYPE comments, one sample per
            line, such as `weavedi_up 1`), ready for a textfile collector or a quick look with
            grep; control characters other than line breaks, which the format never contains,
            are escaped. With --json: {"text":"…"}.

            Example:
              weavedictl metrics | grep '^weavedi_control'

            Exit status: 0 when the daemon answers; 69 when it cannot be reached.
            """,
        method: "GetMetrics")

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        try Self.parseNothing(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try context.call("GetMetrics")
        if context.options.json {
            context.printJSON(reply.object)
        } else {
            let text = Self.shown(reply.parameter("text")?.stringValue ?? "")
            context.terminal.write(text.isEmpty || text.hasSuffix("\n") ? text : text + "\n")
        }
        return ExitStatus.ok
    }

    /// `text` with the control characters of each line escaped: the lines stay lines, and
    /// nothing else reaches the terminal.
    static func shown(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { String($0).escapingControlCharacters }.joined(separator: "\n")
    }
}
