import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIDaemon
import WeaveDIPosix

/// The reading subcommands against a real daemon over its real socket.
@Suite struct CtlReadingTests {
    @Test func ping_printsTheDaemonsVersionAndPid() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "ping"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.contains("weavedid \(DaemonVersion.current) answers on \(daemon.defaultSocket) (pid \(daemon.pid),"))
        #expect(run.error.isEmpty)
    }

    @Test func ping_json_printsTheReplyParameters() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "ping"])
        #expect(run.code == 0)
        let reply = try run.json()
        #expect(memberNames(reply) == ["version", "pid", "uptime"])
        #expect(reply[member: "version"]?.stringValue == DaemonVersion.current)
        #expect(reply[member: "pid"]?.intValue == Int(daemon.pid))
    }

    @Test func health_table_showsTheOverallStatusAndEveryCheck() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "health"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.hasPrefix("Health: healthy (score 100, "))
        let lines = run.output.split(separator: "\n")
        let header = try #require(lines.first { $0.hasPrefix("CHECK") })
        #expect(header.split(separator: " ", omittingEmptySubsequences: true).first == "CHECK")
        #expect(header.contains("STATUS") && header.contains("MESSAGE"))
        // The health loop is off in these tests, so the last known state is "pending".
        let row = try #require(lines.first { $0.hasPrefix("daemon.configuration ") })
        #expect(row.contains("pending") && row.contains("never"))
        // Aligned: the STATUS column starts at the same offset in the header and every row.
        let offset = header.range(of: "STATUS")!.lowerBound.utf16Offset(in: header)
        for line in lines.drop(while: { !$0.hasPrefix("CHECK") }).dropFirst() {
            #expect(line.utf16.count > offset && Array(line.utf16)[offset - 1] == 0x20 && Array(line.utf16)[offset] != 0x20)
        }
    }

    @Test func health_json_printsTheHealthObject() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "health", "--json"])
        #expect(run.code == 0)
        let health = try #require(run.json()[member: "health"])
        #expect(health[member: "status"]?.stringValue == "healthy")
        let names = health[member: "checks"]?.arrayValue?.compactMap { $0[member: "name"]?.stringValue } ?? []
        #expect(names.contains("daemon.configuration") && names.contains("container.sessions"))
        #expect(!hasEscape(run.output))
    }

    @Test func health_tag_keepsOnlyChecksWithTheTag() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "health", "--tag", "liveness"])
        #expect(run.code == 0)
        let checks = try #require(run.json()[member: "health"]?[member: "checks"]?.arrayValue)
        #expect(!checks.isEmpty)
        for check in checks {
            #expect(check[member: "tags"]?.arrayValue?.contains(.string("liveness")) == true)
        }
        #expect(!checks.contains { $0[member: "name"]?.stringValue == "daemon.configuration" })
    }

    /// A misspelt tag, alone or beside a good one, is refused by the daemon: the probe would
    /// check less than it means to, or nothing, which is no pass. Exit 1, the tag and the tags
    /// the checks have on standard error, nothing on standard output (no `Health: healthy`, no
    /// reply whose score is 100), as a table, as JSON, for `health` and for `check`.
    @Test(arguments: [["health"], ["check"], ["--json", "health"], ["--json", "check"]])
    func aTagNoCheckHas_isRefused_namingTheTagsThereAre(command: [String]) throws {
        let daemon = try readyDaemon()
        let method = command.last == "check" ? "RunChecks" : "GetHealth"
        for tags in [["readyness"], ["sync", "readyness"]] {
            let run = try CtlRun.run(["--socket", daemon.defaultSocket] + command + tags.flatMap { ["--tag", $0] })
            #expect(run.code == 1, "\(run.all)")
            #expect(run.output == "", "\(run.all)")
            #expect(run.error == """
                weavedictl: io.weavedi.Daemon.\(method) failed: io.weavedi.Daemon.NoSuchTag {"tags":["readyness"],"known":["liveness","readiness","sync"]}
                No health check has the tag "readyness"; the daemon's checks have the tags "liveness", "readiness", "sync".

                """, "\(run.all)")
        }
    }

    /// `health --help` and `check --help` name every tag the daemon's checks carry, so that
    /// `--tag` can be used without reading the source.
    @Test func healthAndCheckHelp_nameEveryTagTheDaemonsChecksCarry() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "health"])
        let checks = try #require(run.json()[member: "health"]?[member: "checks"]?.arrayValue)
        let tags = Set(checks.flatMap { $0[member: "tags"]?.arrayValue?.compactMap(\.stringValue) ?? [] })
        #expect(tags.contains("sync"), "the built-in default has a job: \(run.all)")
        for command in ["health", "check"] {
            let help = try CtlRun.run([command, "--help"]).output
            for tag in tags { #expect(help.contains(tag), "\(command) --help does not name the tag \(tag): \(help)") }
        }
    }

    /// `health` says how old its results are, from when the checks last ran, not from when the
    /// reply was made (which is always now): checked a while ago, the results are that old.
    @Test func health_saysHowOldTheResultsAre() throws {
        let daemon = try readyDaemon()
        let checked = try CtlRun.run(["--socket", daemon.defaultSocket, "check", "--tag", "liveness"])
        #expect(checked.code == 0, "\(checked.all)")
        usleep(1_100_000)
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "health", "--tag", "liveness"])
        let summary = try #require(run.output.split(separator: "\n").first.map(String.init), "\(run.all)")
        #expect(summary.hasPrefix("Health: healthy (score 100, ") && summary.contains(" checks, checked "), "\(summary)")
        // At least the 1.1 s since `check`: in seconds, not the milliseconds since the call.
        #expect(summary.hasSuffix(" s ago)") && !summary.contains(" ms ") && !summary.contains("taken"), "\(summary)")
    }

    @Test func check_runsTheChecksBeforeReporting() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "check"])
        #expect(run.code == 0, "\(run.all)")
        let row = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("daemon.configuration ") })
        #expect(row.contains("healthy") && row.contains("configuration in effect"))
        #expect(!row.contains("pending"))
    }

    @Test func fixesAndJobs_onAFreshDaemon() throws {
        let daemon = try readyDaemon()
        let fixes = try CtlRun.run(["--socket", daemon.defaultSocket, "fixes", "--limit", "5"])
        #expect(fixes.code == 0 && fixes.output == "No fix attempts recorded.\n")
        let fixesJSON = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "fixes"])
        #expect(fixesJSON.output == "{\"fixes\":[]}\n")
        // The built-in default has one example mirror job.
        let jobs = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs"])
        #expect(jobs.code == 0 && jobs.output.split(separator: "\n").contains { $0.hasPrefix("example ") && $0.contains("mirror") }, "\(jobs.output)")
        let jobsJSON = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs", "--json"])
        let listed = try #require(jobsJSON.json()[member: "jobs"]?.arrayValue)
        #expect(jobsJSON.code == 0 && listed.map { $0[member: "name"]?.stringValue } == ["example"])
    }

    /// `weavedictl jobs NAME`: one job in full, with what it copies where and how (the `mirror`
    /// of `ListJobs`, which `--json` prints with the job), its state and its last run; a name no
    /// job has is an error that lists the jobs; two names are a usage error.
    @Test func jobs_name_showsOneJobInFull_withWhatItCopiesWhere() throws {
        let directory = TemporaryDirectory()
        let daemon = try readyDaemon(directory: directory)
        let example = directory.path + "/.weavedi/example"
        #expect(daemon.waitForLog("example: run example-1 success", timeout: .seconds(60)), "\(daemon.log)")
        let shown = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs", "example"], in: directory)
        #expect(shown.code == 0, "\(shown.all)")
        let lines = shown.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "Job:          example", "\(shown.all)")
        #expect(lines.contains("Kind:         mirror") && lines.contains("State:        scheduled"), "\(shown.all)")
        #expect(lines.contains("Source:       \(example)/source"), "\(shown.all)")
        #expect(lines.contains("Destination:  \(example)/mirror"), "\(shown.all)")
        #expect(lines.contains { $0.hasPrefix("Copies:       durable, compare size-mtime, keeps what the source no longer has, ") }, "\(shown.all)")
        #expect(lines.contains { $0.hasPrefix("Last run:     ended ") && $0.contains(" ago: run example-1 success in ") }, "\(shown.all)")

        let json = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "jobs", "example"], in: directory).json()
        #expect(json[member: "name"]?.stringValue == "example", "\(json)")
        let mirror = try #require(json[member: "mirror"])
        #expect(mirror[member: "source"]?.stringValue == example + "/source", "\(mirror)")
        #expect(mirror[member: "destination"]?.stringValue == example + "/mirror", "\(mirror)")
        #expect(mirror[member: "compare"]?.stringValue == "size-mtime" && mirror[member: "delete"]?.boolValue == false)
        #expect(mirror[member: "durable"]?.boolValue == true && mirror[member: "destinationMountPoint"]?.boolValue == false)
        #expect((mirror[member: "workers"]?.intValue ?? 0) >= 1, "\(mirror)")

        let unknown = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs", "exampel"], in: directory)
        #expect(unknown.code == 1 && unknown.output.isEmpty, "\(unknown.all)")
        #expect(unknown.error == "weavedictl: no job is named \"exampel\"; the jobs: \"example\".\n", "\(unknown.all)")
        let two = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs", "example", "other"], in: directory)
        #expect(two.code == 64 && two.error.contains("unexpected argument 'other'"), "\(two.all)")
    }

    /// A word means one thing: the jobs' column counts failed runs in a row and says so, the
    /// checks' column failed results in a row, and neither is the same "FAILURES"; the JSON
    /// keys (`consecutiveFailures`, `running`) stay as scripts read them.
    @Test func jobsAndHealth_nameWhatTheirFailureColumnsCount_andKeepTheirJSONKeys() throws {
        let daemon = try readyDaemon()
        func columns(_ header: Substring?) -> [String] {
            (header ?? "").split(separator: "  ").map { String($0.drop { $0 == " " }) }
        }
        let jobs = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs"])
        #expect(columns(jobs.output.split(separator: "\n").first)
            == ["JOB", "KIND", "STATE", "INTERVAL", "NEXT RUN", "LAST RESULT", "FAILED RUNS"], "\(jobs.all)")
        let health = try CtlRun.run(["--socket", daemon.defaultSocket, "health"])
        #expect(columns(health.output.split(separator: "\n").first { $0.hasPrefix("CHECK ") })
            == ["CHECK", "STATUS", "LAST RUN", "FAILED RESULTS", "FIX", "MESSAGE"], "\(health.all)")
        // The example job may be running (it runs at start): the keys are there, whatever their values.
        let job = try #require(CtlRun.run(["--socket", daemon.defaultSocket, "--json", "jobs"]).json()[member: "jobs"]?.arrayValue?.first)
        #expect(job[member: "running"]?.boolValue != nil && job[member: "consecutiveFailures"]?.intValue != nil, "\(job)")
        let check = try #require(CtlRun.run(["--socket", daemon.defaultSocket, "--json", "health"]).json()[member: "health"]?[member: "checks"]?
            .arrayValue?.first)
        #expect(check[member: "consecutiveFailures"]?.intValue != nil, "\(check)")
    }

    /// weavedictl refuses a limit above the history itself, naming the range (the daemon,
    /// which checks it too, is not asked: see `CtlConsistencyTests`).
    @Test func fixes_limitAboveTheHistory_isRefusedWithTheAllowedRange() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "fixes", "--limit", "1000000"])
        #expect(run.code == 64, "\(run.all)")
        #expect(run.error.hasPrefix("weavedictl fixes: --limit needs a whole number from 1 to 500"), "\(run.error)")
        #expect(run.output.isEmpty)
    }

    @Test func sessions_showTheConnectionOfWeavedictlItself() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "sessions"])
        #expect(run.code == 0)
        let sessions = try #require(run.json()[member: "sessions"]?.arrayValue)
        let own = try #require(sessions.first { $0[member: "pid"]?.intValue == Int(run.pid) })
        #expect(own[member: "kind"]?.stringValue == "control")
        #expect(own[member: "uid"]?.intValue == Int(CurrentProcess.userID))
        let table = try CtlRun.run(["--socket", daemon.defaultSocket, "sessions"])
        let row = try #require(table.output.split(separator: "\n").first { $0.contains(" \(table.pid) ") })
        #expect(row.contains("control"))
    }

    @Test func registrations_listTheDaemonsGraph() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "registrations"])
        #expect(run.code == 0)
        let row = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("VarlinkService ") })
        #expect(row.contains("singleton") && row.contains("control") && row.contains("DaemonMethods"))
        let json = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "registrations"])
        let registrations = try #require(json.json()[member: "registrations"]?.arrayValue)
        #expect(memberNames(registrations.first) == ["type", "scope", "module", "dependencies", "built"])
        #expect(run.output.contains("\(registrations.count) registrations"))
    }

    @Test func metrics_printsTheTextExposition() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "metrics"])
        #expect(run.code == 0)
        #expect(run.output.split(separator: "\n").contains("weavedi_up 1"))
        #expect(run.output.hasPrefix("# HELP "))
    }

    @Test func version_printsBothVersions_andExitsZeroWithoutADaemon() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "version"])
        #expect(run.code == 0)
        #expect(run.output.hasPrefix("weavedictl \(DaemonVersion.current)\nweavedid \(DaemonVersion.current) answers"))
        let alone = try CtlRun.run(["--socket", daemon.directory.path + "/none.sock", "version"])
        #expect(alone.code == 0)
        #expect(alone.output.contains("weavedictl \(DaemonVersion.current)\nweavedid: not reachable (cannot connect to"))
        let json = try CtlRun.run(["--socket", daemon.directory.path + "/none.sock", "version", "--json"])
        #expect(json.output == "{\"weavedictl\":\"\(DaemonVersion.current)\",\"daemon\":null}\n")
    }
}

extension CtlReadingTests {
    /// A daemon with no place left refuses the connection (`LimitExceeded`): that says nothing
    /// of its health, so `health` exits 69, as for a daemon it cannot reach, not 1 (unhealthy),
    /// and says what to do.
    @Test func aConnectionRefusedForWantOfAPlace_exits69_notUnhealthy() throws {
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", #"{"control": {"maxClients": 1}}"#)
        let daemon = try readyDaemon(["--config", config], directory: directory)
        let holder = try RawClient(daemon.defaultSocket)
        try holder.send(#"{"method":"io.weavedi.Daemon.Ping"}"# + "\0")
        try #require(holder.reply()?.contains(#""version""#) == true, "the only place was not taken")
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "health"])
        #expect(run.code == 69, "\(run.all)")
        #expect(run.output.isEmpty, "\(run.all)")
        #expect(run.error.contains(#"io.weavedi.Daemon.LimitExceeded {"limit":"clients","value":1}"#), "\(run.error)")
        #expect(run.error.contains("(control.maxClients: 1; one place in eight, if any, is kept for administrators). Try again once some have closed."),
            "\(run.error)")
    }

    /// A daemon older than `NoSuchTag` answers a tag no check has with no check, healthy, score
    /// 100: weavedictl says nothing was checked, exit 1, and prints nothing on standard output,
    /// as for the refusal (with `--json` neither: that reply would pass a probe that reads it).
    @Test(arguments: [["health"], ["--json", "health"], ["--json", "check"]])
    func aTagThatSelectsNoCheck_onAnOlderDaemon_printsOnlyTheError(command: [String]) throws {
        let nothing = VarlinkReply(parameters: [("health", .object([
            ("status", .string("healthy")), ("score", .int(100)), ("takenAt", .double(1)), ("checks", .array([])),
        ]))])
        let fake = try FakeDaemon(["GetHealth": [nothing], "RunChecks": [nothing]])
        let run = try CtlRun.run(["--socket", fake.socket] + command + ["--tag", "readyness"])
        #expect(run.code == 1, "\(run.all)")
        #expect(run.output == "", "\(run.all)")
        #expect(run.error.hasPrefix(#"weavedictl: no health check has the tag "readyness": nothing was checked"#), "\(run.all)")
    }

    /// Tags the daemon refuses come back shortened, each as a name weavedictl was given is
    /// (its first 57 characters and its length), their control characters escaped.
    @Test func aLongOrHostileTagNoCheckHas_isShortenedAndEscaped() throws {
        let daemon = try readyDaemon()
        let long = String(repeating: "t", count: 1000)
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "health", "--tag", long, "--tag", "a\u{1B}[2Jb"])
        #expect(run.code == 1, "\(run.all)")
        #expect(run.output == "", "\(run.all)")
        let shown = "\"" + String(repeating: "t", count: 57) + "...\" (1000 characters)"
        #expect(run.error.contains(#"NoSuchTag {"tags":[\#(shown),"a\u001b[2Jb"],"known":["liveness","readiness","sync"]}"#), "\(run.error)")
        #expect(run.error.contains(#"No health check has the tags \#(shown), "a\u001b[2Jb"; "#), "\(run.error)")
        #expect(run.error.count < 1000, "\(run.error.count)")
    }
}
