import WeaveDI
import WeaveDIControl
import WeaveDIDaemon

/// Prints an `io.weavedi.Daemon.Health` object for `health` and `check`, and decides their
/// exit status: 1 when the overall status is anything but healthy, or when a tag given is one no
/// check has (the daemon's `NoSuchTag`).
struct HealthTable {
    /// The `health` reply parameter.
    let health: JSONValue

    /// Parses `--tag TAG` (repeatable) for `health` and `check`.
    static func parseTags(_ reader: inout ArgumentReader) throws(UsageError) -> [String] {
        var tags: [String] = []
        while let token = reader.next() {
            switch token {
            case let .option("--tag", value): tags.append(try reader.value(of: "--tag", inline: value))
            case let .option(name, value): try reader.shared(name, inline: value)
            case let .argument(argument): throw reader.unexpected(argument)
            }
        }
        return tags
    }

    /// The call's parameters for `tags`.
    static func parameters(tags: [String]) -> [(String, JSONValue)] {
        tags.isEmpty ? [] : [("tags", .array(tags.map(JSONValue.string)))]
    }

    /// Calls `method` (GetHealth or RunChecks), prints the result, returns the exit status.
    static func run(_ method: String, tags: [String], in context: CtlContext) throws(CtlError) -> Int32 {
        let reply = try context.call(method, parameters(tags: tags))
        let health = HealthTable(health: reply.parameter("health") ?? .object([]))
        // The daemon refuses a tag no check has (`NoSuchTag`, an error reply: exit 1, nothing on
        // standard output); one older than that answers with no check for tags that select none.
        if !tags.isEmpty && health.health.array("checks").isEmpty {
            // A probe whose tag is misspelt (`--tag readyness`) checks nothing: that is no pass,
            // and a `Health: healthy` line or the reply's score of 100 would say otherwise.
            let named = tags.map { JSONValue.quotedForMessage($0).escapingControlCharacters }.joined(separator: ", ")
            // Such a daemon does not say which tags its checks have: none are named for it.
            Terminal.error("weavedictl: no health check has the tag \(named): nothing was checked "
                + "(this daemon does not say which tags its checks have; `weavedictl health --json` shows each check's)")
            return ExitStatus.failure
        }
        if context.options.json {
            context.printJSON(reply.object)
        } else {
            context.terminal.write(health.render(on: context.terminal))
        }
        return health.isHealthy ? ExitStatus.ok : ExitStatus.failure
    }

    /// Whether the overall status is healthy.
    var isHealthy: Bool { health.string("status") == "healthy" }

    /// A summary line, then one row per check.
    func render(on terminal: Terminal) -> String {
        let status = health.text("status").escapingControlCharacters
        let checks = health.array("checks")
        let text = "Health: " + terminal.styled(status, Terminal.Style.status(status))
            + " (score \(health.intText("score")), \(checks.count) check\(checks.count == 1 ? "" : "s")"
            + Self.age(of: checks) + ")\n"
        guard !checks.isEmpty else { return text + "No checks match.\n" }
        var table = Table(["CHECK", "STATUS", "LAST RUN", "FAILED RESULTS", "FIX", "MESSAGE"], rightAligned: [3])
        for check in checks {
            let checkStatus = check.string("status") ?? "pending"
            table.append([
                Table.Cell(check.text("name")), Table.Cell(checkStatus, Terminal.Style.status(checkStatus)),
                Table.Cell(Format.ago(check.number("lastRun"))), Table.Cell(check.intText("consecutiveFailures")),
                Table.Cell(Self.fixColumn(check)), Table.Cell(check.string("message") ?? ""),
            ])
        }
        return text + "\n" + table.render(on: terminal)
    }

    /// How old the results are, from when the checks last ran (the reply's `takenAt` is only
    /// when it was made): `, checked 3.1 s to 40 s ago`; `, 6 checked 3.1 s to 40 s ago, 2 not
    /// yet` when some never ran; `, none checked yet`; nothing without checks.
    static func age(of checks: [JSONValue], now: Double = Format.now()) -> String {
        guard !checks.isEmpty else { return "" }
        let runs = checks.compactMap { $0.number("lastRun") }
        guard let oldest = runs.min(), let newest = runs.max() else { return ", none checked yet" }
        let (from, to) = (Format.ago(newest, now: now), Format.ago(oldest, now: now))
        let span = from == to ? to : String(from.dropLast(" ago".count)) + " to " + to
        let notYet = checks.count - runs.count
        return notYet == 0 ? ", checked " + span : ", \(runs.count) checked \(span), \(notYet) not yet"
    }

    /// `-`, `yes`, `in progress`, `held back` or `breaker open`.
    private static func fixColumn(_ check: JSONValue) -> String {
        guard check.flag("fixable") else { return "-" }
        // The remedy the last fix started (a job's run) still goes on: auto-fix waits for it.
        if check.string("fixInProgress") != nil { return "in progress" }
        if check.string("breaker") == "open" { return "breaker open" }
        if check.string("fixHeldBack") != nil { return "held back" }
        return "yes"
    }
}
