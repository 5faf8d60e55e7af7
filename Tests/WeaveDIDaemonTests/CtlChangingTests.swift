import Foundation
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
        // A daemon level given as LEVEL: the hint says where those go.
        let debug = try CtlRun.run(["--socket", daemon.defaultSocket, "log-level", "debug"])
        #expect(debug.code == 1)
        #expect(debug.error.contains("follow its filter: weavedictl log-level --filter debug"), "\(debug.error)")
        let unchanged = try CtlRun.run(["--socket", daemon.defaultSocket, "log-level"])
        #expect(unchanged.output.hasPrefix("level:  all\n"))
    }

    /// A call whose filter is refused changes nothing, the level it also names included, and
    /// logs no change; a call that names neither logs nothing either.
    @Test func logLevel_withABadFilter_changesNeither() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "log-level", "off", "--filter", "sync=loud"])
        #expect(run.code == 1, "\(run.all)")
        #expect(run.error.contains(#"{"parameter":"filter","reason":"#), "\(run.error)")
        let wrongType = try daemon.sendCall("SetLogLevel", #"{"level":"off","filter":5}"#).reply() ?? ""
        #expect(wrongType.contains(#""parameter":"filter""#), "\(wrongType)")
        let unchanged = try CtlRun.run(["--socket", daemon.defaultSocket, "log-level"])
        #expect(unchanged.output == "level:  all\nfilter: info\n", "\(unchanged.all)")
        let neither = try daemon.sendCall("SetLogLevel").reply() ?? ""
        #expect(neither.contains(#""level":"all""#), "\(neither)")
        // The next change is logged: nothing before it was.
        let set = try CtlRun.run(["--socket", daemon.defaultSocket, "log-level", "errors"])
        #expect(set.code == 0, "\(set.all)")
        #expect(daemon.waitForLog("log level now errors"))
        #expect(!daemon.log.contains("log level now all"), "\(daemon.log)")
        #expect(!daemon.log.contains("log level now off"), "\(daemon.log)")
    }

    @Test func reload_withTheBuiltInDefault_succeeds() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "reload"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output == "configuration reloaded\n")
        let json = try CtlRun.run(["--socket", daemon.defaultSocket, "reload", "--json"])
        #expect(json.output == "{\"status\":\"configuration reloaded\"}\n")
        // The log names who asked: the caller's uid and pid (here, this process's own).
        let reply = try daemon.sendCall("Reload").reply() ?? ""
        #expect(reply.contains("configuration reloaded"), "\(reply)")
        #expect(daemon.waitForLog("reloading the configuration (asked by Reload from uid \(getuid()) (pid \(getpid())))"), "\(daemon.log)")
    }

    /// Pausing a job paused already, or resuming one not paused, changes nothing and says so:
    /// `already paused`, `not paused (nothing to resume)` (the reply's `unchanged`), still exit 0
    /// (asking again is harmless), and the log has one line of the change, not one per call. Before,
    /// each call printed `paused` and logged `example paused` again.
    @Test func pauseAndResume_askedAgain_sayNothingChanged_andLogNoChange() throws {
        let daemon = try readyDaemon()
        func ctl(_ arguments: String...) throws -> CtlRun {
            try CtlRun.run(["--socket", daemon.defaultSocket] + arguments)
        }
        let first = try ctl("pause-job", "example")
        #expect(first.code == 0 && first.output == "job example: paused\n", "\(first.all)")
        let again = try ctl("pause-job", "example")
        #expect(again.code == 0 && again.output == "job example: already paused\n", "\(again.all)")
        let json = try ctl("--json", "pause-job", "example")
        #expect(json.code == 0 && json.output == #"{"unchanged":true}"# + "\n", "\(json.all)")
        // Logged as the call is answered: the second call's line follows the first call's.
        #expect(daemon.waitForLog("info    sync: example: already paused: nothing changed"), "\(daemon.log)")
        #expect(daemon.log.components(separatedBy: "sync: example paused").count == 2, "\(daemon.log)")

        let resumed = try ctl("resume-job", "example")
        #expect(resumed.code == 0 && resumed.output == "job example: resumed\n", "\(resumed.all)")
        let resumedAgain = try ctl("resume-job", "example")
        #expect(resumedAgain.code == 0 && resumedAgain.output == "job example: not paused (nothing to resume)\n", "\(resumedAgain.all)")
        #expect(daemon.waitForLog("info    sync: example: not paused: nothing to resume"), "\(daemon.log)")
        #expect(daemon.log.components(separatedBy: "sync: example resumed").count == 2, "\(daemon.log)")
    }

    @Test(arguments: [["run-job", "nope"], ["run-job", "nope", "--wait"], ["pause-job", "nope"], ["resume-job", "nope"]])
    func jobSubcommands_unknownJob_exit1WithNoSuchJob(arguments: [String]) throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket] + arguments)
        #expect(run.code == 1, "\(run.all)")
        #expect(run.error.contains("io.weavedi.Daemon.NoSuchJob {\"name\":\"nope\"}"))
        #expect(run.error.contains("No job is named \"nope\"; `weavedictl jobs` lists them."), "\(run.error)")
        #expect(run.output.isEmpty)
    }

    /// A job name of 120 KB comes back in the daemon's `NoSuchJob`: the error quotes it
    /// shortened, with its length, in the failure and in the hint, instead of twice in full.
    @Test(arguments: [["run-job"], ["pause-job"], ["resume-job"]])
    func aVeryLongUnknownJobName_isShortenedInTheError(arguments: [String]) throws {
        let daemon = try readyDaemon()
        let name = String(repeating: "j", count: 120_000)
        let run = try CtlRun.run(["--socket", daemon.defaultSocket] + arguments + [name])
        #expect(run.code == 1, "\(run.all.prefix(500))")
        let shown = "\"" + String(repeating: "j", count: 57) + "...\" (120000 characters)"
        #expect(run.error.contains("io.weavedi.Daemon.NoSuchJob {\"name\":\(shown)}\n"), "\(run.error.prefix(500))")
        #expect(run.error.hasSuffix("No job is named \(shown); `weavedictl jobs` lists them.\n"), "\(run.error.prefix(500))")
        #expect(run.error.utf8.count < 500, "\(run.error.prefix(500))")
    }

    /// The daemon's explanation (`reason`) is shown whole, however long.
    @Test func aLongReason_isShownWhole() throws {
        let reason = String(repeating: "r", count: 200)
        let fake = try FakeDaemon(["Reload": [VarlinkReply(parameters: [("reason", .string(reason))], error: "io.weavedi.Daemon.ReloadRefused")]])
        let run = try CtlRun.run(["--socket", fake.socket, "reload"])
        #expect(run.code == 1, "\(run.all)")
        #expect(run.error.hasPrefix("weavedictl: io.weavedi.Daemon.Reload failed: io.weavedi.Daemon.ReloadRefused {\"reason\":\"\(reason)\"}\n"),
            "\(run.error)")
    }

    /// An older daemon's reason, wrapped in the words it logs (`reload refused: …; keeping the
    /// previous configuration`), and a reason alone, as the daemon sends it now, make one hint.
    @Test(arguments: ["reload refused: /etc/weavedid.json: control.bogus: unknown field; keeping the previous configuration",
                      "/etc/weavedid.json: control.bogus: unknown field"])
    func reloadRefused_fromAnOlderDaemonOrThisOne_givesOneHint(reason: String) throws {
        let fake = try FakeDaemon(["Reload": [VarlinkReply(parameters: [("reason", .string(reason))], error: "io.weavedi.Daemon.ReloadRefused")]])
        let run = try CtlRun.run(["--socket", fake.socket, "reload"])
        #expect(run.code == 1, "\(run.all)")
        #expect(run.error.hasSuffix("\nThe daemon refused the new configuration and keeps the previous one: "
            + "/etc/weavedid.json: control.bogus: unknown field\n"), "\(run.error)")
    }

    /// The hint after a refused reload says the reason once, not wrapped in the daemon's
    /// `reload refused: …; keeping the previous configuration` as well; the reply's reason is
    /// the reason alone, while the log keeps the words around it.
    @Test func reloadRefused_hintSaysTheReasonOnce() throws {
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", #"{"sync": {"jobs": []}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        directory.write("weavedid.json", #"{"bogus": 1}"#)
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "reload"])
        #expect(run.code == 1, "\(run.all)")
        let hint = try #require(run.error.split(separator: "\n").last.map(String.init), "\(run.all)")
        #expect(hint.hasPrefix("The daemon refused the new configuration and keeps the previous one: \(config): "), "\(hint)")
        #expect(!hint.contains("reload refused") && !hint.contains("keeping the previous configuration"), "\(hint)")
        let refusal = try reloadFailure(daemon.defaultSocket)
        #expect(refusal?.reply.parameter("reason")?.stringValue?.hasPrefix("\(config): ") == true, "\(String(describing: refusal))")
        #expect(refusal?.reply.parameter("reason")?.stringValue?.contains("keeping the previous configuration") == false)
        #expect(daemon.log.contains("reload refused: \(config): "), "\(daemon.log)")
    }
}
