import WeaveDI
import WeaveDIDaemon

/// `weavedictl registrations`: the daemon container's registrations, its dependency graph.
struct RegistrationsCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "registrations",
        abstract: "List the daemon's registrations: its dependency graph.",
        discussion: """
            One row per registered type: its scope (singleton, session, request, transient),
            the module that registered it, whether an instance has been built, and the types its
            factory resolved (the edges `weavedictl check-cycles` examines).

            Exit status: 0 when the daemon answers; 69 when it cannot be reached.
            """,
        method: "ListRegistrations")

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        try Self.parseNothing(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try context.call("ListRegistrations")
        if context.options.json {
            context.printJSON(reply.object)
            return ExitStatus.ok
        }
        let registrations = reply.array("registrations")
        var table = Table(["TYPE", "SCOPE", "MODULE", "BUILT", "DEPENDENCIES"])
        for registration in registrations {
            table.append([
                Table.Cell(registration.text("type")), Table.Cell(registration.text("scope")),
                Table.Cell(registration.text("module")), Table.Cell(registration.flag("built") ? "yes" : "no"),
                Table.Cell(Format.list(registration.strings("dependencies"))),
            ])
        }
        let edges = registrations.reduce(0) { $0 + $1.strings("dependencies").count }
        context.terminal.write(table.render(on: context.terminal))
        context.terminal.line("\(registrations.count) registrations, \(edges) dependency edges")
        return ExitStatus.ok
    }
}
