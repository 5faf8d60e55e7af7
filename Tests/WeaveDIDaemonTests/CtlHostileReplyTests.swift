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
