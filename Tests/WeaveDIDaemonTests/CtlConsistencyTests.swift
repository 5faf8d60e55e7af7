import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix
@testable import weavedictl

/// What weavedictl says agrees with itself, the README and the daemon: one rule and one message
/// for a value, help texts that say the same things the same way, replies checked as replies.
@Suite struct CtlConsistencyTests {
    /// Every subcommand's help says which varlink method it calls and ends its description
    /// with an `Exit status:` paragraph; `help` reads global options and ignores them.
    @Test(arguments: ctlSubcommands)
    func everyHelp_namesItsMethod_andItsExitStatus(name: String) throws {
        let run = try CtlRun.run([name, "--help"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.contains("\nCalls io.weavedi.Daemon."), "\(name): \(run.output)")
        #expect(run.output.contains("\n\nExit status: "), "\(name): \(run.output)")
        for arguments in [["help", "--json", name], ["help", name, "--no-color"], ["--json", "help", "--timeout", "5", name]] {
            let help = try CtlRun.run(arguments)
            #expect(help.code == 0 && help.error.isEmpty && help.output == run.output, "\(arguments): \(help.all)")
        }
    }

    /// `weavedictl --help` sums up the exit statuses: every status a subcommand's help names
    /// (0, 1 and the sysexits 64 to 78) is among them.
    @Test func theTopLevelHelp_namesEveryExitStatusASubcommandHas() throws {
        func statuses(_ help: String) -> Set<Int> {
            guard let paragraph = help.range(of: "Exit status:").map({ help[$0.upperBound...] }) else { return [] }
            let numbers = paragraph.split { !$0.isNumber }.compactMap { Int($0) }
            return Set(numbers.filter { $0 <= 1 || (64...78).contains($0) })
        }
        let top = try CtlRun.run(["--help"])
        let summed = statuses(top.output)
        #expect(summed.isSuperset(of: [0, 1, 64, 69]), "\(top.output)")
        for name in ctlSubcommands {
            let missing = statuses(try CtlRun.run([name, "--help"]).output).subtracting(summed)
            #expect(missing.isEmpty, "\(name) --help names exit status \(missing.sorted()), weavedictl --help does not: \(top.output)")
        }
    }

    @Test func helpTexts_sayWhatTheREADMESays() throws {
        let pause = try CtlRun.run(["pause-job", "--help"])
        #expect(!pause.output.contains("schedules it again") && pause.output.contains("across restarts of the"), "\(pause.output)")
        for name in ["health", "check"] {
            let run = try CtlRun.run([name, "--help"])
            #expect(run.output.contains("--tag TAG   only the checks with this tag (repeatable"), "\(name): \(run.output)")
        }
        let logLevel = try CtlRun.run(["log-level", "--help"])
        #expect(logLevel.output.contains("Calls io.weavedi.Daemon.GetLogLevel, or io.weavedi.Daemon.SetLogLevel with LEVEL or --filter."))
        #expect(logLevel.output.contains("77 when\n            changing without the rights.".replacingOccurrences(of: "            ", with: "")) ||
            logLevel.output.contains("77 when changing without the rights"), "\(logLevel.output)")
        let jobs = try CtlRun.run(["jobs", "--help"])
        #expect(jobs.output.contains("Exit status: 0 when the jobs, or job NAME, are shown; 1 when"), "\(jobs.output)")
        let version = try CtlRun.run(["version", "--help"])
        #expect(version.output.contains("if the daemon answers, the daemon's version"), "\(version.output)")
        // A mistake in a global option given to `help` is still one.
        let wrong = try CtlRun.run(["help", "--timeout", "x", "ping"])
        #expect(wrong.code == 64 && wrong.error.hasPrefix("weavedictl: --timeout needs a number of seconds"), "\(wrong.all)")
    }

    /// `--limit`: one rule (decimal digits, 1 to 500) and one message naming the range, for a
    /// zero, a number too large for an integer, one over the range and a signed one alike; the
    /// daemon is not asked.
    @Test(arguments: ["0", "99999999999999999999", "501", "+3", "-1", "3x", "1000000"])
    func aLimitOutsideTheRange_isOneUsageError_namingTheRange(value: String) throws {
        let fake = try FakeDaemon(["ListFixes": [VarlinkReply(parameters: [("fixes", .array([]))])]])
        let run = try CtlRun.run(["--socket", fake.socket, "fixes", "--limit", value])
        #expect(run.code == 64, "\(run.all)")
        #expect(run.error.hasPrefix(
            "weavedictl fixes: --limit needs a whole number from 1 to 500, in decimal digits (no sign); got '\(value)'\n"), "\(run.error)")
        #expect(fake.calls.isEmpty, "\(fake.calls)")
    }

    /// `run-job --wait` waits for the daemon's first answer as for any call (30 s by default):
    /// a daemon that never answers costs that, not a wait for ever (the run is followed without
    /// a limit only once it has been answered for).
    @Test func runJobWait_givesUpOnADaemonThatNeverAnswers_afterTheStandardTimeout() throws {
        let fake = try FakeDaemon(raw: ["RunJob": []])
        let run = try CtlRun.run(["--socket", fake.socket, "run-job", "docs", "--wait"], timeout: .seconds(90))
        #expect(run.code == 69, "\(run.all)")
        #expect(run.error.contains("no reply to io.weavedi.Daemon.RunJob from \(fake.socket) within 30 s"), "\(run.all)")
        #expect(fake.calls.map(\.method) == ["io.weavedi.Daemon.RunJob"])
    }

    @Test func aLimitInTheRange_isSent() throws {
        let daemon = try readyDaemon()
        for value in ["1", "500"] {
            let run = try CtlRun.run(["--socket", daemon.defaultSocket, "fixes", "--limit", value])
            #expect(run.code == 0 && run.output == "No fix attempts recorded.\n", "\(value): \(run.all)")
        }
    }

    /// A name that is not valid UTF-8 is no path: it gets no advice about symbolic links.
    @Test func aJobNameThatIsNotUTF8_isSaidToBeAName_notAPath() throws {
        let run = try CtlRun.execute(["/bin/sh", "-c", #"exec "$0" run-job "$(printf 'a\377')""#, CtlRun.binary])
        #expect(run.code == 64, "\(run.all)")
        #expect(run.error.hasPrefix(#"weavedictl: argument 2 ("a\u{FFFD}" as text) is not valid UTF-8; it is a name or a value"#),
            "\(run.error)")
        #expect(!run.error.contains("symbolic link") && !run.error.contains("path;"), "\(run.error)")
        let socket = try CtlRun.execute(["/bin/sh", "-c", #"exec "$0" --socket="$(printf '/tmp/a\377')" ping"#, CtlRun.binary])
        #expect(socket.code == 64 && socket.error.contains("give the path through a symbolic link"), "\(socket.all)")
        #expect(ArgumentReader.isPath(at: 1, of: ["--config", "x"]) && !ArgumentReader.isPath(at: 2, of: ["--", "--socket", "x"]))
    }

    /// A socket found in `$RUNTIME_DIRECTORY` whose path is too long: the message says where it
    /// was found, and the exit status is the usage error's, as for `--socket` and
    /// `WEAVEDI_SOCKET`: only a shorter path given with `--socket` reaches it.
    @Test func aDiscoveredSocketPathTooLong_namesWhereItWasFound_exit64() throws {
        let directory = TemporaryDirectory("weavedictl")
        let runtime = directory.path + "/" + String(repeating: "r", count: 110)
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        _ = directory.write(String(repeating: "r", count: 110) + "/control.sock", "")
        let socket = runtime + "/control.sock"
        let run = try CtlRun.run(["ping"], environment: ["RUNTIME_DIRECTORY": runtime], in: directory)
        #expect(run.code == 64, "\(run.all)")
        #expect(run.error == "weavedictl: the socket path \(socket) (found as $RUNTIME_DIRECTORY/control.sock) is "
            + "\(socket.utf8.count) bytes long, but a Unix socket path may have at most 107 bytes (sun_path); give a shorter "
            + "path to the same socket with --socket PATH, e.g. through a symbolic link to its directory.\n", "\(run.error)")
    }

    /// A Ping reply whose members have the wrong types is no valid reply: exit 69, saying so,
    /// rather than `(pid -, up -)` and exit 0.
    @Test(arguments: [
        (JSONValue.string("x"), JSONValue.double(1), #""pid" must be a positive integer, got string"#),
        (JSONValue.int(7), JSONValue.int(-5), #""uptime" must be a number of seconds, 0 or more, got -5"#),
        (JSONValue.int(0), JSONValue.int(1), #""pid" must be a positive integer, got 0"#),
        (JSONValue.double(812.5), JSONValue.int(1), #""pid" must be a positive integer, got 812.5"#),
    ])
    func aPingReplyOfTheWrongTypes_isNoValidReply_exit69(pid: JSONValue, uptime: JSONValue, reason: String) throws {
        let fake = try FakeDaemon(["Ping": [VarlinkReply(parameters: [("version", .string("9")), ("pid", pid), ("uptime", uptime)])]])
        let run = try CtlRun.run(["--socket", fake.socket, "ping"])
        #expect(run.code == 69 && run.output.isEmpty, "\(run.all)")
        #expect(run.error.hasPrefix(
            "weavedictl: the reply of io.weavedi.Daemon.Ping from \(fake.socket) is not a valid reply to it: \(reason)\n"), "\(run.error)")
        let version = try CtlRun.run(["--socket", fake.socket, "version"])
        #expect(version.code == 0 && version.output.contains("\nweavedid: not reachable (the reply of io.weavedi.Daemon.Ping"),
            "\(version.all)")
        let json = try CtlRun.run(["--socket", fake.socket, "--json", "version"])
        #expect(try json.json()[member: "daemon"] == .null, "\(json.all)")
    }

    /// An integer written with a fraction or an exponent is that integer, as the daemon reads
    /// an integer parameter.
    @Test func aPingReplysIntegerWrittenAsAFloat_isThatInteger() throws {
        let fake = try FakeDaemon(["Ping": [VarlinkReply(parameters: [("version", .string("9")), ("pid", .double(812)), ("uptime", .int(5))])]])
        let run = try CtlRun.run(["--socket", fake.socket, "ping"])
        #expect(run.code == 0 && run.output.contains("(pid 812, up "), "\(run.all)")
    }

    /// A wait is said in decimal digits, never with an exponent.
    @Test func aTimeoutIsSaidWithoutAnExponent() throws {
        #expect(VarlinkClient.ConnectionError.seconds(.nanoseconds(1)) == "0.000000001")
        #expect(VarlinkClient.ConnectionError.seconds(.milliseconds(2500)) == "2.5")
        #expect(VarlinkClient.ConnectionError.seconds(.seconds(30)) == "30")
        let fake = try FakeDaemon(raw: ["Ping": []])
        let run = try CtlRun.run(["--socket", fake.socket, "--timeout", "0.0000000001", "ping"])
        #expect(run.code == 69, "\(run.all)")
        #expect(run.error.hasPrefix("weavedictl: no reply to io.weavedi.Daemon.Ping from \(fake.socket) within 0.000000001 s\n"),
            "\(run.error)")
    }

    /// A daemon that answers a tag no check has with no check (older than `NoSuchTag`) does
    /// not say which tags there are: weavedictl names none in its stead.
    @Test func anOlderDaemonsEmptyAnswerForATag_namesNoTagsItDidNotSay() throws {
        let fake = try FakeDaemon(["GetHealth": [VarlinkReply(parameters: [("health", .health([]))])]])
        let run = try CtlRun.run(["--socket", fake.socket, "health", "--tag", "readyness"])
        #expect(run.code == 1 && run.output.isEmpty, "\(run.all)")
        #expect(run.error == #"weavedictl: no health check has the tag "readyness": nothing was checked "#
            + "(this daemon does not say which tags its checks have; `weavedictl health --json` shows each check's)\n", "\(run.error)")
    }
}

/// The command prefix that runs a program as nobody with root's group (0) as its only group:
/// a user in the group of a socket the daemon (root) made, without being its owner.
let dropToNobodyInRootsGroup: [String]? = {
    guard CurrentProcess.effectiveUserID == 0, (try? UserDatabase.user(named: "nobody")) != nil else { return nil }
    return ["/usr/bin/setpriv", "/bin/setpriv"].first(where: fileExists).map { [$0, "--reuid=65534", "--regid=0", "--clear-groups"] }
}()

@Suite(.enabled(if: dropToNobodyInRootsGroup != nil, "needs root and setpriv"))
struct CtlSocketGroupTests {
    /// A user in the socket's group already, the mode giving the group no write permission:
    /// the advice is the mode (`control.socketMode`), not to join the group.
    @Test func aUserInTheSocketsGroup_withoutGroupWrite_isToldToChangeTheMode() throws {
        let wrapper = try #require(dropToNobodyInRootsGroup)
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let socket = directory.path + "/public/control.sock"
        let config = directory.write("weavedid.json", "{\"control\": {\"socket\": \"\(socket)\", \"socketMode\": \"0640\"}}")
        let daemon = try readyDaemon(["--config", config], directory: directory)
        chmod(directory.path + "/public", 0o755)
        let status = try FileStatus(path: socket, followSymlinks: false)
        try #require(status.groupID == 0 && status.permissions.rawValue & 0o777 == 0o640, "\(status)")
        let run = try CtlRun.run(["--socket", socket, "ping"], wrapper: wrapper)
        #expect(run.code == 77, "\(run.all)")
        #expect(run.error.hasPrefix("weavedictl: cannot connect to \(socket): Permission denied (EACCES)\n"
            + "You are in the socket's group already (uid 65534), but the socket (mode 0640, owner root, group "), "\(run.error)")
        #expect(run.error.contains("gives its group no write permission, which connecting needs: set control.socketMode to \"0660\""),
            "\(run.error)")
        #expect(!run.error.contains("join the group"), "\(run.error)")
        // A user outside the group: joining it would not do either.
        let outside = try #require(dropToNobody)
        let stranger = try CtlRun.run(["--socket", socket, "ping"], wrapper: outside)
        #expect(stranger.code == 77, "\(stranger.all)")
        #expect(stranger.error.contains("gives its group no write permission, which connecting needs, so joining its group would not do either"),
            "\(stranger.error)")
        #expect(stranger.error.contains("set control.socketMode to \"0660\""), "\(stranger.error)")
        #expect(!stranger.error.contains("join the group"), "\(stranger.error)")
        _ = daemon
    }
}
