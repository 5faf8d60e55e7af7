import Testing
import WeaveDI
import WeaveDIControl

/// The subcommands that change something (as root, which may), and their error replies.
@Suite struct CtlChangingTests {
    @Test func fix_unknownCheck_exits1WithTheDaemonsError() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "fix", "no.such.check"])
        #expect(run.code == 1)
        #expect(run.error.contains("io.weavedi.Daemon.NoSuchCheck {\"name\":\"no.such.check\"}"))
        #expect(run.error.contains("`weavedictl health` lists them"))
        #expect(run.output.isEmpty)
    }

    @Test func fix_withoutAName_andNothingFailing_exitsZero() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "fix"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output == "Nothing to fix: no failing check has a fix.\n")
    }

    @Test func logLevel_set_isShownByTheNextGet() throws {
        let daemon = try readyDaemon()
        let before = try CtlRun.run(["--socket", daemon.defaultSocket, "log-level"])
        #expect(before.code == 0)
        #expect(before.output == "level:  all\nfilter: info\n")
        let set = try CtlRun.run(["--socket", daemon.defaultSocket, "log-level", "errors", "--filter", "warning,control=debug"])
        #expect(set.code == 0, "\(set.all)")
        #expect(set.output == "level:  errors\nfilter: warning,control=debug\n")
        let after = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "log-level"])
        #expect(after.output == "{\"level\":\"errors\",\"filter\":\"warning,control=debug\"}\n")
    }

    @Test func logLevel_unknownLevel_exits1WithInvalidParameter() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "log-level", "loud"])
        #expect(run.code == 1)
        #expect(run.error.contains(#"org.varlink.service.InvalidParameter {"parameter":"level","reason":"expected one of all, "#))
        #expect(run.error.contains("levels: all, registration, optimization, errors, off"))
        let unchanged = try CtlRun.run(["--socket", daemon.defaultSocket, "log-level"])
        #expect(unchanged.output.hasPrefix("level:  all\n"))
    }

    @Test func reload_withTheBuiltInDefault_succeeds() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "reload"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output == "configuration reloaded\n")
        let json = try CtlRun.run(["--socket", daemon.defaultSocket, "reload", "--json"])
        #expect(json.output == "{\"status\":\"configuration reloaded\"}\n")
    }

    @Test(arguments: [["run-job", "nope"], ["run-job", "nope", "--wait"], ["pause-job", "nope"], ["resume-job", "nope"]])
    func jobSubcommands_unknownJob_exit1WithNoSuchJob(arguments: [String]) throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket] + arguments)
        #expect(run.code == 1, "\(run.all)")
        #expect(run.error.contains("io.weavedi.Daemon.NoSuchJob {\"name\":\"nope\"}"))
        #expect(run.output.isEmpty)
    }
}
