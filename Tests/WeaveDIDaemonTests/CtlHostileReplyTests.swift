import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIDaemon
import WeaveDIPosix
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
            "GetHealth": [VarlinkReply(parameters: [("health", JSONValue.health([
                JSONValue.check.with([("name", .string("a")), ("lastRun", .double(-1e300))]),
            ]).with([("takenAt", .double(-1e300))]))])],
            "ListJobs": [VarlinkReply(parameters: [("jobs", .array([JSONValue.job.with([("interval", huge), ("nextRunIn", huge)])]))])],
            "ListSessions": [VarlinkReply(parameters: [("sessions", .array([JSONValue.session.with([("age", huge)])]))])],
            "ListFixes": [VarlinkReply(parameters: [("fixes", .array([
                JSONValue.fix.with([("check", .string("a")), ("time", .double(-1e300)), ("duration", huge)]),
            ]))])],
        ])
        let cases: [([String], String)] = [
            (["ping"], "(pid 1, up -)"), (["health"], "checked - ago"), (["jobs"], "docs  mirror  scheduled  -         in -"),
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

extension CtlHostileReplyTests {
    /// A daemon that takes the call and never answers (stuck, or a socket whose service never
    /// starts) costs `--timeout`, not for ever: exit 69, naming the call and the wait.
    @Test func aDaemonThatNeverAnswers_endsTheCallAtTheTimeout_exit69() throws {
        let fake = try FakeDaemon(raw: ["Ping": [], "RunJob": [VarlinkReply.progress(files: 1, of: 9, bytes: 1, of: 9).encoded() + [0]]])
        let run = try CtlRun.run(["--socket", fake.socket, "--timeout", "0.5", "ping"])
        #expect(run.code == 69, "\(run.all)")
        #expect(run.error == "weavedictl: no reply to io.weavedi.Daemon.Ping from \(fake.socket) within 0.5 s\n"
            + "The daemon may be stuck, or busy with a call that takes longer: --timeout SECONDS waits longer (0: for ever).\n", "\(run.error)")
        // `version` says so and still exits 0.
        let version = try CtlRun.run(["version", "--timeout=0.5", "--socket", fake.socket])
        #expect(version.code == 0 && version.output.contains("weavedid: not reachable (no reply to io.weavedi.Daemon.Ping"), "\(version.all)")
        // run-job --wait has no limit of its own, but keeps to one given: here the run's
        // progress stops after one update.
        let wait = try CtlRun.run(["--socket", fake.socket, "--timeout", "0.5", "--json", "run-job", "docs", "--wait"])
        #expect(wait.code == 69 && wait.error.hasPrefix("weavedictl: no reply to io.weavedi.Daemon.RunJob"), "\(wait.all)")
        #expect(wait.output.contains(#""filesDone":1"#), "\(wait.all)")
    }

    /// A listener that accepts nothing, its queue full: the connect itself waits `--timeout`.
    @Test func aListenQueueThatStaysFull_endsTheConnectAtTheTimeout_exit69() throws {
        let directory = TemporaryDirectory("weavedictl-full")
        let path = directory.path + "/control.sock"
        let listener = try UnixSocket.listen(at: UnixSocketAddress(path: path), backlog: 0)
        var queued: [FileDescriptor] = []
        defer { for socket in queued { try? socket.close() } }
        // Linux queues one connection past a backlog of 0; the next connect would wait.
        while queued.count < 8, let socket = try? UnixSocket.make(.stream, nonBlocking: true).release() {
            guard (try? socket.connect(to: UnixSocketAddress(path: path))) != nil else {
                try? socket.close()
                break
            }
            queued.append(socket)
        }
        try #require(queued.count < 8, "the listen queue took \(queued.count) connections")
        let run = try CtlRun.run(["--socket", path, "--timeout", "0.5", "ping"])
        #expect(run.code == 69, "\(run.all)")
        #expect(run.error.hasPrefix("weavedictl: cannot connect to \(path): its listen queue stayed full for 0.5 s: the daemon is not accepting connections"),
            "\(run.error)")
        _ = listener
    }

    /// Only 0 waits for ever: a positive wait too short to count in nanoseconds is the
    /// shortest wait, not no limit.
    @Test func aTimeoutTooShortForNanoseconds_isTheShortestWait_notNoLimit() throws {
        var reader = ArgumentReader(["--timeout", "0.0000000001"])
        while let token = reader.next() {
            guard case let .option(name, value) = token else { continue }
            try reader.shared(name, inline: value)
        }
        #expect(reader.options.timeout == .nanoseconds(1))
        #expect(reader.options.replyTimeout() == .nanoseconds(1))
        let fake = try FakeDaemon(raw: ["Ping": []])
        let run = try CtlRun.run(["--socket", fake.socket, "--timeout", "0.0000000001", "ping"], timeout: .seconds(10))
        #expect(run.code == 69 && run.error.hasPrefix("weavedictl: no reply to io.weavedi.Daemon.Ping"), "\(run.all)")
    }

    /// The message says the whole rule: `1e-10` lies between 0 and 86400, but is written with
    /// an exponent, which is not taken.
    @Test(arguments: ["-1", "abc", "1e3", "1e-10", "+5", "90000", "nan", ""])
    func aTimeoutThatIsNoNumberOfSeconds_isAUsageError(value: String) throws {
        let run = try CtlRun.run(["--timeout", value, "ping"])
        #expect(run.code == 64, "\(run.all)")
        let problem = "--timeout needs a number of seconds in decimal digits, such as 30 or 2.5 (no sign, no exponent), "
            + "from 0 (no limit) to 86400; got '\(value)'"
        #expect(run.error.contains(value.isEmpty ? "--timeout needs a non-empty value" : problem), "\(run.error)")
    }
}
