import WeaveDI
import WeaveDIDaemon

/// `weavedictl sessions`: the open WeaveDI sessions (one per control connection and job run).
struct SessionsCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "sessions",
        abstract: "List the open sessions: control connections and job runs.",
        discussion: """
            One row per session: its id, its kind (control for a connection to the socket, job
            for a run), the peer's uid and pid (from SO_PEERCRED), its age, the instances it holds
            and its requests in progress. The connection weavedictl itself makes is among them.

            Exit status: 0 when the daemon answers; 69 when it cannot be reached.
            """,
        method: "ListSessions")

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        try Self.parseNothing(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try context.call("ListSessions")
        if context.options.json {
            context.printJSON(reply.object)
            return ExitStatus.ok
        }
        let sessions = reply.array("sessions")
        guard !sessions.isEmpty else {
            context.terminal.line("No open sessions.")
            return ExitStatus.ok
        }
        var table = Table(["SESSION", "KIND", "UID", "PID", "AGE", "INSTANCES", "REQUESTS"], rightAligned: [2, 3, 4, 5, 6])
        for session in sessions {
            table.append([
                Table.Cell(session.text("id")), Table.Cell(session.text("kind")), Table.Cell(session.intText("uid")),
                Table.Cell(session.intText("pid")), Table.Cell(Format.duration(session.number("age") ?? 0)),
                Table.Cell(session.intText("instances")), Table.Cell(session.intText("requests")),
            ])
        }
        context.terminal.write(table.render(on: context.terminal))
        return ExitStatus.ok
    }
}
