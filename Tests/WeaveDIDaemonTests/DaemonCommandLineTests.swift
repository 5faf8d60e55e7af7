import Foundation
import Testing
import WeaveDIDaemon
import WeaveDIPosix

@Suite struct DaemonCommandLineTests {
    func run(_ arguments: [String]) throws -> SubprocessResult {
        try Subprocess.run(DaemonProcess.binary, arguments: arguments, environment: ["PATH": "/usr/bin:/bin"])
    }

    @Test func version_andHelp() throws {
        let version = try run(["--version"])
        #expect(version.status == .exited(0))
        #expect(version.standardOutputText == "weavedid \(DaemonVersion.current)\n")
        let help = try run(["--help"])
        #expect(help.status == .exited(0))
        #expect(help.standardOutputText.hasPrefix("usage: weavedid [--config PATH] [--check-config] [--version] [--help]"))
    }

    /// A `--config` path past 4,096 characters is cut in the error as every path a message
    /// shows is: its first 4,093, `...` and its length.
    @Test func aConfigPathPast4096Characters_isCutInTheError() throws {
        let path = "/" + String(repeating: "c", count: 4999) + "\u{1B}"
        let result = try run(["--check-config", "--config", path])
        #expect(result.status == .exited(78))
        #expect(result.standardErrorText
            == "weavedid: /\(String(repeating: "c", count: 4092))... (5001 characters): cannot read: File name too long (ENAMETOOLONG)\n")
    }

    /// What was asked for that standard output does not take (`> /dev/full`) is no success:
    /// exit 74, said on standard error, for the version, the help and a configuration check.
    @Test(arguments: [["--version"], ["--help"], ["--check-config", "--config", "/dev/null/none"]])
    func whatStandardOutputDoesNotTake_exits74(arguments: [String]) throws {
        let directory = TemporaryDirectory("weavedid-full")
        let config = directory.write("c.json", "{}")
        let given = arguments.map { $0 == "/dev/null/none" ? config : $0 }
        let result = try Subprocess.run(
            "/bin/sh", arguments: ["-c", #"exec "$@" > /dev/full"#, "sh", DaemonProcess.binary] + given,
            environment: ["PATH": "/usr/bin:/bin"])
        #expect(result.status == .exited(74), "\(result.standardErrorText)")
        #expect(result.standardErrorText.hasPrefix("weavedid: cannot write to standard output: "), "\(result.standardErrorText)")
    }

    /// The help names every exit status of --check-config (75 when a mount does not answer,
    /// not only 0 and 78) and the variable that decides where the default socket goes.
    @Test func help_namesCheckConfigsStatuses_andWhereTheDefaultSocketGoes() throws {
        let help = try run(["--help"]).standardOutputText
        #expect(help.contains("0 when valid, 78 when not, 75 when a file system"), "\(help)")
        #expect(help.contains("XDG_RUNTIME_DIR") && help.contains("./.weavedi/run/control.sock"), "\(help)")
    }

    /// The help names the environment variables an operator sets or systemd does, JOURNAL_STREAM
    /// (which changes every log line's shape) among them.
    @Test func help_namesTheEnvironmentVariablesRead() throws {
        let help = try run(["--help"]).standardOutputText
        for name in ["WEAVEDID_LOG", "WEAVEDI_LOG_LEVEL", "WEAVEDI_REGISTRY_", "NOTIFY_SOCKET", "WATCHDOG_USEC", "LISTEN_FDS",
                     "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "JOURNAL_STREAM"] {
            #expect(help.contains(name), "\(name) is not in the help: \(help)")
        }
    }

    @Test(arguments: [
        ["--bogus"], ["--config"], ["--config="], ["extra"],
        ["--config", "/a.json", "--config", "/b.json"], ["--config=/a.json", "--check-config", "--config", "/a.json"],
    ])
    func usageMistakes_exit64_withTheUsage(arguments: [String]) throws {
        let result = try run(arguments)
        #expect(result.status == .exited(64))
        #expect(result.standardErrorText.hasPrefix("weavedid: "))
        #expect(result.standardErrorText.contains("usage: weavedid"))
    }

    /// A usage mistake gets the problem, the one-line usage and where the help is, as
    /// weavedictl does, not the whole help.
    @Test func aUsageMistake_printsTheProblemAndAShortUsage_notTheWholeHelp() throws {
        let result = try run(["--bogus"])
        #expect(result.status == .exited(64))
        #expect(result.standardErrorText == """
            weavedid: unknown argument "--bogus"
            usage: weavedid [--config PATH] [--check-config] [--version] [--help]
            Run `weavedid --help` for more.

            """, "\(result.standardErrorText)")
        #expect(result.standardOutputText.isEmpty)
        // An argument from outside reaches the terminal escaped, and cut past 60 characters.
        let hostile = try run(["\u{1B}]0;owned\u{07}\u{202E}x"])
        #expect(hostile.status == .exited(64))
        #expect(hostile.standardErrorText.hasPrefix(#"weavedid: unknown argument "\u001b]0;owned\u0007\u202ex""# + "\n"),
            "\(hostile.standardErrorText)")
        let long = try run([String(repeating: "a", count: 5000)])
        #expect(long.standardErrorText.hasPrefix("weavedid: unknown argument \"\(String(repeating: "a", count: 57))...\" (5000 characters)\n"),
            "\(long.standardErrorText)")
    }

    /// A `--config` path that is not valid UTF-8 cannot be held as text without turning into
    /// another path (`c\xFF.json` into `c\u{FFFD}.json`): it is refused, exit 64, instead of
    /// checking or loading whatever file the other path names.
    @Test func anArgumentThatIsNotUTF8_exits64_insteadOfNamingAnotherFile() throws {
        let directory = TemporaryDirectory("weavedid-utf8")
        _ = directory.write("c\u{FFFD}.json", "{}")  // what the argument would be repaired into
        let result = try Subprocess.run(
            "/bin/sh", arguments: ["-c", #"cd "$1" && exec "$0" --check-config --config "$(printf 'c\377.json')""#, DaemonProcess.binary, directory.path],
            environment: ["PATH": "/usr/bin:/bin"])
        #expect(result.status == .exited(64), "\(result.standardOutputText)\(result.standardErrorText)")
        #expect(result.standardErrorText.hasPrefix(
            #"weavedid: argument 3 ("c\u{FFFD}.json" as text) is not valid UTF-8, and text would turn it into another path"#),
            "\(result.standardErrorText)")
        // As any usage error: the synopsis and where the help is, not the whole help.
        #expect(result.standardErrorText.hasSuffix("directory, whose name is UTF-8\n" + CommandLineOptions.usageHint + "\n"),
            "\(result.standardErrorText)")
        #expect(!result.standardOutputText.contains("configuration OK"))
    }

    /// An option where `--config`'s path belongs is the path forgotten, not a path: refused
    /// (64), rather than checking or starting on a file named after the option (`--config
    /// --check-config` would start the daemon instead of checking), as weavedictl refuses it.
    @Test(arguments: [
        (["--config", "--check-config"], "--check-config"), (["--check-config", "--config", "--version"], "--version"),
        (["--config", "--help"], "--help"), (["--config", "--x.json", "--check-config"], "--x.json"),
    ])
    func anOptionWhereConfigsPathBelongs_exits64(arguments: [String], taken: String) throws {
        let directory = TemporaryDirectory("weavedid-option-value")
        // A file by that name in the working directory: it must be neither read nor checked.
        _ = directory.write(taken, "{}")
        // Within a time limit: a daemon started by mistake would not end by itself.
        let result = try Subprocess.run(
            "/bin/sh", arguments: ["-c", #"cd "$1" && shift && exec timeout 30 "$@""#, "sh", directory.path, DaemonProcess.binary] + arguments,
            environment: ["PATH": "/usr/bin:/bin", "RUNTIME_DIRECTORY": directory.path + "/run", "STATE_DIRECTORY": directory.path + "/state"])
        #expect(result.status == .exited(64), "\(result.standardOutputText)\(result.standardErrorText)")
        #expect(result.standardErrorText == """
            weavedid: --config needs a path; got the option "\(taken)" (a path starting with -- must be written "./\(taken)" or "--config=\(taken)")
            \(CommandLineOptions.usageHint)

            """, "\(result.standardErrorText)")
        #expect(result.standardOutputText.isEmpty)
        #expect(!fileExists(directory.path + "/run") && !fileExists(directory.path + "/state"))
        // Written as the message says, the path is taken.
        for written in ["./\(taken)", "--config=\(taken)"] {
            let given = written.hasPrefix("--config=") ? [written] : ["--config", written]
            let checked = try Subprocess.run(
                "/bin/sh", arguments: ["-c", #"cd "$1" && shift && exec timeout 30 "$@""#, "sh", directory.path, DaemonProcess.binary]
                    + given + ["--check-config"],
                environment: ["PATH": "/usr/bin:/bin", "RUNTIME_DIRECTORY": directory.path + "/run", "STATE_DIRECTORY": directory.path + "/state"])
            #expect(checked.status == .exited(0), "\(checked.standardErrorText)")
            #expect(checked.standardOutputText.hasPrefix("weavedid: configuration OK"), "\(checked.standardOutputText)")
        }
    }

    @Test func parsing() throws {
        #expect(try CommandLineOptions.parse(["--config", "/x.json", "--check-config"]).get()
            == CommandLineOptions(configPath: "/x.json", checkConfig: true))
        #expect(try CommandLineOptions.parse(["--config=/y.json"]).get().configPath == "/y.json")
        #expect(throws: CommandLineOptions.UsageError.self) { try CommandLineOptions.parse(["-x"]).get() }
        // The last one is not taken silently over the first.
        guard case let .failure(twice) = CommandLineOptions.parse(["--config", "/x.json", "--config=/y\u{1B}.json"]) else {
            Issue.record("a second --config was taken")
            return
        }
        // Quoted as weavedictl quotes a repeated option's values: a quote inside is escaped,
        // so the two values are told apart.
        #expect(twice.description == #"--config given twice ("/x.json", then "/y\u001b.json"); give it once"#)
        guard case let .failure(quoted) = CommandLineOptions.parse(["--config=/a\", then \"/b.json", "--config", "/c.json"]) else {
            Issue.record("a second --config was taken")
            return
        }
        #expect(quoted.description == #"--config given twice ("/a\", then \"/b.json", then "/c.json"); give it once"#)
    }

    /// The ready line names the socket quoted as every path from outside is (a space or a
    /// quote in it cannot blur where it ends), and its command works when pasted into a shell:
    /// a socket path with a space or a quote is quoted for one.
    @Test func readyLine_quotesTheSocketPath_asAPathAndForAShell() throws {
        let directory = TemporaryDirectory()
        let socket = directory.path + "/run dir's \"q\"/control.sock"
        let config = directory.write("weavedid.json", #"{"control": {"socket": "\#(directory.path)/run dir's \"q\"/control.sock"}, "sync": {"jobs": []}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let quoted = "'" + directory.path + "/run dir'\\''s \"q\"/control.sock'"
        #expect(daemon.log.contains(#"ready; control socket "\#(directory.path)/run dir's \"q\"/control.sock" (talk to it: "#
            + "weavedictl --socket \(quoted) health)"), "\(daemon.log)")
        #expect(fileExists(socket))
    }

    @Test func shellWord_quotesOnlyWhatAShellWouldRead() {
        #expect("/run/weavedi/control.sock".shellWord == "/run/weavedi/control.sock")
        #expect("./.weavedi/run/a_b-c@d%e+f=g:h,i".shellWord == "./.weavedi/run/a_b-c@d%e+f=g:h,i")
        #expect("/tmp/$HOME/`x`/*".shellWord == "'/tmp/$HOME/`x`/*'")
        #expect("/tmp/it's".shellWord == #"'/tmp/it'\''s'"#)
        #expect("".shellWord == "''")
        #expect("/tmp/é".shellWord == "'/tmp/é'")
    }
}

@Suite struct LogFilterTests {
    @Test func longestPrefixWins_andOffSilences() throws {
        let filter = try LogFilter.parse("info,sync=debug,sync.worker=off,control=trace").get()
        #expect(filter.level(for: "daemon") == .info)
        #expect(filter.level(for: "sync") == .debug)
        #expect(filter.level(for: "sync.scheduler") == .debug)
        #expect(filter.level(for: "sync.worker") == .off)
        #expect(filter.level(for: "synchronous") == .info)  // a prefix only at a dot
        #expect(filter.admits(.trace, subsystem: "control"))
        #expect(!filter.admits(.debug, subsystem: "daemon"))
        #expect(!filter.admits(.error, subsystem: "sync.worker"))
        let most = (0..<63).map { "s\($0)=debug" }.joined(separator: ",") + ",info"
        #expect((try? LogFilter.parse(most).get())?.overrides.count == 63)
    }

    @Test(arguments: [
        ("loud", "\"loud\": unknown level \"loud\""), ("info,sync=\u{1B}[2J\u{202E}", #""sync=\u001b[2J\u202e": unknown level "\u001b[2J\u202e""#), ("info,,debug", "\"\": empty entry"),
        ("info,debug", "\"debug\": a second default level"), ("=debug", "\"=debug\": a subsystem name is letters, digits, '.', '_' or '-'"),
        ("sync=debug,info,sync=trace", "\"sync=trace\": a second level for \"sync\""),
        ("sync=" + String(repeating: "x", count: 100),
         "\"sync=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\" (105 characters): unknown level \"\(String(repeating: "x", count: 57))...\" (100 characters)"),
        (Array(repeating: "a=info", count: 65).joined(separator: ","),
         "\"a=info,a=info,a=info,a=info,a=info,a=info,a=info,a=info,a...\" (454 characters): 65 entries; at most 64"),
    ])
    func badValues_sayWhatIsWrong(text: String, problem: String) {
        #expect(LogFilter.parse(text).failureText == problem)
    }
}

@Suite struct SystemdEnvironmentTests {
    @Test func watchdog_halfTheInterval_onlyForThisProcess() {
        #expect(WatchdogSettings(environment: ["WATCHDOG_USEC": "30000000"], pid: 5)?.pingInterval == .seconds(15))
        #expect(WatchdogSettings(environment: ["WATCHDOG_USEC": "1000", "WATCHDOG_PID": "5"], pid: 5) != nil)
        #expect(WatchdogSettings(environment: ["WATCHDOG_USEC": "1000", "WATCHDOG_PID": "6"], pid: 5) == nil)
        #expect(WatchdogSettings(environment: ["WATCHDOG_USEC": "0"], pid: 5) == nil)
        #expect(WatchdogSettings(environment: [:], pid: 5) == nil)
    }

    /// Pings go out every half of `WATCHDOG_USEC`, but never more often than every 10 ms; the
    /// values that make no sense are said to.
    @Test func watchdog_pingIntervalHasAFloor_andOddValuesAreWarned() {
        func settings(_ usec: String) -> WatchdogSettings? { WatchdogSettings(environment: ["WATCHDOG_USEC": usec], pid: 5) }
        func problem(_ usec: String, owner: String? = nil) -> String? {
            WatchdogSettings.problem(environment: ["WATCHDOG_USEC": usec, "WATCHDOG_PID": owner ?? ""], pid: 5)
        }
        #expect(settings("1")?.pingInterval == .milliseconds(10))
        #expect(settings("100")?.pingInterval == .milliseconds(10))
        #expect(settings("19999")?.pingInterval == .milliseconds(10))
        #expect(settings("20000")?.pingInterval == .milliseconds(10))
        #expect(settings("100000")?.pingInterval == .milliseconds(50))
        #expect(problem("30000000") == nil)
        #expect(problem("20000") == nil)
        #expect(problem("19999")?.hasPrefix("WATCHDOG_USEC=19999 (19999 µs) is shorter than the daemon can ping within: pinging every 0.01 seconds") == true)
        #expect(problem("1", owner: "6") == nil)  // another process's
        #expect(problem("") == nil)
        #expect(problem("30s") == #"WATCHDOG_USEC="30s" is not a number of microseconds; no watchdog pings"#)
        #expect(problem("-5") == #"WATCHDOG_USEC="-5" is not a number of microseconds; no watchdog pings"#)
        #expect(problem("0") == "WATCHDOG_USEC=0 asks for no watchdog; no watchdog pings")
    }

    /// A `WATCHDOG_PID` that is no process id leaves the watchdog off, as `sd_watchdog_enabled(3)`
    /// fails then, and says so: systemd, expecting pings, would stop the daemon without a word.
    @Test func watchdog_anOwnerThatIsNoProcessID_isWarned() {
        for owner in ["abc", "-5", "0", "5x", "99999999999"] {
            let environment = ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": owner]
            #expect(WatchdogSettings(environment: environment, pid: 5) == nil)
            #expect(WatchdogSettings.problem(environment: environment, pid: 5)
                == "WATCHDOG_PID=\"\(owner)\" is not a process id; it names the process WATCHDOG_USEC is for: no watchdog pings")
        }
        #expect(WatchdogSettings.problem(environment: ["WATCHDOG_PID": "abc"], pid: 5) == nil)  // no watchdog asked for
        #expect(WatchdogSettings.problem(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "6"], pid: 5) == nil)
    }

    @Test func notifySocket_pathAbstractOrNothing() {
        #expect(SystemdNotifier(environment: [:]).isEnabled == false)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]).isEnabled == false)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "@abc"]).address?.kind == .abstract)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/run/systemd/notify"]).address?.kind == .path)
        let tooLong = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/" + String(repeating: "x", count: 200)])
        #expect(!tooLong.isEnabled)
        #expect(tooLong.problem?.hasPrefix(#"NOTIFY_SOCKET="/xxx"#) == true)
    }
}

extension Result {
    var failureText: String? {
        if case let .failure(error) = self { return "\(error)" }
        return nil
    }
}
