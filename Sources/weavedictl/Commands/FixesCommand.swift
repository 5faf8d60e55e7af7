import WeaveDI
import WeaveDIDaemon

/// `weavedictl fixes [--limit N]`: the fix attempts the daemon recorded.
struct FixesCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "fixes",
        abstract: "List the recorded fix attempts, newest last.",
        arguments: "[--limit N]",
        discussion: """
            Options:
              --limit N   only the last N attempts: a whole number from 1 to \(UnifiedRegistry.historyLimit), in
                          decimal digits without a sign (the daemon keeps the last \(UnifiedRegistry.historyLimit))

            Automatic fixes (run by the health loop) and manual ones (weavedictl fix) are listed
            with their outcome: succeeded, failed (the fix failed, or the check still fails after
            it), timedOut, refused (a fix asked by hand held back by the attempt limit, by a fix
            of the check that timed out and is still running, or asked inside a fix of its own
            check; an automatic one held back is not listed, `weavedictl health --json` says why
            in fixHeldBack),
            inProgress (the fix started a remedy, such as a job's run, that goes on while the
            check still fails: auto-fix waits for it to end, and counts it neither as a success
            nor as a failure) or notApplicable (a fix by hand that had nothing to do; an
            automatic one is not recorded: `weavedictl health --json` says why auto-fix held back).
            A fix asked for of a check that has none, or of no check, is refused but is no
            attempt: it is not listed. Nor is one asked by hand that the fix running then
            answered, having healed the check or started a remedy that goes on (see `weavedictl
            fix`): that fix is listed; nor one whose caller went away while it waited.

            Exit status: 0 when the attempts are listed (none recorded included), 64 for a --limit
            outside 1 to \(UnifiedRegistry.historyLimit), 69 when the daemon cannot be reached.
            """,
        method: "ListFixes")

    /// `--limit N`.
    var limit: Int?

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        while let token = reader.next() {
            switch token {
            case let .option("--limit", value):
                limit = try Self.limit(reader.onceValue(of: "--limit", inline: value), reader)
            case let .option(name, value): try reader.shared(name, inline: value)
            case let .argument(argument): throw reader.unexpected(argument)
            }
        }
    }

    /// `--limit`'s value: decimal digits (no sign) for a number from 1 to the history's length,
    /// the daemon's own range, which it checks too. One rule and one message for every value
    /// outside it, `0`, `+3` or a number too large for an integer alike.
    static func limit(_ text: String, _ reader: ArgumentReader) throws(UsageError) -> Int {
        let range = 1...UnifiedRegistry.historyLimit
        guard text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let number = Int(text), range.contains(number)
        else {
            throw reader.error("--limit needs a whole number from \(range.lowerBound) to \(range.upperBound), "
                + "in decimal digits (no sign); got '\(text)'")
        }
        return number
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try context.call("ListFixes", limit.map { [("limit", .int($0))] } ?? [])
        if context.options.json {
            context.printJSON(reply.object)
        } else {
            let fixes = reply.array("fixes")
            context.terminal.write(fixes.isEmpty ? "No fix attempts recorded.\n" : Self.render(fixes, on: context.terminal))
        }
        return ExitStatus.ok
    }

    /// Whether every record succeeded, or started a remedy that goes on (`inProgress`).
    static func allSucceeded(_ fixes: [JSONValue]) -> Bool {
        fixes.allSatisfy { $0.string("outcome") == "succeeded" || $0.string("outcome") == "inProgress" }
    }

    /// One row per `io.weavedi.Daemon.Fix` record: when, which check, how triggered, the
    /// outcome, how long, and what happened (with the error, if there was one).
    static func render(_ fixes: [JSONValue], on terminal: Terminal, now: Double = Format.now()) -> String {
        var table = Table(["WHEN", "CHECK", "TRIGGER", "OUTCOME", "DURATION", "MESSAGE"], rightAligned: [4])
        for fix in fixes {
            let outcome = fix.text("outcome")
            var message = fix.string("message") ?? ""
            // The error after the message, unless the message says it already (`fix timed out
            // after 5 s`, error `timed out after 5 s`).
            if let error = fix.string("error"), !message.hasSuffix(error) { message += message.isEmpty ? error : ": " + error }
            table.append([
                Table.Cell(Format.ago(fix.number("time"), now: now)), Table.Cell(fix.text("check")),
                Table.Cell(fix.text("trigger")), Table.Cell(outcome, Terminal.Style.status(outcome)),
                Table.Cell(Format.duration(fix.number("duration") ?? 0)), Table.Cell(message),
            ])
        }
        return table.render(on: terminal)
    }
}
