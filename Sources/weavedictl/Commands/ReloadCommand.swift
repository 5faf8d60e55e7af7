import WeaveDIControl

/// `weavedictl reload`: makes the daemon re-read its configuration file, as SIGHUP does.
struct ReloadCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "reload",
        abstract: "Re-read the daemon's configuration file, as SIGHUP does.",
        discussion: """
            The daemon validates the file first; a file it refuses leaves the previous
            configuration in effect, and the error (io.weavedi.Daemon.ReloadRefused) gives the
            reason with the file, field and problem. Needs administrator rights (see
            `weavedictl fix --help`). `systemctl reload weavedid` does the same.

            Exit status: 0 when reloaded; 1 when refused; 69 when the daemon cannot be reached; 77 without
            the rights.
            """,
        method: "Reload")

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        try Self.parseNothing(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try context.call("Reload")
        if context.options.json {
            context.printJSON(reply.object)
        } else {
            context.terminal.line((reply.parameter("status")?.stringValue ?? "configuration reloaded").escapingControlCharacters)
        }
        return ExitStatus.ok
    }
}
