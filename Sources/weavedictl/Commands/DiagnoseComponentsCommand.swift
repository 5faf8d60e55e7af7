import WeaveDI
import WeaveDIDaemon

/// `weavedictl diagnose-components [--offline [--config PATH]]`: duplicate providers, scope
/// drift and scope mismatches among the daemon's registrations.
struct DiagnoseComponentsCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "diagnose-components",
        abstract: "Find duplicate providers, scope drift and scope mismatches (also --offline, for CI).",
        arguments: "[--offline [--config PATH]]",
        discussion: OfflineOptions.help + """


            With --json the output is exactly the documented shape
              {"issues":[{"type":"…","providers":["…"],"detail":"…","kind":"duplicateProvider"}]}
            so a CI step can run `weavedictl diagnose-components --offline --json`. The kinds
            are duplicateProvider, scopeDrift and scopeMismatch (a singleton or session-scoped
            service that needs a shorter-lived one, seen in the dependencies recorded by builds:
            --offline builds every registration first, as the daemon's container.graph check does).

            Exit status: 0 when there are no issues; 1 when there are; 69 when the daemon
            cannot be reached (without --offline); 78 when the configuration is invalid.
            """,
        method: "DiagnoseComponents")

    /// Where to diagnose.
    var offline: OfflineOptions

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        offline = try OfflineOptions(parsing: &reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let report: JSONValue
        if offline.offline {
            report = try await offline.container(in: context).diagnoseComponents().json
        } else {
            report = Self.documented(try context.call("DiagnoseComponents").array("issues"))
        }
        let issues = report.array("issues")
        if context.options.json {
            context.printJSON(report)
        } else if issues.isEmpty {
            context.terminal.line("No issues: no duplicate providers, no scope drift, no scope mismatches.")
        } else {
            var table = Table(["KIND", "TYPE", "PROVIDERS", "DETAIL"])
            for issue in issues {
                table.append([
                    Table.Cell(issue.text("kind"), .yellow), Table.Cell(issue.text("type")),
                    Table.Cell(Format.list(issue.strings("providers"))), Table.Cell(issue.text("detail")),
                ])
            }
            context.terminal.write(table.render(on: context.terminal))
        }
        return issues.isEmpty ? ExitStatus.ok : ExitStatus.failure
    }

    /// The daemon's `ComponentIssue` objects in the documented shape and member order
    /// (type, providers, detail, kind), as `ComponentDiagnostics.json` gives it offline.
    static func documented(_ issues: [JSONValue]) -> JSONValue {
        .object([("issues", .array(issues.map { issue in
            .object([
                ("type", .string(issue.text("type"))), ("providers", .array(issue.strings("providers").map(JSONValue.string))),
                ("detail", .string(issue.string("detail") ?? "")), ("kind", .string(issue.text("kind"))),
            ])
        }))])
    }
}
