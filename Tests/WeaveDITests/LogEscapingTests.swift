import Testing
@testable import WeaveDI

// Text from outside that a log line quotes (a factory's error, a session's or a request's id)
// cannot forge a line: every line the library writes is one line, its control characters
// escaped as the health lines and weavedid's log escape them.

/// An error whose description holds a newline, a forged line and an escape sequence.
private struct ForgingError: Error, CustomStringConvertible {
    var description: String { "bad\n[WeaveDI] error: FORGED LINE\u{1B}[2J" }
}

private final class ForgedService: Sendable {}
private final class ForgedScoped: Sendable {}

@Suite struct LogEscapingTests {
    /// The default sink, in a child process: the factory's error, the session's id and the
    /// request's id each stay on their line, escaped.
    @Test func theDefaultSink_writesOneEscapedLine_perMessage() throws {
        let result = try ChildProcess.run("weavedi-probe", ["forged-lines"])
        #expect(result.status == 0 && result.stdout == "done\n", "\(result.stdout)\(result.stderr)")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        let failed = #"the factory of ForgedTarget failed: bad\n[WeaveDI] error: FORGED LINE\u{1B}[2J"#
        let session = #"session 'id\n[WeaveDI] diagnostic: FORGED SESSION\u{1B}[2J'"#
        let request = #"request 'rq\r\n[WeaveDI] error: FORGED REQUEST'"#
        for line in [
            "[WeaveDI] error: resolve(ForgedTarget) returned nil: \(failed)",
            "[WeaveDI] diagnostic: \(session) opened",
            "[WeaveDI] error: \(request): resolve(ForgedTarget) returned nil: \(failed)",
            "[WeaveDI] error: \(request): resolve(ForgedTarget) returned nil: cannot resolve ForgedTarget: \(request) is closed; open a new request",
            "[WeaveDI] error: \(session): resolve(ForgedTarget) returned nil: cannot resolve ForgedTarget: \(session) is closed; open a new session",
        ] {
            #expect(lines.contains(line), "\(result.stderr)")
        }
        #expect(lines.contains { $0.hasPrefix("[WeaveDI] diagnostic: \(session) closed") }, "\(result.stderr)")
        #expect(!lines.contains { $0.hasPrefix("[WeaveDI] error: FORGED") || $0.hasPrefix("[WeaveDI] diagnostic: FORGED") },
            "\(result.stderr)")
        #expect(lines.allSatisfy { $0.hasPrefix("[WeaveDI] ") }, "\(result.stderr)")
        #expect(!result.stderr.contains("\u{1B}") && !result.stderr.contains("\r"), "\(result.stderr)")
    }

    /// A record passed to the default sink by a program (a sink of its own forwarding it) is
    /// written on one line too.
    @Test func theDefaultSink_escapesARecordGivenToItDirectly() throws {
        let result = try ChildProcess.run("weavedi-probe", ["forged-record"])
        #expect(result.status == 0 && result.stdout == "done\n", "\(result.stdout)\(result.stderr)")
        #expect(result.stderr == #"[WeaveDI] error: app: a\nb\u{1B}[2J"# + "\n", "\(result.stderr)")
    }

    /// An error's description is one line: a factory's error and a closed scope's id are
    /// escaped in it.
    @Test func aResolutionErrorsDescription_escapesTextFromOutside() async throws {
        let container = WeaveDI.Container()
        container.register(ForgedService.self, scope: .transient) { () throws -> ForgedService in throw ForgingError() }
        container.register(ForgedScoped.self, scope: .session) { ForgedScoped() }
        do {
            _ = try container.require(ForgedService.self)
            Issue.record("the factory threw")
        } catch {
            #expect(error.description == #"the factory of ForgedService failed: bad\n[WeaveDI] error: FORGED LINE\u{1B}[2J"#)
        }
        let session = container.openSession(id: "s\n\u{1B}[2J")
        await session.close()
        do {
            _ = try session.require(ForgedScoped.self)
            Issue.record("the session is closed")
        } catch {
            #expect(error.description == #"cannot resolve ForgedScoped: session 's\n\u{1B}[2J' is closed; open a new session"#)
        }
    }
}

extension InjectedTests {
    /// A sink of the program's own gets each record's message on one line, escaped, whatever
    /// it quotes; text escaped before (a health line's) is not escaped twice.
    @Test func aCustomSink_getsEscapedOneLineMessages() async {
        let container = WeaveDI.Container()
        container.register(ForgedService.self, scope: .transient) { () throws -> ForgedService in throw ForgingError() }
        // The test's capture is such a sink (one the test process installs).
        let log = LogCapture()
        await log.during {
            _ = container.resolve(ForgedService.self)
            let session = container.openSession(id: "id\n[WeaveDI] diagnostic: FORGED SESSION")
            await session.close()
            WeaveDILog.log(.error, subsystem: "app\nx", "already escaped: \\n \\u{1B}")
        }
        let records = log.records
        let messages = records.map(\.message)
        #expect(messages.contains(
            #"resolve(ForgedService) returned nil: the factory of ForgedService failed: bad\n[WeaveDI] error: FORGED LINE\u{1B}[2J"#),
            "\(messages)")
        #expect(messages.contains(#"session 'id\n[WeaveDI] diagnostic: FORGED SESSION' opened"#), "\(messages)")
        #expect(messages.contains("already escaped: \\n \\u{1B}"), "\(messages)")
        #expect(records.contains { $0.subsystem == #"app\nx"# }, "\(records.map(\.subsystem))")
        #expect(!records.contains { record in
            (record.message + record.subsystem).unicodeScalars.contains { ControlCharacters.isControl($0) }
        }, "\(messages)")
    }
}
