/// `weavedictl health [--tag TAG]...`: the last known health, without running the checks.
struct HealthCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "health",
        abstract: "Show the last known health, without running the checks.",
        arguments: "[--tag TAG]...",
        discussion: """
            Options:
              --tag TAG   only checks with this tag (repeatable: any of the tags)
                          the daemon's tags: liveness, readiness, and sync for the jobs' checks

            Prints the overall status and score, then one row per check: its status (green
            healthy, yellow degraded, red unhealthy on a colour terminal; "pending" before its
            first run), when it last ran, its FAILED RESULTS in a row (degraded or unhealthy; a
            healthy one ends them), whether it has a fix, and its message. `weavedictl check`
            runs the checks first.

            Exit status: 0 when healthy, 1 when degraded or unhealthy, or when the tags select
            no check (said on standard error, with nothing on standard output but the reply for
            --json: a misspelt tag checks nothing and must not pass).
            """,
        method: "GetHealth")

    /// The tags to filter by.
    var tags: [String]

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        tags = try HealthTable.parseTags(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        try HealthTable.run("GetHealth", tags: tags, in: context)
    }
}
