import WeaveDI

/// `weavedictl fix [NAME]`: runs the fix of one check, or of every failing check with a fix.
struct FixCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "fix",
        abstract: "Run the fix of one check, or of every failing check that has one.",
        arguments: "[NAME]",
        discussion: """
            Arguments:
              NAME   the health check whose fix to run (see `weavedictl health`); without it,
                     the fixes of all failing checks run

            Prints one row per attempt. A fix asked here skips auto-fix's backoff and circuit
            breaker, not its attempt limit: it can be refused (too many attempts, or a fix of
            the check that timed out still running). One asked while a fix of the check runs
            (an automatic one, which the daemon's health rounds may start at any time, or
            another asked here) waits for it to end: if the check passes after it, this fix
            is not run, and the row says succeeded, by that fix ("the automatic fix running
            as this one was asked healed the check; this one was not run: ..."), nor if that
            fix started a remedy that goes on (inProgress, "... started a remedy that goes on;
            this one was not run: ..."); if neither, this fix runs then. Needs administrator
            rights: uid 0, the daemon's user, or a user or group in control.adminUsers /
            control.adminGroups.

            An attempt is judged by the check, run again after it: succeeded when it passes,
            failed when it still fails (a job's fix whose run failed: "run docs-2 failed: ...;
            the check still fails after it: ..."). One whose fix started a remedy that goes on
            (a job's run that lasts) is inProgress: the check heals when the remedy does its
            work. One whose fix had nothing to do is notApplicable. A job's fix asked here
            resets the job's backoff and runs it now; auto-fix never does either.

            Exit status: 0 when every attempt succeeded or is in progress (or no check was
            failing); 1 when one did not (failed, timed out, or notApplicable: its fix had
            nothing to do, so the check still fails) or the check does not exist; 69 when the daemon cannot be reached;
            77 without the rights.
            """,
        method: "Fix")

    /// The check to fix, or nil for all failing ones.
    var check: String?

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        check = try Self.parseOptionalArgument(&reader)
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let reply = try context.call("Fix", check.map { [("check", .string($0))] } ?? [])
        let fixes = reply.array("fixes")
        if context.options.json {
            context.printJSON(reply.object)
        } else if fixes.isEmpty {
            context.terminal.line("Nothing to fix: no failing check has a fix.")
        } else {
            context.terminal.write(FixesCommand.render(fixes, on: context.terminal))
        }
        return FixesCommand.allSucceeded(fixes) ? ExitStatus.ok : ExitStatus.failure
    }
}
