/// `weavedictl health [--tag TAG]...`: the last known health, without running the checks.
struct HealthCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "health",
        abstract: "Show the last known health, without running the checks.",
        arguments: "[--tag TAG]...",
        discussion: """
            Options:
              --tag TAG   only the checks with this tag (repeatable: any of the tags)
                          the daemon's tags: liveness, readiness, and sync for the jobs' checks

            Prints the overall status and score, then one row per check: its status (green
            healthy, yellow degraded, red unhealthy on a colour terminal; "pending" before its
            first finding: not run yet, or a job's check while the job never ran), when it
            last ran, its FAILED RESULTS in a row (degraded or unhealthy; a healthy one ends
            them), whether it has a fix, and its message. `weavedictl check` runs the checks
            first.

            Exit status: 0 when healthy; 1 when degraded or unhealthy, or when a tag given is
            one no check has: the daemon refuses it (NoSuchTag), and standard error names it
            and the tags the checks have, with nothing on standard output, --json or not (a
            probe with a misspelt tag would check less than it means to, or nothing, and must
            not pass), or when the daemon is still starting at its call time limit, or its
            start failed (NotReady: a call made while it starts waits for the start, and is
            never answered "healthy" from checks not registered or run yet); 69 when the
            daemon cannot be reached.
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
