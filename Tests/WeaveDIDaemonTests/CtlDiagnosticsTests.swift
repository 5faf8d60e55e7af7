import Testing
import WeaveDI
import WeaveDIControl

/// `diagnose-components` and `check-cycles`, online and `--offline`, in the documented shapes.
@Suite struct CtlDiagnosticsTests {
    /// A valid configuration file with every default.
    private func defaultsFile(in directory: TemporaryDirectory) -> String {
        directory.write("weavedid.json", "{}\n")
    }

    @Test func diagnoseComponents_online_json_isTheDocumentedShape() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "diagnose-components", "--json"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output == "{\"issues\":[]}\n")
        let table = try CtlRun.run(["--socket", daemon.defaultSocket, "diagnose-components"])
        #expect(table.code == 0 && table.output == "No issues: no duplicate providers, no scope drift, no scope mismatches.\n")
    }

    @Test func diagnoseComponents_offline_needsNoDaemon_andPrintsTheSameShape() throws {
        let directory = TemporaryDirectory("weavedictl")
        let run = try CtlRun.run(
            ["diagnose-components", "--offline", "--config", defaultsFile(in: directory), "--json"], in: directory)
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output == "{\"issues\":[]}\n")
        #expect(run.error.isEmpty, "the library's registration messages stay quiet: \(run.error)")
    }

    /// With its health loop on (the default), the daemon's first round, before it is ready,
    /// builds every registration (`container.graph`): none is left with unknown dependencies.
    @Test func checkCycles_onlineAndOffline_printTheSameDocumentedJSON() throws {
        let directory = TemporaryDirectory()
        let daemon = try DaemonProcess([], environment: ["WEAVEDI_REGISTRY_AUTO_HEALTH": "1"], directory: directory)
        try #require(daemon.waitForLog("ready;"), "weavedid did not start: \(daemon.log)")
        let online = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "check-cycles"])
        #expect(online.code == 0, "\(online.all)")
        let report = try online.json()
        #expect(memberNames(report) == ["componentCount", "edgeCount", "cycles", "notBuilt"])
        #expect(report[member: "cycles"] == .array([]))
        #expect(report[member: "notBuilt"] == .array([]))
        #expect((report[member: "componentCount"]?.intValue ?? 0) > 5)
        #expect((report[member: "edgeCount"]?.intValue ?? 0) > 0)
        let offline = try CtlRun.run(
            ["check-cycles", "--offline", "--config", defaultsFile(in: daemon.directory), "--json"], in: daemon.directory)
        #expect(offline.code == 0, "\(offline.all)")
        #expect(offline.output == online.output)
    }

    /// With the health loop off nothing builds the registrations no service needs: the daemon
    /// says which, and `check-cycles` does not pass; `weavedictl check` runs `container.graph`,
    /// which builds them, and then it does.
    @Test func checkCycles_online_healthLoopOff_namesTheRegistrationsNeverBuilt_untilTheGraphCheckRuns() throws {
        let daemon = try readyDaemon()
        let socket = daemon.defaultSocket
        let json = try CtlRun.run(["--socket", socket, "--json", "check-cycles"])
        #expect(json.code == 1, "\(json.all)")
        let notBuilt = try json.json()[member: "notBuilt"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(!notBuilt.isEmpty && notBuilt == notBuilt.sorted(), "\(json.all)")
        let table = try CtlRun.run(["--socket", socket, "check-cycles"])
        #expect(table.code == 1)
        let lines = table.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[0].hasSuffix(" dependency edges, no cycles among them."), "\(table.all)")
        // The example job's first run may build its workers between the two calls: the table's
        // names are the JSON's, or fewer of them.
        let said = try #require(lines.last?.firstMatch(of: /^(\d+) registrations? never built, so (?:its|their) dependencies are unknown: (.*) \(the daemon's container.graph check builds every registration once: `weavedictl check` runs it\)$/),
            "\(table.all)")
        let names = said.2.split(separator: ", ").map(String.init)
        #expect(Int(said.1) == names.count && names == names.sorted() && Set(names).isSubset(of: notBuilt), "\(table.all)")
        #expect(names.count == 1 ? lines.last!.contains("1 registration never built, so its") : lines.last!.contains("registrations never built, so their"))

        _ = try CtlRun.run(["--socket", socket, "check"])
        let after = try CtlRun.run(["--socket", socket, "--json", "check-cycles"])
        #expect(after.code == 0, "\(after.all)")
        #expect(try after.json()[member: "notBuilt"] == .array([]))
    }

    @Test func checkCycles_table_summarisesTheGraph() throws {
        let directory = TemporaryDirectory("weavedictl")
        let run = try CtlRun.run(["check-cycles", "--offline", "--config", defaultsFile(in: directory)], in: directory)
        #expect(run.code == 0)
        #expect(run.output.hasSuffix(" dependency edges, no cycles.\n"))
        #expect(run.output.contains(" components, "))
    }

    /// `--offline` reads `WEAVEDI_LOG_LEVEL` as the library does in the daemon: a value that
    /// is no level is said on standard error (quoted, escaped, shortened), not ignored in
    /// silence; a valid one in another case or with spaces around is taken without a word.
    @Test func offline_anInvalidLogLevel_isReported_asTheDaemonReportsIt() throws {
        let directory = TemporaryDirectory("weavedictl")
        let config = defaultsFile(in: directory)
        let loud = try CtlRun.run(
            ["check-cycles", "--offline", "--config", config, "--json"], environment: ["WEAVEDI_LOG_LEVEL": "loud\u{1B}[2J"], in: directory)
        #expect(loud.code == 0, "\(loud.all)")
        #expect(loud.error == #"weavedictl: WEAVEDI_LOG_LEVEL="loud\u001b[2J" is not valid (accepted: all, registration, optimization, errors, off); using errors"# + "\n",
            "\(loud.all)")
        #expect(loud.output.hasPrefix("{\"componentCount\":"), "the diagnosis still runs: \(loud.all)")
        let long = try CtlRun.run(
            ["diagnose-components", "--offline", "--config", config], environment: ["WEAVEDI_LOG_LEVEL": String(repeating: "x", count: 100_000)],
            in: directory)
        #expect(long.error.contains("(100000 characters) is not valid") && long.error.utf8.count < 300, "\(long.error.prefix(400))")
        let valid = try CtlRun.run(
            ["diagnose-components", "--offline", "--config", config], environment: ["WEAVEDI_LOG_LEVEL": " Errors\r\n"], in: directory)
        #expect(valid.code == 0 && valid.error.isEmpty, "\(valid.all)")
        // Empty, it counts as unset, as the library and the daemon count it.
        let empty = try CtlRun.run(
            ["diagnose-components", "--offline", "--config", config], environment: ["WEAVEDI_LOG_LEVEL": ""], in: directory)
        #expect(empty.code == 0 && empty.error.isEmpty, "\(empty.all)")
    }

    @Test func offline_invalidConfiguration_exits78WithTheLoadersMessage() throws {
        let directory = TemporaryDirectory("weavedictl")
        let file = directory.write("bad.json", "{\"control\": {\"maxClients\": -3}}")
        let run = try CtlRun.run(["diagnose-components", "--offline", "--config", file], in: directory)
        #expect(run.code == 78)
        #expect(run.error.contains("\(file): control.maxClients: expected an integer from 1 to 4096, got -3"))
        #expect(run.output.isEmpty)
        let missing = try CtlRun.run(["check-cycles", "--offline", "--config", directory.path + "/none.json"], in: directory)
        #expect(missing.code == 78)
        #expect(missing.error.contains("none.json: cannot read: No such file or directory (ENOENT)"))
    }

    @Test func config_withoutOffline_isAUsageError() throws {
        let run = try CtlRun.run(["diagnose-components", "--config", "/etc/weavedi/weavedid.json"])
        #expect(run.code == 64)
        #expect(run.error.contains("--config only applies with --offline"))
        #expect(run.error.contains("usage: weavedictl [--socket PATH] [--timeout SECONDS] [--json] [--no-color] diagnose-components"))
    }
}
