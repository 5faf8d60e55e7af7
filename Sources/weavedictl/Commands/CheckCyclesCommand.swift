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
            A -> B -> A. The edges are those recorded when each registration was first built:
            a registration never built has unknown dependencies, and a line names those (the
            first 10, then how many more), as a cycle through one of them cannot be seen.
            --offline builds every registration, and so does the daemon's container.graph
            check, in its first round at start (unless WEAVEDI_REGISTRY_AUTO_HEALTH turned the
            health loop off: `weavedictl check` runs it), so the list is normally empty. With
            --json the output is exactly the documented shape
              {"componentCount":N,"edgeCount":M,"cycles":[["A","B"]],"notBuilt":["C"]}
            (each cycle starts at its smallest name; notBuilt sorted, and left out when the
            daemon is older than it and does not say).

            Exit status: 0 when there are no cycles and every registration's dependencies are
            known; 1 when there are cycles, or registrations never built (the graph could not be
            checked whole, so a gate must not pass); 69 when the daemon cannot be reached
            (without --offline); 78 when the configuration is invalid.
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
        let notBuilt = report.strings("notBuilt")
        if context.options.json {
            context.printJSON(report)
        } else {
            let summary = "\(report.intText("componentCount")) components, \(report.intText("edgeCount")) dependency edges"
            if cycles.isEmpty {
                context.terminal.line(summary + (notBuilt.isEmpty ? ", no cycles." : ", no cycles among them."))
            } else {
                context.terminal.line(summary + ", " + context.terminal.styled("\(cycles.count) cycle\(cycles.count == 1 ? "" : "s")", .red) + ":")
                for cycle in cycles {
                    context.terminal.line("  " + (cycle + cycle.prefix(1)).joined(separator: " -> ").escapingControlCharacters)
                }
            }
            if !notBuilt.isEmpty {
                let line = Self.notBuiltLine(notBuilt, remedy: offline.offline ? Self.offlineRemedy : Self.onlineRemedy)
                context.terminal.line(context.terminal.styled(line, .yellow))
            }
        }
        return cycles.isEmpty && notBuilt.isEmpty ? ExitStatus.ok : ExitStatus.failure
    }

    /// How many registration names `notBuiltLine` lists before saying how many more.
    static let namesShown = 10

    /// What builds them, in the library (and `--offline`, which validates).
    static let offlineRemedy = "validate() builds every registration once"
    /// What builds them in the daemon.
    static let onlineRemedy = "the daemon's container.graph check builds every registration once: `weavedictl check` runs it"

    /// The line for registrations never built: how many, the first `namesShown` names (their
    /// control characters escaped), then how many more, then `remedy` in parentheses.
    static func notBuiltLine(_ names: [String], remedy: String) -> String {
        let shown = names.prefix(namesShown).map(\.escapingControlCharacters).joined(separator: ", ")
        let more = names.count > namesShown ? " and \(names.count - namesShown) more" : ""
        let count = names.count == 1 ? "1 registration never built, so its dependencies are unknown"
            : "\(names.count) registrations never built, so their dependencies are unknown"
        return "\(count): \(shown)\(more) (\(remedy))"
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
