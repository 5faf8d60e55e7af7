import WeaveDI
import WeaveDIControl
import WeaveDIDaemon

/// `weavedictl ping`: whether the daemon answers, with its version, pid and uptime.
struct PingCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "ping",
        abstract: "Check that the daemon answers; show its version, pid and uptime.",
        discussion: """
            Prints one line such as
              weavedid 0.1.0 answers on /run/weavedi/control.sock (pid 812, up 3h 02m)
            With --json: {"version":"0.1.0","pid":812,"uptime":10934.2}

            Exit status: 0 when the daemon answers; 69 when it cannot be reached, or when what
            answers sends no valid Ping reply (a version string, a positive integer pid, an
            uptime of zero seconds or more).
            """,
        method: "Ping")

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        try Self.parseNothing(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try Self.call(in: context)
        if context.options.json {
            context.printJSON(reply.object)
        } else {
            context.terminal.line(Self.summary(reply.object, socket: context.socket.path))
        }
        return ExitStatus.ok
    }

    /// Calls `Ping`. What answers with a pid that is no number is not the daemon, and its
    /// reply must not read as one (`pid -`, exit 0): `perform` checks it, as every reply, and
    /// `ReplyContract.daemon` has a Ping's rules (a positive pid, an uptime of 0 or more).
    static func call(in context: CtlContext) throws(CtlError) -> VarlinkReply {
        try context.call("Ping")
    }

    /// `weavedid VERSION answers on SOCKET (pid N, up DURATION)`.
    static func summary(_ ping: JSONValue, socket: String) -> String {
        "weavedid \(ping.text("version").escapingControlCharacters) answers on \(socket.escapingControlCharacters) "
            + "(pid \(ping.intText("pid")), up \(Format.duration(ping.number("uptime") ?? 0)))"
    }
}
