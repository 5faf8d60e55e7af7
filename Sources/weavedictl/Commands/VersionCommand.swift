import WeaveDI
import WeaveDIDaemon

/// `weavedictl version`: weavedictl's version and, if the daemon answers, the daemon's.
struct VersionCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "version",
        abstract: "Show weavedictl's version and, if the daemon answers, the daemon's version.",
        discussion: """
            Prints weavedictl's version, then the daemon's (from io.weavedi.Daemon.Ping) or why it
            could not be asked. With --json:
              {"weavedictl":"0.1.0","daemon":{"version":"0.1.0","pid":812,"uptime":3.5}}
            where daemon is null when it cannot be reached (or sends no valid Ping reply).

            Exit status: always 0, even when the daemon cannot be reached.
            """,
        method: "Ping")

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        try Self.parseNothing(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let daemon: Result<JSONValue, CtlError>
        do { daemon = .success(try PingCommand.call(in: context).object) } catch { daemon = .failure(error) }
        if context.options.json {
            let answer: JSONValue = if case let .success(ping) = daemon { ping } else { .null }
            context.printJSON(.object([("weavedictl", .string(DaemonVersion.current)), ("daemon", answer)]))
            return ExitStatus.ok
        }
        context.terminal.line("weavedictl \(DaemonVersion.current)")
        switch daemon {
        case let .success(ping):
            context.terminal.line(PingCommand.summary(ping, socket: context.socket.path))
        case let .failure(error):
            context.terminal.line("weavedid: not reachable (\(Self.reason(error)))")
        }
        return ExitStatus.ok
    }

    /// The first line of the error, without the `weavedictl: ` prefix.
    static func reason(_ error: CtlError) -> String {
        let line = error.message.split(separator: "\n").first.map(String.init) ?? ""
        return line.hasPrefix("weavedictl: ") ? String(line.dropFirst("weavedictl: ".count)) : line
    }
}
