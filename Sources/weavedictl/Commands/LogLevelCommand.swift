import WeaveDI
import WeaveDIControl

/// `weavedictl log-level [LEVEL] [--filter FILTER]`: shows or changes the library log level
/// and the daemon's log filter.
struct LogLevelCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "log-level",
        abstract: "Show or change the log level and the daemon's log filter.",
        arguments: "[LEVEL] [--filter FILTER]",
        discussion: """
            Arguments:
              LEVEL             the WeaveDI library's log level: \(LogLevel.allCases.map(\.rawValue).joined(separator: ", "))
            Options:
              --filter FILTER   the daemon's per-subsystem filter, in WEAVEDID_LOG syntax
                                (info,sync=debug)

            Without arguments, shows both. With LEVEL or --filter, changes them (which needs
            administrator rights: see `weavedictl fix --help`) and shows the result. The daemon
            validates the values: an unknown level is its InvalidParameter error.

            Exit status: 0 when shown or changed; 1 when the daemon refuses a value (an unknown
            level, a filter it cannot parse); 69 when the daemon cannot be reached; 77 when
            changing without the rights.
            """,
        method: "GetLogLevel, or io.weavedi.Daemon.SetLogLevel with LEVEL or --filter")

    /// The new library level.
    var level: String?
    /// The new daemon filter.
    var filter: String?

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        while let token = reader.next() {
            switch token {
            case let .option("--filter", value): filter = try reader.onceValue(of: "--filter", inline: value)
            case let .option(name, value): try reader.shared(name, inline: value)
            case let .argument(argument):
                guard level == nil else { throw reader.unexpected(argument) }
                level = argument
            }
        }
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        var parameters: [(String, JSONValue)] = []
        if let level { parameters.append(("level", .string(level))) }
        if let filter { parameters.append(("filter", .string(filter))) }
        let reply = try context.call(parameters.isEmpty ? "GetLogLevel" : "SetLogLevel", parameters)
        if context.options.json {
            context.printJSON(reply.object)
        } else {
            context.terminal.line("level:  " + (reply.parameter("level")?.stringValue ?? "-").escapingControlCharacters)
            context.terminal.line("filter: " + (reply.parameter("filter")?.stringValue ?? "-").escapingControlCharacters)
        }
        return ExitStatus.ok
    }
}
