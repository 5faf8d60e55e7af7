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

    /// Calls `Ping` and checks its reply: what answers with a pid that is no number is not the
    /// daemon, and its reply must not read as one (`pid -`, exit 0).
    static func call(in context: CtlContext) throws(CtlError) -> VarlinkReply {
        let reply = try context.call("Ping")
        if let reason = problem(in: reply.object) {
            throw .invalidReply(context.socket, method: DaemonInterface.name + ".Ping", reason: reason)
        }
        return reply
    }

    /// What is wrong with the parameters of a Ping reply, or nil: `version` a string, `pid` a
    /// positive integer, `uptime` a number of seconds, not negative.
    static func problem(in ping: JSONValue) -> String? {
        // A member of the right type but out of range, or any number, is quoted; one of
        // another type is named.
        func got(_ key: String, _ isRightType: (JSONValue) -> Bool) -> String {
            guard let value = ping[member: key] else { return "it is missing" }
            return isRightType(value) || value.numberValue != nil ? "got \(value.serialized)" : "got \(value.typeName)"
        }
        guard ping.string("version") != nil else { return "\"version\" must be a string, \(got("version") { _ in false })" }
        guard let pid = ping.int("pid"), pid > 0 else {
            return "\"pid\" must be a positive integer, \(got("pid") { _ in false })"
        }
        guard let uptime = ping.number("uptime"), uptime >= 0 else {
            return "\"uptime\" must be a number of seconds, 0 or more, \(got("uptime") { $0.numberValue != nil })"
        }
        return nil
    }

    /// `weavedid VERSION answers on SOCKET (pid N, up DURATION)`.
    static func summary(_ ping: JSONValue, socket: String) -> String {
        "weavedid \(ping.text("version").escapingControlCharacters) answers on \(socket.escapingControlCharacters) "
            + "(pid \(ping.intText("pid")), up \(Format.duration(ping.number("uptime") ?? 0)))"
    }
}
