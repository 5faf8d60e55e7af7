/// `weavedictl check [--tag TAG]...`: runs the health checks now and shows the result.
struct CheckCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "check",
        abstract: "Run the health checks now and show the result.",
        arguments: "[--tag TAG]...",
        discussion: """
            Options:
              --tag TAG   only the checks with this tag (repeatable: any of the tags)
                          the daemon's tags: liveness, readiness, and sync for the jobs' checks

            Runs the checks (all, or those with any of the tags) and prints the same table as
            `weavedictl health`. Running checks changes nothing, so anyone who may connect may
            run them.

            Exit status: 0 when healthy; 1 when degraded or unhealthy, or when a tag given is
            one no check has: the daemon refuses it (NoSuchTag), and standard error names it
            and the tags the checks have, with nothing on standard output, --json or not (a
            probe with a misspelt tag would check less than it means to, or nothing, and must
            not pass); 69 when the daemon cannot be reached.
            """,
        method: "RunChecks")

    /// The tags to filter by.
    var tags: [String]

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        tags = try HealthTable.parseTags(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        try HealthTable.run("RunChecks", tags: tags, in: context)
    }
}
