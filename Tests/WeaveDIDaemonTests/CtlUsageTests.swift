import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Command-line mistakes, `--help`, and how weavedictl finds the socket.
@Suite struct CtlUsageTests {
    @Test(arguments: ctlSubcommands)
    func subcommandHelp_exitsZeroWithItsUsage(name: String) throws {
        let run = try CtlRun.run([name, "--help"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.hasPrefix("usage: weavedictl [--socket PATH] [--timeout SECONDS] [--json] [--no-color] \(name)"))
        #expect(run.output.contains("Global options"))
        let short = try CtlRun.run(["help", name])
        #expect(short.code == 0 && short.output == run.output)
    }

    @Test func rootHelp_listsEverySubcommand() throws {
        let run = try CtlRun.run(["--help"])
        #expect(run.code == 0)
        for name in ctlSubcommands {
            #expect(run.output.contains("\n  \(name) "), "missing \(name)")
        }
        #expect(run.output.contains("69 daemon unreachable, without a place for\nanother client, or no reply in time; 74 output not written; 75 a job paused or resumed,\n"
            + "but not saved in the daemon's state file; 77 permission denied;"), "\(run.output)")
    }

    /// Output that cannot be written (a full disk, here `/dev/full`) is not lost in silence:
    /// weavedictl says so on standard error and exits 74 (EX_IOERR), whatever it found.
    @Test(.enabled(if: fileExists("/dev/full"), "needs /dev/full"), arguments: [["version"], ["--help"], ["ping", "--help"]])
    func outputThatCannotBeWritten_exits74SayingWhy(arguments: [String]) throws {
        let command = ([CtlRun.binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let run = try CtlRun.execute(["/bin/sh", "-c", "exec \(command) > /dev/full"])
        #expect(run.code == 74, "\(run.all)")
        #expect(run.error == "weavedictl: cannot write to standard output: No space left on device (ENOSPC)\n", "\(run.all)")
    }

    /// A standard output left non-blocking by another process that shares it (a Node.js
    /// parent, a shell) is full for now, not broken: weavedictl waits for room and writes it
    /// all, instead of stopping at the pipe's 64 KiB with EAGAIN and exit 74.
    @Test func aNonBlockingStandardOutput_getsAllTheOutput() throws {
        let text = String(repeating: "weavedi_sample 1\n", count: 20_000)  // 340 KB
        let fake = try FakeDaemon(["GetMetrics": [VarlinkReply(parameters: [("text", .string(text))])]])
        let pipe = Pipe()
        let writeEnd = pipe.fileHandleForWriting.fileDescriptor
        _ = fcntl(writeEnd, F_SETFL, fcntl(writeEnd, F_GETFL) | O_NONBLOCK)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CtlRun.binary)
        process.arguments = ["--socket", fake.socket, "metrics"]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        try pipe.fileHandleForWriting.close()
        usleep(300_000)  // the pipe fills up before anything is read
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(output.count == text.utf8.count)
    }

    /// An argument that is not valid UTF-8 (a path such as `c\xFF.json`) cannot be held as text
    /// without turning into another path: it is a usage error, not a read of another file or
    /// a connection to another socket.
    @Test func anArgumentThatIsNotUTF8_exits64_insteadOfNamingAnotherPath() throws {
        let directory = TemporaryDirectory("weavedictl")
        _ = directory.write("c\u{FFFD}.json", "{}")  // what the argument would be repaired into
        let run = try CtlRun.execute(
            ["/bin/sh", "-c", #"exec "$0" check-cycles --offline --config "$(printf 'c\377.json')""#, CtlRun.binary], in: directory)
        #expect(run.code == 64, "\(run.all)")
        #expect(run.error.hasPrefix(
            #"weavedictl: argument 4 ("c\u{FFFD}.json" as text) is not valid UTF-8, and text would turn it into another path"#),
            "\(run.error)")
        #expect(run.output.isEmpty, "\(run.all)")
    }

    /// Such an argument past 4,096 characters is cut in the message, as a path is.
    @Test func aLongArgumentThatIsNotUTF8_isCutInTheError() throws {
        let directory = TemporaryDirectory("weavedictl")
        let run = try CtlRun.execute(
            ["/bin/sh", "-c", #"exec "$0" check-cycles --offline --config "$(printf 'c\377%05000d' 0)""#, CtlRun.binary],
            in: directory)
        #expect(run.code == 64, "\(run.all)")
        let cut = "c\\u{FFFD}" + String(repeating: "0", count: 4091) + "... (5002 characters)\" as text) is not valid UTF-8"
        #expect(run.error.hasPrefix(#"weavedictl: argument 4 (""# + cut), "\(run.error.prefix(200))")
        #expect(run.error.count < 4_500, "\(run.error.count)")
    }

    /// Help about `help` is the general help, not "no help for '--help'".
    @Test func helpAboutHelp_printsTheGeneralHelp() throws {
        let general = try CtlRun.run(["--help"])
        for arguments in [["help", "--help"], ["help", "-h"], ["help"]] {
            let run = try CtlRun.run(arguments)
            #expect(run.code == 0 && run.error.isEmpty, "\(arguments): \(run.all)")
            #expect(run.output == general.output, "\(arguments): \(run.all)")
        }
        let wrong = try CtlRun.run(["help", "--bogus"])
        #expect(wrong.code == 64 && wrong.error.hasPrefix("weavedictl: no help for '--bogus': not a subcommand"), "\(wrong.all)")
    }

    @Test func helpAboutASubcommand_withHelpAskedAgain_printsItsHelp() throws {
        let ping = try CtlRun.run(["ping", "--help"])
        #expect(ping.code == 0 && ping.output.contains("ping"), "\(ping.all)")
        for arguments in [["help", "ping", "--help"], ["help", "ping", "-h"], ["help", "ping"]] {
            let run = try CtlRun.run(arguments)
            #expect(run.code == 0 && run.error.isEmpty, "\(arguments): \(run.all)")
            #expect(run.output == ping.output, "\(arguments): \(run.all)")
        }
        for (arguments, unexpected) in [(["help", "ping", "jobs"], "jobs"), (["help", "ping", "--help", "--bogus"], "--bogus")] {
            let run = try CtlRun.run(arguments)
            #expect(run.code == 64 && run.error.hasPrefix("weavedictl: help takes one subcommand name; unexpected '\(unexpected)'"), "\(run.all)")
        }
    }

    @Test func unknownSubcommand_exits64NamingIt() throws {
        let run = try CtlRun.run(["frobnicate"])
        #expect(run.code == 64)
        #expect(run.error.hasPrefix("weavedictl: unknown subcommand 'frobnicate'\nusage: weavedictl "))
        #expect(run.output.isEmpty)
        let none = try CtlRun.run([])
        #expect(none.code == 64 && none.error.hasPrefix("weavedictl: missing subcommand\n"))
    }

    @Test(arguments: [
        (["health", "--bogus"], "weavedictl health: unknown option '--bogus'", "health [--tag TAG]..."),
        (["run-job"], "weavedictl run-job: missing argument NAME", "run-job NAME [--wait]"),
        (["pause-job"], "weavedictl pause-job: missing argument NAME", "pause-job NAME"),
        (["fixes", "--limit", "0"], "weavedictl fixes: --limit needs a whole number from 1 to 500, in decimal digits (no sign); got '0'", "fixes [--limit N]"),
        (["health", "--tag"], "weavedictl health: --tag needs a value", "health [--tag TAG]..."),
        (["ping", "extra"], "weavedictl ping: unexpected argument 'extra'", "ping"),
        (["run-job", "a", "--wait=yes"], "weavedictl run-job: --wait takes no value", "run-job NAME [--wait]"),
        (["--socket"], "weavedictl: --socket needs a value", "SUBCOMMAND [ARGS]"),
        (["help", "ping", "extra"], "weavedictl: help takes one subcommand name; unexpected 'extra'", "SUBCOMMAND [ARGS]"),
        (["ping", "--", "--help"], "weavedictl ping: unexpected argument '--help'", "ping"),
        (["ping", "--help=yes"], "weavedictl ping: --help takes no value", "ping"),
        (["--help=yes"], "weavedictl: --help takes no value", "SUBCOMMAND [ARGS]"),
        (["--version=1"], "weavedictl: --version takes no value", "SUBCOMMAND [ARGS]"),
        (["ping", "--version"], "weavedictl: --version is weavedictl's own option: give it before any subcommand", "SUBCOMMAND [ARGS]"),
    ])
    func usageMistakes_exit64WithTheProblemThenTheUsage(arguments: [String], problem: String, usage: String) throws {
        let run = try CtlRun.run(arguments)
        #expect(run.code == 64, "\(run.all)")
        #expect(run.error.hasPrefix(problem))
        #expect(run.error.contains("usage: weavedictl [--socket PATH] [--timeout SECONDS] [--json] [--no-color] \(usage)"))
    }

    /// `-h` and `--help` ask for help wherever they stand as options, even after a mistake
    /// and after an option that needs a value (a value that starts with `--` is given inline);
    /// but given as an option's value (a tag, a filter, a socket path) they are that value.
    @Test func help_isAskedForByAnOption_notByAnOptionsValue() throws {
        for arguments in [["health", "--tag", "x", "-h"], ["health", "--bogus", "--help"], ["-h", "health"], ["log-level", "--filter", "--help"]] {
            let run = try CtlRun.run(arguments)
            #expect(run.code == 0 && run.output.hasPrefix("usage: weavedictl "), "\(arguments): \(run.all)")
        }
        for arguments in [["health", "--tag", "-h"], ["log-level", "--filter=--help"], ["ping", "--socket", "-h"]] {
            let run = try CtlRun.run(arguments + (arguments.contains("--socket") ? [] : ["--socket", "/nonexistent/control.sock"]))
            #expect(run.code == 69 && run.output.isEmpty, "\(arguments): \(run.all)")
            #expect(run.error.hasPrefix("weavedictl: cannot connect to "), "\(arguments): \(run.all)")
        }
    }

    /// An option that needs a value, followed by another option, was given no value: that is
    /// a usage error, not the other option taken as the value (`--tag --json` is no tag
    /// "--json" and no JSON output). `--tag=--json` is the way to give such a value.
    @Test(arguments: [
        (["health", "--tag", "--json"], "weavedictl health: --tag needs a value, but '--json' follows it; a value that starts with -- is given as --tag=VALUE"),
        (["check", "--tag", "--", "x"], "weavedictl check: --tag needs a value, but '--' follows it"),
        (["log-level", "--filter", "--no-color"], "weavedictl log-level: --filter needs a value, but '--no-color' follows it"),
        (["fixes", "--limit", "--json"], "weavedictl fixes: --limit needs a value, but '--json' follows it"),
        (["check-cycles", "--offline", "--config", "--json"], "weavedictl check-cycles: --config needs a value, but '--json' follows it"),
        (["--socket", "--json", "ping"], "weavedictl: --socket needs a value, but '--json' follows it"),
        (["ping", "--timeout", "--json"], "weavedictl: --timeout needs a value, but '--json' follows it"),
    ])
    func anOptionFollowedByAnotherOption_hasNoValue_andExits64(arguments: [String], problem: String) throws {
        let run = try CtlRun.run(arguments + ["--socket=/nonexistent/control.sock"])
        #expect(run.code == 64, "\(run.all)")
        #expect(run.error.hasPrefix(problem), "\(run.all)")
        #expect(run.output.isEmpty, "\(run.all)")
    }

    /// An option that takes one value, given twice (before or after the subcommand, inline or
    /// not), is refused naming both values, instead of the last one taken in silence: which
    /// socket a command talks to must not depend on which of two a script put last. `--tag`,
    /// which adds a tag each time, and a flag given twice are taken.
    @Test(arguments: [
        (["--socket", "/a.sock", "ping", "--socket=/b\u{1B}.sock"], #"weavedictl: --socket given twice ("/a.sock", then "/b\u001b.sock"); give it once"#),
        (["--socket=/a.sock", "--socket", "/a.sock", "ping"], #"weavedictl: --socket given twice ("/a.sock", then "/a.sock"); give it once"#),
        (["ping", "--timeout", "1", "--timeout=2"], #"weavedictl: --timeout given twice ("1", then "2"); give it once"#),
        (["fixes", "--limit", "3", "--limit", "4"], #"weavedictl fixes: --limit given twice ("3", then "4"); give it once"#),
        (["log-level", "--filter", "info", "--filter", "debug"], #"weavedictl log-level: --filter given twice ("info", then "debug"); give it once"#),
        (["check-cycles", "--offline", "--config", "a.json", "--config", "b.json"],
            #"weavedictl check-cycles: --config given twice ("a.json", then "b.json"); give it once"#),
    ])
    func anOptionGivenTwice_isRefused_namingBothValues(arguments: [String], problem: String) throws {
        let run = try CtlRun.run(arguments)
        #expect(run.code == 64, "\(run.all)")
        #expect(run.error.hasPrefix(problem + "\nusage: weavedictl "), "\(run.all)")
        #expect(run.output.isEmpty, "\(run.all)")
    }

    /// A mistake in a global option is weavedictl's own: one prefix, one message and the
    /// root's usage, wherever the option stands (before the subcommand, after it, or both).
    @Test(arguments: [
        [["--socket", "/a.sock", "--socket", "/b.sock", "ping"], ["--socket", "/a.sock", "ping", "--socket", "/b.sock"],
         ["ping", "--socket", "/a.sock", "--socket", "/b.sock"]],
        [["--timeout", "x", "ping"], ["ping", "--timeout", "x"]],
        [["--json=1", "ping"], ["ping", "--json=1"]],
        [["--version=1", "ping"], ["ping", "--version=1"]],
    ])
    func aGlobalOptionsMistake_isSaidTheSameWayWhereverItStands(commandLines: [[String]]) throws {
        var errors: [String] = []
        for arguments in commandLines {
            let run = try CtlRun.run(arguments)
            #expect(run.code == 64, "\(arguments): \(run.all)")
            #expect(run.error.hasPrefix("weavedictl: "), "\(arguments): \(run.error)")
            #expect(run.error.contains("usage: weavedictl [--socket PATH] [--timeout SECONDS] [--json] [--no-color] SUBCOMMAND"),
                "\(arguments): \(run.error)")
            errors.append(run.error)
        }
        #expect(Set(errors).count == 1, "\(errors)")
    }

    @Test func repeatedTags_andRepeatedFlags_areTaken() throws {
        let fake = try FakeDaemon(["GetHealth": [.health("healthy")]])
        let run = try CtlRun.run(["--socket", fake.socket, "--json", "health", "--tag", "a", "--tag", "b", "--json", "--no-color", "--no-color"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.hasPrefix("{"), "\(run.all)")
        #expect(fake.calls.first?.parameters.first { $0.0 == "tags" }?.1 == .array([.string("a"), .string("b")]), "\(fake.calls)")
    }

    /// A value that starts with `--`, given inline, is that value.
    @Test func aValueThatStartsWithDashes_isGivenInline() throws {
        let fake = try FakeDaemon(["GetHealth": [VarlinkReply(parameters: [
            ("health", .health([JSONValue.check.with([("name", .string("a")), ("tags", .array([.string("--json")]))])])),
        ])]])
        let run = try CtlRun.run(["--socket", fake.socket, "health", "--tag=--json"])
        #expect(run.code == 0, "\(run.all)")
        #expect(!run.output.hasPrefix("{"), "--json is the tag, not the option: \(run.all)")
        #expect(fake.calls.first?.parameters.first { $0.0 == "tags" }?.1 == .array([.string("--json")]), "\(fake.calls)")
    }

    @Test func unreachableSocket_exits69NamingTheSocketAndHowToStartTheDaemon() throws {
        let directory = TemporaryDirectory("weavedictl")
        let socket = directory.path + "/control.sock"
        let run = try CtlRun.run(["--socket", socket, "health"], in: directory)
        #expect(run.code == 69)
        #expect(run.error.hasPrefix("weavedictl: cannot connect to \(socket): No such file or directory (ENOENT)\n"))
        #expect(run.error.contains("Is weavedid running? Start it with `systemctl start weavedid` (or `swift run weavedid` in its source tree), or pass --socket PATH."))
        #expect(run.output.isEmpty)
    }

    /// A socket path that is a symbolic link to nothing (the daemon stopped and removed its
    /// socket, or the link is stale) says so, not only ENOENT for a path that `ls` shows.
    @Test func aDanglingSymbolicLink_exits69SayingItsTargetIsMissing() throws {
        let directory = TemporaryDirectory("weavedictl")
        let link = directory.path + "/control.sock"
        try #require(symlink(directory.path + "/gone/control.sock", link) == 0)
        let run = try CtlRun.run(["--socket", link, "ping"], in: directory)
        #expect(run.code == 69, "\(run.all)")
        #expect(run.error.hasPrefix("weavedictl: cannot connect to \(link): it is a symbolic link to '\(directory.path)/gone/control.sock', "
            + "which does not exist (connect: No such file or directory (ENOENT))\n"), "\(run.error)")
        #expect(run.error.contains("Is weavedid running? It removes its socket when it stops"), "\(run.error)")
        // A link on the way, to a directory that does not exist.
        try #require(symlink("nowhere", directory.path + "/run") == 0)
        let through = try CtlRun.run(["--socket", directory.path + "/run/control.sock", "ping"], in: directory)
        #expect(through.code == 69, "\(through.all)")
        #expect(through.error.contains(": \(directory.path)/run on its path is a symbolic link to 'nowhere', which does not exist (connect: "),
            "\(through.error)")
        // A path simply missing keeps the plain message.
        let missing = try CtlRun.run(["--socket", directory.path + "/none/control.sock", "ping"], in: directory)
        #expect(missing.error.hasPrefix("weavedictl: cannot connect to \(directory.path)/none/control.sock: No such file or directory (ENOENT)\n"))
    }

    @Test func aPathThatIsNotASocket_exits69SayingWhatItIs() throws {
        // connect(2) says ECONNREFUSED for these, as for a socket nobody listens on.
        let directory = TemporaryDirectory("weavedictl")
        let file = directory.write("passwd", "root:x:0:0::/root:/bin/sh\n")
        let fifo = directory.path + "/fifo"
        try #require(mkfifo(fifo, 0o600) == 0)
        for (path, kind) in [(file, "a regular file"), (directory.path, "a directory"), (fifo, "a named pipe (FIFO)")] {
            let run = try CtlRun.run(["--socket", path, "ping"], in: directory)
            #expect(run.code == 69, "\(run.all)")
            #expect(run.error == "weavedictl: cannot connect to \(path): it is \(kind), not a socket (connect: Connection refused (ECONNREFUSED))\n"
                + "Pass the path of weavedid's control socket with --socket PATH (control.socket in its configuration).\n")
            #expect(!run.error.contains("Is weavedid running?") && run.output.isEmpty)
        }
        let environment = try CtlRun.run(["health"], environment: ["WEAVEDI_SOCKET": file], in: directory)
        #expect(environment.code == 69)
        #expect(environment.error.hasPrefix("weavedictl: cannot connect to \(file): it is a regular file, not a socket"), "\(environment.error)")
        #expect(environment.error.hasSuffix("(the path comes from WEAVEDI_SOCKET)\nSet WEAVEDI_SOCKET to the path of weavedid's control socket (control.socket in its configuration), or unset it.\n"))
        let found = TemporaryDirectory("weavedictl")
        found.write(".weavedi/run/control.sock", "")
        let discovered = try CtlRun.run(["ping"], environment: ["RUNTIME_DIRECTORY": "", "XDG_RUNTIME_DIR": ""], in: found)
        #expect(discovered.code == 69)
        #expect(discovered.error.contains("/.weavedi/run/control.sock: it is a regular file, not a socket"), "\(discovered.error)")
        #expect(discovered.error.contains("It stands where weavedid puts its control socket: remove it if nothing needs it"))
    }

    /// A datagram socket (journald's, a notify socket) is no stream socket: connect says
    /// EPROTOTYPE, and weavedictl says what the path is instead of asking whether weavedid runs.
    @Test func aDatagramSocket_exits69SayingItIsNotAStreamSocket() throws {
        let directory = TemporaryDirectory("weavedictl")
        let path = directory.path + "/notify.sock"
        let datagram = try UnixSocket.bindDatagram(at: UnixSocketAddress(path: path))
        let run = try CtlRun.run(["--socket", path, "ping"], in: directory)
        #expect(run.code == 69, "\(run.all)")
        #expect(run.error.hasPrefix("weavedictl: cannot connect to \(path): it is a socket of another type (datagram or sequenced-packet), "
            + "not a stream socket as weavedid's is (connect: "), "\(run.error)")
        #expect(run.error.contains("Pass the path of weavedid's control socket with --socket PATH") && !run.error.contains("Is weavedid running?"),
            "\(run.error)")
        _ = datagram
    }

    @Test func socketPathTooLongForAnAddress_exits64NamingItsLengthAndWhereItCameFrom() throws {
        let directory = TemporaryDirectory("weavedictl")
        let socket = directory.path + "/" + String(repeating: "s", count: 110) + ".sock"
        let option = try CtlRun.run(["--socket", socket, "ping"], in: directory)
        #expect(option.code == 64, "\(option.all)")
        #expect(option.error == "weavedictl: the socket path \(socket) (given with --socket) is \(socket.utf8.count) bytes long, but a Unix socket path may have at most 107 bytes (sun_path); give a shorter path to the same socket, e.g. through a symbolic link to its directory.\n")
        let environment = try CtlRun.run(["health"], environment: ["WEAVEDI_SOCKET": socket], in: directory)
        #expect(environment.code == 64, "\(environment.all)")
        #expect(environment.error.hasPrefix("weavedictl: the socket path \(socket) (from WEAVEDI_SOCKET) is \(socket.utf8.count) bytes long"))
        #expect(option.output.isEmpty && environment.output.isEmpty)
    }

    /// A socket path past 4,096 characters is cut as every path a message shows is: its first
    /// 4,093, `...` and its length (which the message gives in bytes too).
    @Test func aSocketPathPast4096Characters_isCutInTheError() throws {
        let directory = TemporaryDirectory("weavedictl")
        let socket = "/" + String(repeating: "s", count: 5999)
        let run = try CtlRun.run(["--socket", socket, "ping"], in: directory)
        #expect(run.code == 64, "\(run.all.prefix(300))")
        #expect(run.error == "weavedictl: the socket path /\(String(repeating: "s", count: 4092))... (6000 characters) (given with --socket) is 6000 bytes long, "
            + "but a Unix socket path may have at most 107 bytes (sun_path); give a shorter path to the same socket, e.g. through a symbolic link to its directory.\n")
    }

    @Test func withoutAnySocket_theErrorNamesTheSystemSocket() throws {
        try #require(!fileExists("/run/weavedi/control.sock"), "a system daemon runs here")
        let directory = TemporaryDirectory("weavedictl")
        let run = try CtlRun.run(["ping"], environment: ["XDG_RUNTIME_DIR": directory.path + "/xdg"], in: directory)
        #expect(run.code == 69)
        #expect(run.error.hasPrefix("weavedictl: cannot connect to /run/weavedi/control.sock: "))
        #expect(run.error.contains("(none of \(directory.path)/xdg/weavedi/control.sock, \(directory.path)/.weavedi/run/control.sock exists)"))
    }

    /// A socket found where weavedictl looks, but dead (nobody listens): the note names only the
    /// places before it, which do not exist, not the socket found.
    @Test func aDeadSocketFound_isNotSaidToBeMissing() throws {
        let directory = TemporaryDirectory("weavedictl")
        let socket = directory.path + "/.weavedi/run/control.sock"
        try FileManager.default.createDirectory(atPath: directory.path + "/.weavedi/run", withIntermediateDirectories: true)
        let dead = try UnixSocket.listen(at: UnixSocketAddress(path: socket), backlog: 1, nonBlocking: true)
        try dead.close()  // the file stays; nobody listens
        let run = try CtlRun.run(["ping"], environment: ["XDG_RUNTIME_DIR": directory.path + "/xdg"], in: directory)
        #expect(run.code == 69)
        #expect(run.error.hasPrefix("weavedictl: cannot connect to \(socket): "), "\(run.error)")
        #expect(run.error.contains("(\(directory.path)/xdg/weavedi/control.sock does not exist)\n"), "\(run.error)")
        #expect(!run.error.contains("\(socket) does not exist") && !run.error.contains("\(socket) exists"), "\(run.error)")
    }

    /// A `WEAVEDI_SOCKET` that is not valid UTF-8 is refused unless a `--socket` option was
    /// read: "--socket" as a job's name (after `--`) or as another option's value is none, and
    /// leaving the variable out would find another daemon's socket (here a fake one).
    @Test func aSocketVariableThatIsNotUTF8_isRefused_unlessTheSocketOptionWasParsed() throws {
        let other = try FakeDaemon([:])
        for arguments in [["run-job", "--", "--socket"], ["health", "--tag=--socket"], ["pause-job", "--", "--socket=x"]] {
            let command = ([CtlRun.binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
            let run = try CtlRun.execute([
                "/bin/sh", "-c", #"WEAVEDI_SOCKET="$(printf '/tmp/x\377')" RUNTIME_DIRECTORY="$0" exec "# + command, other.directory.path,
            ])
            #expect(run.code == 64, "\(arguments): \(run.all)")
            #expect(run.error.hasPrefix("weavedictl: the environment variable WEAVEDI_SOCKET is not valid UTF-8"), "\(arguments): \(run.all)")
        }
        #expect(other.calls.isEmpty, "\(other.calls)")
        let given = try CtlRun.execute(
            ["/bin/sh", "-c", #"WEAVEDI_SOCKET="$(printf '/tmp/x\377')" exec "$0" run-job --socket="$1" -- --socket"#, CtlRun.binary, other.socket])
        #expect(given.code == 69 && other.calls.map(\.method) == ["io.weavedi.Daemon.RunJob"], "\(given.all)")
    }

    @Test func weavediSocket_isHonoured_andSocketOptionWins() throws {
        let daemon = try readyDaemon()
        let viaEnvironment = try CtlRun.run(["ping"], environment: ["WEAVEDI_SOCKET": daemon.defaultSocket])
        #expect(viaEnvironment.code == 0, "\(viaEnvironment.all)")
        // WEAVEDI_SOCKET comes before discovery, even when discovery would find a live socket.
        let missing = daemon.directory.path + "/elsewhere.sock"
        let wrong = try CtlRun.run(
            ["ping"], environment: ["WEAVEDI_SOCKET": missing, "RUNTIME_DIRECTORY": daemon.directory.path + "/run"])
        #expect(wrong.code == 69)
        #expect(wrong.error.contains("cannot connect to \(missing)") && wrong.error.contains("WEAVEDI_SOCKET"))
        let option = try CtlRun.run(["ping", "--socket", daemon.defaultSocket], environment: ["WEAVEDI_SOCKET": missing])
        #expect(option.code == 0)
    }

    @Test func discovery_findsTheSocketInTheFirstRuntimeDirectory() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["ping"], environment: ["RUNTIME_DIRECTORY": daemon.directory.path + "/run:/elsewhere"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.contains("answers on \(daemon.defaultSocket)"))
    }

    @Test func discovery_findsTheSocketUnderXDGRuntimeDir() throws {
        let directory = TemporaryDirectory()
        let daemon = try DaemonProcess(environment: ["RUNTIME_DIRECTORY": "", "XDG_RUNTIME_DIR": directory.path + "/xdg"], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let run = try CtlRun.run(["ping"], environment: ["XDG_RUNTIME_DIR": directory.path + "/xdg"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.contains("answers on \(directory.path)/xdg/weavedi/control.sock"))
    }

    @Test func discovery_findsTheSocketBelowTheWorkingDirectory() throws {
        let directory = TemporaryDirectory()
        let daemon = try DaemonProcess(environment: ["RUNTIME_DIRECTORY": ""], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let run = try CtlRun.run(["ping"], in: directory)
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.contains("answers on \(directory.path)/.weavedi/run/control.sock"))
    }

    @Test func globalOptions_mayFollowTheSubcommand() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["ping", "--json", "--socket=\(daemon.defaultSocket)", "--no-color"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.hasPrefix("{\"version\":"))
    }
}
