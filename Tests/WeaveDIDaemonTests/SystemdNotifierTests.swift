import Testing
import WeaveDIDaemon

/// `NOTIFY_SOCKET` read from a hostile environment: what cannot be used is said once, in a
/// line of reasonable length, and never tried.
@Suite struct SystemdNotifierTests {
    /// An environment variable may hold 128 KiB: the warning quotes its start, not all of it,
    /// and says how long it is.
    @Test(arguments: [("/", "the path is 200001 bytes"), ("@", "the name is 200000 bytes")])
    func aHugeNotifySocket_isQuotedShort(start: String, why: String) throws {
        let value = start + String(repeating: "x", count: 200_000)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": value])
        #expect(!notifier.isEnabled)
        let problem = try #require(notifier.problem)
        #expect(problem.hasPrefix("NOTIFY_SOCKET=\"\(start)xxx"), "\(problem.prefix(300))")
        #expect(problem.contains("...\" (200001 characters) is not usable: \(why), longer than the 107 bytes a Unix socket address holds"),
            "\(problem.prefix(300))")
        #expect(problem.utf8.count < 400, "a warning of \(problem.utf8.count) bytes")
    }
}
