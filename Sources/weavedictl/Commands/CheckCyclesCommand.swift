import WeaveDI
import WeaveDIControl

/// `weavedictl check-cycles [--offline [--config PATH]]`: cycles in the dependency graph.
struct CheckCyclesCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "check-cycles",
        abstract: "Find dependency cycles among the daemon's components (also --offline).",
        arguments: "[--offline [--config PATH]]",
        discussion: OfflineOptions.help + """


            Prints the number of components and dependency edges, then each cycle as
            A -> B -> A. With --json the output is exactly the documented shape
              {"componentCount":N,"edgeCount":M,"cycles":[["A","B"]],"notBuilt":["C"]}
            (each cycle starts at its smallest name; notBuilt, the registrations never built,
            whose dependencies are unknown, sorted, and left out when the daemon is older than
            it and does not say).

            Exit status: 0 when there are no cycles; 1 when there are; 69 when the daemon
            cannot be reached (without --offline); 78 when the configuration is invalid.
            """,
        method: "CheckCycles")

    /// Where to look.
    var offline: OfflineOptions

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        offline = try OfflineOptions(parsing: &reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let report: JSONValue
        if offline.offline {
            report = try await offline.container(in: context).checkCycles().json
        } else {
            report = Self.documented(try context.call("CheckCycles").object)
        }
        let cycles = report.array("cycles").map { $0.arrayValue?.compactMap(\.stringValue) ?? [] }
        if context.options.json {
            context.printJSON(report)
        } else {
            let summary = "\(report.intText("componentCount")) components, \(report.intText("edgeCount")) dependency edges"
            if cycles.isEmpty {
                context.terminal.line(summary + ", no cycles.")
            } else {
                context.terminal.line(summary + ", " + context.terminal.styled("\(cycles.count) cycle\(cycles.count == 1 ? "" : "s")", .red) + ":")
                for cycle in cycles {
                    context.terminal.line("  " + (cycle + cycle.prefix(1)).joined(separator: " -> ").escapingControlCharacters)
                }
            }
        }
        return cycles.isEmpty ? ExitStatus.ok : ExitStatus.failure
    }

    /// The reply in the documented member order, whatever order the daemon used. `notBuilt`
    /// only when the daemon sent it: an older daemon does not say, and an empty list would say
    /// that every registration's dependencies are known.
    static func documented(_ reply: JSONValue) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("componentCount", .int(reply.int("componentCount") ?? 0)), ("edgeCount", .int(reply.int("edgeCount") ?? 0)),
            ("cycles", .array(reply.array("cycles"))),
        ]
        if reply[member: "notBuilt"]?.arrayValue != nil {
            members.append(("notBuilt", .array(reply.strings("notBuilt").map(JSONValue.string))))
        }
        return .object(members)
    }
}
