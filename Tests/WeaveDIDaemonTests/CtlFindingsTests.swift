import Testing
import WeaveDI
import WeaveDIControl

/// What the real daemon does not produce on demand, from a `FakeDaemon`: job progress,
/// unhealthy checks, component issues and cycles, failed fixes, other error replies.
@Suite struct CtlFindingsTests {
    private static let progressThenSuccess: [VarlinkReply] = [
        .progress(files: 1, of: 4, bytes: 1024, of: 4096), .progress(files: 3, of: 4, bytes: 3072, of: 4096),
        .jobRun("docs", result: "success"),
    ]

    @Test func runJob_wait_callsWithMore_andPrintsOneLinePerUpdate() throws {
        let fake = try FakeDaemon(["RunJob": Self.progressThenSuccess])
        let run = try CtlRun.run(["--socket", fake.socket, "run-job", "docs", "--wait"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output == """
            progress: 1/4 files, 1.0 KiB / 4.0 KiB (25%)
            progress: 3/4 files, 3.0 KiB / 4.0 KiB (75%)
            job docs: run run-1 success in 2.5 s (copied 4, updated 0, deleted 1, skipped 0, errors 0, 4.0 KiB)

            """)
        let call = try #require(fake.calls.first)
        #expect(call.method == "io.weavedi.Daemon.RunJob" && call.more && call.parameter("name") == .string("docs"))
    }

    /// An update that repeats the one before (the daemon sends the last counts again when the
    /// run ends) is not printed twice.
    @Test func runJob_wait_printsARepeatedUpdateOnce() throws {
        let last = VarlinkReply.progress(files: 4, of: 4, bytes: 4096, of: 4096)
        let fake = try FakeDaemon(["RunJob": [.progress(files: 1, of: 4, bytes: 1024, of: 4096), last, last, .jobRun("docs", result: "success")]])
        let run = try CtlRun.run(["--socket", fake.socket, "run-job", "docs", "--wait"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output == """
            progress: 1/4 files, 1.0 KiB / 4.0 KiB (25%)
            progress: 4/4 files, 4.0 KiB / 4.0 KiB (100%)
            job docs: run run-1 success in 2.5 s (copied 4, updated 0, deleted 1, skipped 0, errors 0, 4.0 KiB)

            """, "\(run.output)")
    }

    @Test func runJob_withoutWait_callsWithoutMore() throws {
        let fake = try FakeDaemon(["RunJob": [.jobRun("docs", result: "success")]])
        let run = try CtlRun.run(["--socket", fake.socket, "run-job", "docs"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.hasPrefix("job docs: run run-1 success"))
        #expect(fake.calls.first?.more == false)
    }

    /// A daemon older than `detach` refuses it as an unknown parameter: weavedictl asks again
    /// without it and waits for the run's end, as it used to, instead of failing.
    @Test func runJob_withoutWait_olderDaemonRefusingDetach_isAskedAgainWithoutIt() throws {
        let refused = VarlinkFailure.invalidParameter("detach", reason: "unknown parameter (accepted: name)").reply
        let fake = try FakeDaemon(perCall: ["RunJob": [[refused], [.jobRun("docs", result: "success")]]])
        let run = try CtlRun.run(["--socket", fake.socket, "run-job", "docs"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.hasPrefix("job docs: run run-1 success in 2.5 s"), "\(run.all)")
        #expect(run.error.isEmpty, "\(run.error)")
        let calls = fake.calls
        #expect(calls.count == 2, "\(calls)")
        #expect(calls.first?.parameter("detach") == .bool(true), "\(calls)")
        #expect(calls.last.map { $0.parameter("detach") == nil && !$0.more && $0.parameter("name") == .string("docs") } == true, "\(calls)")
    }

    /// Any other refusal (here of the job's name) is the command's error, not asked again.
    @Test func runJob_withoutWait_otherInvalidParameter_isNotAskedAgain() throws {
        let refused = VarlinkFailure.invalidParameter("name", reason: "expected a string").reply
        let fake = try FakeDaemon(perCall: ["RunJob": [[refused], [.jobRun("docs", result: "success")]]])
        let run = try CtlRun.run(["--socket", fake.socket, "run-job", "docs"])
        #expect(run.code == 1, "\(run.all)")
        #expect(run.error.contains("org.varlink.service.InvalidParameter"), "\(run.all)")
        #expect(fake.calls.count == 1, "\(fake.calls)")
    }

    @Test(.enabled(if: fileExists("/usr/bin/script"), "needs script(1) for a pseudo-terminal"))
    func runJob_wait_onATerminal_redrawsOneBarInPlace() throws {
        let fake = try FakeDaemon(["RunJob": Self.progressThenSuccess])
        let command = "'\(CtlRun.binary)' --socket '\(fake.socket)' run-job docs --wait"
        let run = try CtlRun.execute(["/usr/bin/script", "-qec", command, "/dev/null"])
        #expect(run.code == 0, "\(run.all)")
        func bar(_ filled: Int) -> String { "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled) + "]" }
        #expect(run.output.contains(bar(7) + "  25%  1/4 files  1.0 KiB / 4.0 KiB\u{1B}[K"))
        #expect(run.output.contains(bar(22) + "  75%  3/4 files  3.0 KiB / 4.0 KiB\u{1B}[K"))
        #expect(!run.output.contains("progress: "))
    }

    /// A run that ends in an error after the bar was drawn (here no reply within --timeout):
    /// the bar's line is ended first, so the error starts a line of its own.
    @Test(.enabled(if: fileExists("/usr/bin/script"), "needs script(1) for a pseudo-terminal"))
    func runJob_wait_onATerminal_endsTheBarsLineBeforeAnError() throws {
        let fake = try FakeDaemon(["RunJob": [.progress(files: 1, of: 4, bytes: 1024, of: 4096)]])
        let command = "'\(CtlRun.binary)' --socket '\(fake.socket)' --timeout 0.5 run-job docs --wait"
        let run = try CtlRun.execute(["/usr/bin/script", "-qec", command, "/dev/null"])
        #expect(run.code == 69, "\(run.all)")
        #expect(run.output.contains("1.0 KiB / 4.0 KiB\u{1B}[K\r\nweavedictl: no reply to io.weavedi.Daemon.RunJob"), "\(run.all)")
    }

    @Test func runJob_json_printsEachReplyAsALine() throws {
        let fake = try FakeDaemon(["RunJob": Self.progressThenSuccess])
        let run = try CtlRun.run(["--socket", fake.socket, "--json", "run-job", "docs", "--wait"])
        let lines = run.output.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.first?.hasPrefix("{\"run\":null,\"progress\":{\"filesDone\":1,") == true)
        #expect(lines.last?.hasPrefix("{\"run\":{\"id\":\"run-1\"") == true)
    }

    @Test func runJob_failedRun_exits1() throws {
        let fake = try FakeDaemon(["RunJob": [.jobRun("docs", result: "failed")]])
        let run = try CtlRun.run(["--socket", fake.socket, "run-job", "docs"])
        #expect(run.code == 1)
        #expect(run.output.contains("job docs: run run-1 failed in 2.5 s") && run.output.contains(": 2 files could not be read"))
    }

    @Test(arguments: ["degraded", "unhealthy"])
    func health_notHealthy_exits1(status: String) throws {
        let fake = try FakeDaemon(["GetHealth": [.health(status)], "RunChecks": [.health(status)]])
        let health = try CtlRun.run(["--socket", fake.socket, "health"])
        #expect(health.code == 1)
        #expect(health.output.hasPrefix("Health: \(status) ("))
        let check = try CtlRun.run(["--socket", fake.socket, "check", "--json"])
        #expect(check.code == 1 && check.output.contains("\"status\":\"\(status)\""))
    }

    @Test(.enabled(if: fileExists("/usr/bin/script"), "needs script(1) for a pseudo-terminal"))
    func health_colours_yellowDegraded_redUnhealthy() throws {
        for (status, colour) in [("degraded", "\u{1B}[33m"), ("unhealthy", "\u{1B}[31m")] {
            let fake = try FakeDaemon(["GetHealth": [.health(status)]])
            let run = try CtlRun.execute(["/usr/bin/script", "-qec", "'\(CtlRun.binary)' --socket '\(fake.socket)' health", "/dev/null"])
            #expect(run.code == 1)
            #expect(run.output.contains(colour + status + "\u{1B}[0m"), "\(status): \(run.output)")
        }
    }

    @Test func diagnoseComponents_issues_exit1_inTheDocumentedShape() throws {
        let issue = JSONValue.object([
            ("type", .string("Store")), ("kind", .string("duplicateProvider")),
            ("providers", .array([.string("a"), .string("b")])), ("detail", .string("provided by 2 modules (a, b); the registration by b wins")),
        ])
        let fake = try FakeDaemon(["DiagnoseComponents": [VarlinkReply(parameters: [("issues", .array([issue]))])]])
        let json = try CtlRun.run(["--socket", fake.socket, "diagnose-components", "--json"])
        #expect(json.code == 1)
        #expect(json.output == #"{"issues":[{"type":"Store","providers":["a","b"],"detail":"provided by 2 modules (a, b); the registration by b wins","kind":"duplicateProvider"}]}"# + "\n")
        let table = try CtlRun.run(["--socket", fake.socket, "diagnose-components"])
        #expect(table.code == 1)
        #expect(table.output.contains("duplicateProvider  Store  a, b       provided by 2 modules"))
    }

    @Test func checkCycles_cycles_exit1() throws {
        let reply = VarlinkReply(parameters: [
            ("componentCount", .int(3)), ("edgeCount", .int(3)), ("cycles", .array([.array([.string("A"), .string("B")])])),
        ])
        let fake = try FakeDaemon(["CheckCycles": [reply]])
        let table = try CtlRun.run(["--socket", fake.socket, "check-cycles"])
        #expect(table.code == 1)
        #expect(table.output == "3 components, 3 dependency edges, 1 cycle:\n  A -> B -> A\n")
        let json = try CtlRun.run(["--socket", fake.socket, "check-cycles", "--json"])
        #expect(json.code == 1 && json.output == #"{"componentCount":3,"edgeCount":3,"cycles":[["A","B"]]}"# + "\n")
    }

    /// No cycle, but registrations never built: their dependencies are unknown, so the gate
    /// does not pass. The line names the first 10 (escaped, as cycles are) and how many more;
    /// `--json` keeps the documented member order whatever order the daemon used.
    @Test func checkCycles_registrationsNeverBuilt_areNamed_andExit1() throws {
        let names = ["A\u{1B}[31m"] + (1...11).map { "T\($0 < 10 ? "0" : "")\($0)" }
        let reply = VarlinkReply(parameters: [
            ("notBuilt", .array(names.map(JSONValue.string))), ("cycles", .array([])),
            ("edgeCount", .int(0)), ("componentCount", .int(12)),
        ])
        let fake = try FakeDaemon(["CheckCycles": [reply]])
        let table = try CtlRun.run(["--socket", fake.socket, "check-cycles"])
        #expect(table.code == 1)
        #expect(table.output == "12 components, 0 dependency edges, no cycles among them.\n"
            + "12 registrations never built, so their dependencies are unknown: A\\u{1B}[31m, T01, T02, T03, T04, T05, T06, T07, "
            + "T08, T09 and 2 more (the daemon's container.graph check builds every registration once: `weavedictl check` runs it)\n",
            "\(table.all)")
        #expect(!hasEscape(table.output))
        let json = try CtlRun.run(["--socket", fake.socket, "check-cycles", "--json"])
        #expect(json.code == 1)
        #expect(json.output.hasPrefix(#"{"componentCount":12,"edgeCount":0,"cycles":[],"notBuilt":["A\u001b[31m","T01","#), "\(json.all)")

        let one = try FakeDaemon(["CheckCycles": [VarlinkReply(parameters: [
            ("componentCount", .int(2)), ("edgeCount", .int(1)), ("cycles", .array([])), ("notBuilt", .array([.string("B")])),
        ])]])
        let single = try CtlRun.run(["--socket", one.socket, "check-cycles"])
        #expect(single.code == 1)
        #expect(single.output.hasSuffix("\n1 registration never built, so its dependencies are unknown: B (the daemon's "
            + "container.graph check builds every registration once: `weavedictl check` runs it)\n"), "\(single.all)")
    }

    /// A daemon older than `notBuilt` does not say: the JSON leaves it out (an empty list
    /// would say every dependency is known) and the exit status follows the cycles alone.
    @Test func checkCycles_aDaemonThatDoesNotSayWhatWasNeverBuilt_isShownAsItAnswered() throws {
        let fake = try FakeDaemon(["CheckCycles": [VarlinkReply(parameters: [
            ("componentCount", .int(2)), ("edgeCount", .int(1)), ("cycles", .array([])),
        ])]])
        let json = try CtlRun.run(["--socket", fake.socket, "check-cycles", "--json"])
        #expect(json.code == 0 && json.output == #"{"componentCount":2,"edgeCount":1,"cycles":[]}"# + "\n", "\(json.all)")
        let table = try CtlRun.run(["--socket", fake.socket, "check-cycles"])
        #expect(table.code == 0 && table.output == "2 components, 1 dependency edges, no cycles.\n", "\(table.all)")
    }

    @Test func fix_thatFailed_exits1() throws {
        let record = JSONValue.object([
            ("time", .double(1000)), ("check", .string("disk.space")), ("trigger", .string("manual")), ("outcome", .string("failed")),
            ("message", .string("fix failed")), ("error", .string("cleanup script exited 2")), ("duration", .double(0.25)),
        ])
        let fake = try FakeDaemon(["Fix": [VarlinkReply(parameters: [("fixes", .array([record]))])]])
        let run = try CtlRun.run(["--socket", fake.socket, "fix", "disk.space"])
        #expect(run.code == 1)
        #expect(run.output.contains("disk.space  manual   failed     250 ms  fix failed: cleanup script exited 2"))
        #expect(fake.calls.first?.parameter("check") == .string("disk.space"))
    }

    /// A fix whose remedy goes on (`inProgress`) is no failure: exit 0. An outcome this
    /// weavedictl does not know (from a newer daemon) is shown as it is, and not taken for a
    /// success.
    @Test func fix_inProgress_exits0_andAnUnknownOutcomeIsShownAsItIs() throws {
        func record(_ outcome: String) -> JSONValue {
            .object([
                ("time", .double(1000)), ("check", .string("job.docs")), ("trigger", .string("manual")), ("outcome", .string(outcome)),
                ("message", .string("started run docs-2")), ("error", .null), ("duration", .double(5)),
            ])
        }
        let fake = try FakeDaemon(["Fix": [VarlinkReply(parameters: [("fixes", .array([record("inProgress")]))])]])
        let inProgress = try CtlRun.run(["--socket", fake.socket, "fix", "job.docs"])
        #expect(inProgress.code == 0, "\(inProgress.all)")
        #expect(inProgress.output.contains(" manual   inProgress "), "\(inProgress.all)")
        #expect(inProgress.output.contains(" started run docs-2"), "\(inProgress.all)")
        let newer = try FakeDaemon(["Fix": [VarlinkReply(parameters: [("fixes", .array([record("someday\u{1B}[31m")]))])]])
        let unknown = try CtlRun.run(["--socket", newer.socket, "fix", "job.docs"])
        #expect(unknown.code == 1, "\(unknown.all)")
        #expect(unknown.output.contains(#" someday\u{1B}[31m "#), "\(unknown.all)")
        #expect(!unknown.output.contains("\u{1B}"), "\(unknown.all)")
    }

    @Test func otherErrorReplies_exit1_withTheirNameAndParameters() throws {
        let refused = VarlinkReply(parameters: [("reason", .string("/etc/weavedi/weavedid.json: line 2, column 1: unexpected end"))],
                                   error: "io.weavedi.Daemon.ReloadRefused")
        let fake = try FakeDaemon(["Reload": [refused]])
        let run = try CtlRun.run(["--socket", fake.socket, "reload"])
        #expect(run.code == 1)
        #expect(run.error.hasPrefix("weavedictl: io.weavedi.Daemon.Reload failed: io.weavedi.Daemon.ReloadRefused {\"reason\":"))
        #expect(run.error.contains("keeps the previous one: /etc/weavedi/weavedid.json: line 2"))
    }

    @Test func aConnectionClosedWithoutAnAnswer_exits69() throws {
        let fake = try FakeDaemon([:])
        let run = try CtlRun.run(["--socket", fake.socket, "ping"])
        #expect(run.code == 69)
        #expect(run.error.hasPrefix("weavedictl: the connection to \(fake.socket) broke: the daemon closed the connection"))
    }
}
