import Testing
import WeaveDI
import WeaveDIControl
@testable import weavedictl

/// What weavedictl prints for people quotes arguments, paths and the daemon's replies with
/// their control characters escaped (`\n`, `\u{1B}`, ...): nothing it was given can start a
/// line of its own or send escape sequences to the terminal.
@Suite struct CtlEscapingTests {
    /// An ANSI colour, a line break, and a C1 CSI (which JSON leaves as it is).
    private static let hostile = "x\u{1B}[31mRED\nline2\u{9B}2J"
    private static let escaped = #"x\u{1B}[31mRED\nline2\u{9B}2J"#
    /// `hostile` quoted as a JSON string for display (`quotedForMessage`: the C1 CSI, which JSON
    /// leaves as it is, escaped the JSON way too).
    private static let quoted = #""x\u001b[31mRED\nline2\u009b2J""#

    /// Whether `text` holds a control character other than the line breaks ending its lines.
    private func hasControl(_ text: String) -> Bool {
        text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }
    }

    @Test func runJob_unknownName_isEchoedEscaped_onOneLine() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", "x\u{1B}[31mRED\nline2"])
        #expect(run.code == 1, "\(run.all)")
        #expect(!hasEscape(run.all), "\(run.all)")
        #expect(run.error.hasSuffix(#"No job is named "x\u001b[31mRED\nline2"; `weavedictl jobs` lists them."# + "\n"), "\(run.error)")
        #expect(run.error.split(separator: "\n").count == 2, "\(run.error)")
    }

    @Test func failureHints_escapeWhatTheyQuote() {
        let method = "io.weavedi.Daemon.RunJob"
        let hostile = JSONValue.string(Self.hostile)
        let cases: [(VarlinkFailure, String)] = [
            (VarlinkFailure("io.weavedi.Daemon.NoSuchJob", [("name", hostile)]), "No job is named \(Self.quoted);"),
            (VarlinkFailure("io.weavedi.Daemon.NoSuchCheck", [("name", hostile)]), "No health check is named \(Self.quoted);"),
            (VarlinkFailure("io.weavedi.Daemon.ReloadRefused", [("reason", hostile)]), "keeps the previous one: \(Self.escaped)"),
            (VarlinkFailure("io.weavedi.Daemon.LimitExceeded", [("limit", hostile)]), "its '\(Self.escaped)' limit"),
            (VarlinkFailure("org.varlink.service.InvalidParameter", [("parameter", hostile)]), "the parameter '\(Self.escaped)'"),
        ]
        for (failure, expected) in cases {
            let hint = FailureHint.hint(for: failure, method: method) ?? ""
            #expect(hint.contains(expected) && !hasControl(hint), "\(failure.name): \(hint)")
            let message = CtlError.failure(failure, method: method).message
            #expect(!hasControl(message) && message.split(separator: "\n").count == 2, "\(failure.name): \(message)")
        }
        let denied = CtlError.permissionDenied(method: Self.hostile, uid: 1000).message
        #expect(denied.hasPrefix("weavedictl: permission denied: \(Self.escaped) changes") && !hasControl(denied))
    }

    @Test func errorsAboutArgumentsAndPaths_escapeThem() throws {
        let directory = TemporaryDirectory("weavedictl")
        let unknown = try CtlRun.run([Self.hostile], in: directory)
        #expect(unknown.code == 64)
        #expect(unknown.error.hasPrefix("weavedictl: unknown subcommand '\(Self.escaped)'\n") && !hasControl(unknown.error))
        let argument = try CtlRun.run(["ping", Self.hostile], in: directory)
        #expect(argument.code == 64)
        #expect(argument.error.hasPrefix("weavedictl ping: unexpected argument '\(Self.escaped)'\n") && !hasControl(argument.error))
        let socket = directory.path + "/" + Self.hostile
        let unreachable = try CtlRun.run(["--socket", socket, "ping"], in: directory)
        #expect(unreachable.code == 69)
        #expect(unreachable.error.hasPrefix("weavedictl: cannot connect to \(directory.path)/\(Self.escaped): ") && !hasControl(unreachable.error))
        let version = try CtlRun.run(["version"], environment: ["WEAVEDI_SOCKET": socket], in: directory)
        #expect(version.code == 0 && !hasControl(version.output), "\(version.all)")
    }

    @Test func repliesShownToPeople_areEscaped() throws {
        let hostile = JSONValue.string(Self.hostile)
        // A run without an id is said by its result alone.
        let run = JSONValue.jobRun.with([("id", .null), ("result", hostile), ("message", hostile)])
        let fake = try FakeDaemon([
            "Ping": [VarlinkReply(parameters: [("version", hostile), ("pid", .int(1)), ("uptime", .double(1))])],
            "GetLogLevel": [VarlinkReply(parameters: [("level", hostile), ("filter", hostile)])],
            "Reload": [VarlinkReply(parameters: [("status", hostile)])],
            "GetHealth": [VarlinkReply(parameters: [("health", .health([JSONValue.check.with([("name", hostile)])]))])],
            // A line break is the format's own; other control characters are escaped.
            "GetMetrics": [VarlinkReply(parameters: [("text", .string("# HELP a b\u{1B}[31m\u{9B}2J\na 1\n"))])],
            "PauseJob": [VarlinkReply()],
            "RunJob": [VarlinkReply(parameters: [("run", run), ("progress", .null)])],
        ])
        let cases: [([String], String)] = [
            (["ping"], "weavedid \(Self.escaped) answers on "),
            (["log-level"], "level:  \(Self.escaped)\nfilter: \(Self.escaped)\n"),
            (["reload"], "\(Self.escaped)\n"),
            (["health"], "\n\(Self.escaped)  healthy"),
            (["metrics"], #"# HELP a b\u{1B}[31m\u{9B}2J"# + "\na 1\n"),
            (["pause-job", Self.hostile], "job \(Self.escaped): paused\n"),
            (["run-job", Self.hostile], "job \(Self.escaped): \(Self.escaped) in 1.0 s"),
        ]
        for (arguments, expected) in cases {
            let result = try CtlRun.run(["--socket", fake.socket] + arguments)
            #expect(result.output.contains(expected), "\(arguments[0]): \(result.all)")
            #expect(!hasControl(result.all), "\(arguments[0]): \(result.all)")
        }
    }
}
