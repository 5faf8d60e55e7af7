import Testing
import WeaveDI
import WeaveDIDaemon
@testable import weavedictl

/// weavedictl's parts that need no daemon: socket discovery, tables, formats, the progress bar.
@Suite struct CtlUnitTests {
    /// `weavedictl fixes` shows a fix's message and its error, the error once when the message
    /// ends with it (a timed-out fix: `fix timed out after 5 s`, error `timed out after 5 s`).
    @Test func fixes_showTheErrorOnce() {
        func fix(_ outcome: String, _ message: String, _ error: String?) -> JSONValue {
            .object([
                ("time", .double(990)), ("check", .string("disk")), ("trigger", .string("manual")), ("outcome", .string(outcome)),
                ("duration", .double(5)), ("message", .string(message)), ("error", error.map(JSONValue.string) ?? .null),
            ])
        }
        let rendered = FixesCommand.render(
            [fix("timedOut", "fix timed out after 5 s", "timed out after 5 s"), fix("failed", "fix failed", "EACCES"),
             fix("succeeded", "cleaned", nil)],
            on: Terminal(isTerminal: false, colors: false), now: 1000)
        let messages = rendered.split(separator: "\n").dropFirst().map { $0.split(separator: "  ").last.map(String.init) ?? "" }
        #expect(messages == ["fix timed out after 5 s", "fix failed: EACCES", "cleaned"], "\(rendered)")
    }

    /// `jobs NAME` with a name no job has lists the jobs there are: quoted, the first 10, each
    /// shortened and escaped as a name weavedictl was given.
    @Test func jobs_noSuchJob_listsTheFirstTenJobs() {
        #expect(JobsCommand.noSuchJob("x", among: []) == #"weavedictl: no job is named "x"; no jobs are configured."#)
        #expect(JobsCommand.noSuchJob("x", among: ["a", "b"]) == #"weavedictl: no job is named "x"; the jobs: "a", "b"."#)
        let many = JobsCommand.noSuchJob("x", among: (1...12).map { "j\($0)" })
        #expect(many.hasSuffix(#""j9", "j10" and 2 more."#), "\(many)")
        let hostile = JobsCommand.noSuchJob("\u{1B}[31m", among: [String(repeating: "n", count: 5000)])
        #expect(!hostile.contains("\u{1B}") && hostile.utf8.count < 300, "\(hostile)")
    }

    @Test func socketDiscovery_followsTheDaemonsOrder() {
        let environment = ["RUNTIME_DIRECTORY": "/r/one:/r/two", "XDG_RUNTIME_DIR": "/x"]
        #expect(SocketLocation.candidates(environment: environment, workingDirectory: "/w") == [
            "/r/one/control.sock", "/x/weavedi/control.sock", "/w/.weavedi/run/control.sock", "/run/weavedi/control.sock",
        ])
        let second = SocketLocation.locate(explicit: nil, environment: environment, workingDirectory: "/w") { $0.hasPrefix("/x/") }
        #expect(second.path == "/x/weavedi/control.sock" && second.origin == .discovered)
        let none = SocketLocation.locate(explicit: nil, environment: environment, workingDirectory: "/w") { _ in false }
        #expect(none.path == "/run/weavedi/control.sock")
        let relative = SocketLocation.candidates(environment: ["RUNTIME_DIRECTORY": "run", "XDG_RUNTIME_DIR": ""], workingDirectory: "/w")
        #expect(relative == ["/w/.weavedi/run/control.sock", "/run/weavedi/control.sock"])
    }

    /// The health summary's age of the results: from the checks' last runs, the oldest and the
    /// newest, and how many never ran.
    @Test func healthAge_spansTheChecksLastRuns() {
        func check(_ lastRun: Double?) -> JSONValue { .object([("name", .string("c")), ("lastRun", lastRun.map(JSONValue.double) ?? .null)]) }
        #expect(HealthTable.age(of: [check(990), check(960)], now: 1000) == ", checked 10.0 s to 40.0 s ago")
        #expect(HealthTable.age(of: [check(990), check(990)], now: 1000) == ", checked 10.0 s ago")
        #expect(HealthTable.age(of: [check(990), check(nil), check(nil)], now: 1000) == ", 1 checked 10.0 s ago, 2 not yet")
        #expect(HealthTable.age(of: [check(nil)], now: 1000) == ", none checked yet")
        #expect(HealthTable.age(of: [], now: 1000) == "")
    }

    @Test func socketDiscovery_optionBeatsEnvironmentBeatsDiscovery() {
        let environment = ["WEAVEDI_SOCKET": "/e.sock", "RUNTIME_DIRECTORY": "/r"]
        #expect(SocketLocation.locate(explicit: "/o.sock", environment: environment, workingDirectory: "/w") { _ in true }.path == "/o.sock")
        #expect(SocketLocation.locate(explicit: nil, environment: environment, workingDirectory: "/w") { _ in true }.path == "/e.sock")
        #expect(SocketLocation.locate(explicit: nil, environment: ["WEAVEDI_SOCKET": ""], workingDirectory: "/w") { _ in true }.origin == .discovered)
    }

    /// A reload applies control.adminUsers and control.adminGroups from the next call on, so
    /// the hint asks for a reload, not for a restart that would stop the jobs under way.
    @Test func permissionDenied_hintAsksForAReload_notARestart() {
        let message = CtlError.permissionDenied(method: "io.weavedi.Daemon.RunJob", uid: 1000).message
        #expect(message.contains("control.adminUsers") && message.contains("weavedictl reload"), "\(message)")
        #expect(!message.contains("restart weavedid"), "\(message)")
    }

    @Test func table_alignsColumnsAndKeepsColourOutOfTheWidths() {
        var table = Table(["NAME", "N", "NOTE"], rightAligned: [1])
        table.append([Table.Cell("a", .green), "10", "x"])
        table.append(["long-name", "7", ""])
        #expect(table.render(on: Terminal(isTerminal: false, colors: false)) == "NAME        N  NOTE\na          10  x\nlong-name   7\n")
        let coloured = table.render(on: Terminal(isTerminal: true, colors: true))
        #expect(coloured.contains("\n\u{1B}[32ma\u{1B}[0m          10  x\n"))
    }

    /// A name in Chinese or with an emoji takes two columns per character on a terminal: the
    /// columns after it stay aligned; a combining accent or a zero-width space takes none.
    @Test func table_alignsWideAndZeroWidthCharactersByTheirColumns() {
        var table = Table(["CHECK", "STATUS"])
        table.append(["数据库", "ok"])
        table.append(["disk 💾", "ok"])
        table.append(["cafe\u{301}\u{200B}", "ok"])
        table.append(["a", "ok"])
        #expect(table.render(on: Terminal(isTerminal: false, colors: false)) == """
            CHECK    STATUS
            数据库   ok
            disk 💾  ok
            café\u{200B}     ok
            a        ok

            """)
        #expect(DisplayWidth.of("ｗｉｄｅ") == 8 && DisplayWidth.of("한국어") == 6 && DisplayWidth.of("❤\u{FE0F}x") == 3)
        #expect(DisplayWidth.of("❤x") == 2 && DisplayWidth.of("e\u{301}") == 1 && DisplayWidth.of("\u{200D}") == 0)
    }

    @Test func colour_onlyOnATerminal_withoutNoColorOrJSON() {
        let options = GlobalOptions()
        #expect(options.usesColor(environment: [:], isTerminal: true))
        #expect(!options.usesColor(environment: [:], isTerminal: false))
        #expect(!options.usesColor(environment: ["NO_COLOR": "1"], isTerminal: true))
        #expect(options.usesColor(environment: ["NO_COLOR": ""], isTerminal: true))
        #expect(!options.usesColor(environment: ["TERM": "dumb"], isTerminal: true))
        #expect(!GlobalOptions(json: true).usesColor(environment: [:], isTerminal: true))
        #expect(!GlobalOptions(noColor: true).usesColor(environment: [:], isTerminal: true))
    }

    /// The help names both variables that turn colour off, as `usesColor` reads both.
    @Test func help_namesEveryVariableThatTurnsColourOff() {
        #expect(GlobalOptions.help.contains("NO_COLOR=1") && GlobalOptions.help.contains("TERM=dumb"), "\(GlobalOptions.help)")
    }

    @Test func formats_readLikeText() {
        #expect(Format.fixed(2.25, digits: 1) == "2.3" && Format.fixed(-0.04) == "0.0" && Format.fixed(3, digits: 2) == "3.00")
        #expect(Format.duration(0.0042) == "4 ms" && Format.duration(4.25) == "4.3 s")
        #expect(Format.duration(184) == "3m 04s" && Format.duration(7500) == "2h 05m" && Format.duration(273_600) == "3d 04h")
        #expect(Format.bytes(512) == "512 B" && Format.bytes(1536) == "1.5 KiB" && Format.bytes(3 * 1024 * 1024) == "3.0 MiB")
        #expect(Format.ago(nil) == "never" && Format.ago(100, now: 112) == "12.0 s ago")
    }

    @Test func progressBar_redrawsInPlaceOnATerminal_andPrintsLinesElsewhere() {
        let progress = JSONValue.object([
            ("filesDone", .int(3)), ("filesTotal", .int(10)), ("bytesDone", .int(1536)), ("bytesTotal", .int(5120)),
        ])
        let bar = ProgressBar(width: 10)
        #expect(bar.update(progress, isTerminal: true) == "\r[###.......]  30%  3/10 files  1.5 KiB / 5.0 KiB\u{1B}[K")
        #expect(bar.update(progress, isTerminal: false) == "progress: 3/10 files, 1.5 KiB / 5.0 KiB (30%)\n")
        let failed = JSONValue.object([
            ("filesDone", .int(3)), ("filesFailed", .int(2)), ("filesTotal", .int(10)), ("bytesDone", .int(1536)), ("bytesTotal", .int(5120)),
        ])
        #expect(bar.update(failed, isTerminal: true) == "\r[###.......]  30%  3/10 files (2 failed)  1.5 KiB / 5.0 KiB\u{1B}[K")
        #expect(bar.update(failed, isTerminal: false) == "progress: 3/10 files (2 failed), 1.5 KiB / 5.0 KiB (30%)\n")
        let noBytes = JSONValue.object([("filesDone", .int(1)), ("filesTotal", .int(4)), ("bytesDone", .int(0)), ("bytesTotal", .int(0))])
        #expect(ProgressBar.fraction(noBytes) == 0.25)
        // Every byte done, a file not (its name failed in the walk): never 100 %.
        let short = JSONValue.object([
            ("filesDone", .int(9)), ("filesFailed", .int(1)), ("filesTotal", .int(10)), ("bytesDone", .int(5120)), ("bytesTotal", .int(5120)),
        ])
        #expect(bar.update(short, isTerminal: false) == "progress: 9/10 files (1 failed), 5.0 KiB / 5.0 KiB (99%)\n")
        let whole = JSONValue.object([("filesDone", .int(10)), ("filesTotal", .int(10)), ("bytesDone", .int(5120)), ("bytesTotal", .int(5120))])
        #expect(bar.update(whole, isTerminal: false) == "progress: 10/10 files, 5.0 KiB / 5.0 KiB (100%)\n")
        // Files skipped (changed while being copied) are said so: done, but not copied.
        let skipped = JSONValue.object([
            ("filesDone", .int(9)), ("filesSkipped", .int(2)), ("filesFailed", .int(1)), ("filesTotal", .int(10)),
            ("bytesDone", .int(5120)), ("bytesTotal", .int(5120)),
        ])
        #expect(bar.update(skipped, isTerminal: false) == "progress: 9/10 files (1 failed, 2 skipped), 5.0 KiB / 5.0 KiB (99%)\n")
    }

    /// A reply's integer may be written with a fraction or an exponent; a number no Double
    /// holds exactly (`1e-400`), or with a fraction, is no integer.
    @Test func aReplysInteger_writtenAsAFloat_isRead_butNoOtherNumber() throws {
        let reply = try JSONValue.parse(Array(#"{"a":812.0,"b":8.12e2,"c":-0.0,"d":1e-400,"e":0.5,"f":1e300,"g":7}"#.utf8))
        #expect(reply.int("a") == 812 && reply.int("b") == 812 && reply.int("c") == 0 && reply.int("g") == 7)
        #expect(reply.int("d") == nil && reply.int("e") == nil && reply.int("f") == nil)
    }

    @Test func argumentReader_splitsOptionsValuesAndArguments() throws {
        var reader = ArgumentReader(["--tag=a", "--tag", "b", "x", "--", "--json"])
        #expect(reader.next() == .option("--tag", value: "a"))
        #expect(reader.next() == .option("--tag", value: nil))
        #expect(try reader.value(of: "--tag", inline: nil) == "b")
        #expect(reader.next() == .argument("x"))
        #expect(reader.next() == .argument("--json"))
        #expect(reader.next() == nil)
        #expect(ArgumentReader.asksForHelp(["a", "-h"]) && !ArgumentReader.asksForHelp(["--", "--help"]))
    }

    @Test func diagnoseComponents_onlineIssues_getTheDocumentedMemberOrder() {
        let issue = JSONValue.object([
            ("type", .string("Store")), ("kind", .string("duplicateProvider")),
            ("providers", .array([.string("a"), .string("b")])), ("detail", .string("provided by 2 modules")),
        ])
        #expect(DiagnoseComponentsCommand.documented([issue]).serialized
            == #"{"issues":[{"type":"Store","providers":["a","b"],"detail":"provided by 2 modules","kind":"duplicateProvider"}]}"#)
    }

    @Test func runJob_summary_namesTheResultAndFigures() {
        let run = JSONValue.object([
            ("id", .string("docs-3")), ("result", .string("success")), ("duration", .double(1.5)), ("filesCopied", .int(3)), ("filesUpdated", .int(1)),
            ("filesDeleted", .int(0)), ("filesSkipped", .int(9)), ("errors", .int(0)), ("bytes", .int(2048)), ("message", .null),
        ])
        #expect(RunJobCommand.summary(run, job: "docs", on: Terminal(isTerminal: false, colors: false))
            == "job docs: run docs-3 success in 1.5 s (copied 3, updated 1, deleted 0, skipped 9, errors 0, 2.0 KiB)")
    }
}
