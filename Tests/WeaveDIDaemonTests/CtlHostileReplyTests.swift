import Testing
import WeaveDI
import WeaveDIControl
@testable import weavedictl

/// Replies no weavedid sends, from a `FakeDaemon` standing in for a broken or hostile one:
/// weavedictl says what is wrong with them and exits with a status; it never crashes or hangs.
@Suite struct CtlHostileReplyTests {
    /// Durations and times far beyond any clock (`1e300` seconds) are shown as `-`, as a
    /// missing one is, instead of stopping weavedictl.
    @Test func hugeDurationsAndTimes_areShownAsADash() throws {
        let huge = JSONValue.double(1e300)
        let fake = try FakeDaemon([
            "Ping": [VarlinkReply(parameters: [("version", .string("9")), ("pid", .int(1)), ("uptime", huge)])],
            "GetHealth": [VarlinkReply(parameters: [("health", .object([
                ("status", .string("healthy")), ("score", .int(100)), ("takenAt", .double(-1e300)),
                ("checks", .array([.object([("name", .string("a")), ("status", .string("healthy")), ("lastRun", .double(-1e300))])])),
            ]))])],
            "ListJobs": [VarlinkReply(parameters: [("jobs", .array([.object([
                ("name", .string("docs")), ("kind", .string("mirror")), ("enabled", .bool(true)), ("interval", huge), ("nextRunIn", huge),
            ])]))])],
            "ListSessions": [VarlinkReply(parameters: [("sessions", .array([.object([("id", .string("s1")), ("age", huge)])]))])],
            "ListFixes": [VarlinkReply(parameters: [("fixes", .array([.object([
                ("check", .string("a")), ("outcome", .string("succeeded")), ("time", .double(-1e300)), ("duration", huge),
            ])]))])],
        ])
        let cases: [([String], String)] = [
            (["ping"], "(pid 1, up -)"), (["health"], "taken - ago"), (["jobs"], "docs  mirror  scheduled  -         in -"),
            (["sessions"], "s1"), (["fixes"], "- ago"),
        ]
        for (arguments, expected) in cases {
            let run = try CtlRun.run(["--socket", fake.socket] + arguments)
            #expect(run.code == 0, "\(arguments[0]): \(run.all)")
            #expect(run.output.contains(expected), "\(arguments[0]): \(run.all)")
        }
        #expect(Format.duration(1e300) == "-" && Format.duration(Double(Int.max)) == "-" && Format.fixed(1e300) == "-")
    }
}

extension CtlHostileReplyTests {
    /// A reply that is not a varlink reply (not JSON, not an object, members of the wrong type)
    /// is named as such, exit 69 as for a broken connection: it is neither the daemon refusing
    /// a parameter nor, for an `error` that is not a string, a success.
    @Test(arguments: [
        (#"not json"#, "the reply is not valid JSON: line 1, column 1"),
        (#"[1]"#, "a reply is a JSON object, got array"),
        (#"{"error":5,"parameters":{}}"#, #""error" must be a string, got integer"#),
        (#"{"parameters":[]}"#, #""parameters" must be an object, got array"#),
        (#"{"parameters":{},"continues":"no"}"#, #""continues" must be a boolean, got string"#),
    ])
    func aReplyThatIsNotVarlink_isNamedAsSuch_exit69(reply: String, reason: String) throws {
        let fake = try FakeDaemon(raw: ["Reload": [Array(reply.utf8) + [0]]])
        let run = try CtlRun.run(["--socket", fake.socket, "reload"])
        #expect(run.code == 69, "\(run.all)")
        #expect(run.output.isEmpty, "\(run.all)")
        #expect(run.error.hasPrefix(
            "weavedictl: the reply of io.weavedi.Daemon.Reload from \(fake.socket) is not a valid varlink reply: \(reason)"), "\(run.error)")
        #expect(!run.error.contains("refused"), "\(run.error)")
    }
}

extension CtlHostileReplyTests {
    /// A reply that says more follow (`continues`) to a call that did not ask for more
    /// (varlink allows it only with `more`) ends the call at once instead of waiting for
    /// replies that may never come.
    @Test func aContinuingReplyToACallWithoutMore_exits69_insteadOfWaiting() throws {
        let fake = try FakeDaemon(raw: ["Reload": [Array(#"{"parameters":{},"continues":true}"#.utf8) + [0]]])
        let run = try CtlRun.run(["--socket", fake.socket, "reload"], timeout: .seconds(10))
        #expect(run.code == 69, "\(run.all)")
        #expect(run.error.contains(#"is not a valid varlink reply: "continues" in a reply to a call without "more""#), "\(run.error)")
    }
}

extension CtlHostileReplyTests {
    /// A reply is at most 16 MiB, the most its JSON may have (`JSONLimits.maxBytes`): bytes
    /// beyond that without the NUL that ends a reply are refused as they come, instead of
    /// being kept, and waited for, without end.
    @Test func aReplyLongerThanAnyJSONDocument_exits69_withoutWaitingForItsEnd() throws {
        let limit = JSONLimits().maxBytes
        let fake = try FakeDaemon(raw: ["Ping": [[UInt8](repeating: UInt8(ascii: " "), count: limit + 65_536)]])
        let run = try CtlRun.run(["--socket", fake.socket, "ping"], timeout: .seconds(20))
        #expect(run.code == 69, "\(run.all)")
        #expect(run.error.contains("is not a valid varlink reply: more than \(limit) bytes without the NUL that ends a reply"), "\(run.error)")
    }
}
