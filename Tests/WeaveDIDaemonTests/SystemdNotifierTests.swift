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

extension SystemdNotifierTests {
    /// An address that can never work, as `sd_notify(3)` reads `NOTIFY_SOCKET` (a relative
    /// path, an `AF_VSOCK` address, a bare `@` or `/`), is said once and never tried: nothing is
    /// kept to be sent again, so the main loop does not try it every second for good.
    @Test(arguments: [
        ("notify.sock", "it is a relative path"),
        ("run/systemd/notify", "it is a relative path"),
        ("vsock:2:1234", "it is an AF_VSOCK address, and the daemon notifies over Unix sockets only"),
        ("vsock-dgram:2:1234", "it is an AF_VSOCK address, and the daemon notifies over Unix sockets only"),
        ("@", "the abstract name is empty"),
        ("/", "it is the root directory"),
    ])
    func anAddressThatCanNeverWork_isGivenUp(value: String, why: String) throws {
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": value])
        #expect(!notifier.isEnabled)
        #expect(notifier.problem == "NOTIFY_SOCKET=\"\(value)\" is not usable: \(why); no notifications are sent to systemd "
            + "(NOTIFY_SOCKET takes an absolute path or an abstract name, @name)")
        #expect(!notifier.notify("READY=1"))
        #expect(!notifier.hasPending)
    }

    /// The daemon says so once, at start, and goes on without systemd.
    @Test func theDaemon_warnsOnceOfAnAddressThatCanNeverWork() throws {
        let directory = TemporaryDirectory()
        let daemon = try DaemonProcess(environment: ["NOTIFY_SOCKET": "vsock:2:1234"], directory: directory)
        try #require(daemon.waitForLog("ready; control socket"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        #expect(daemon.log.split(separator: "\n").filter { $0.contains("NOTIFY_SOCKET") }.count == 1, "\(daemon.log)")
        #expect(daemon.log.contains(#"warning daemon: NOTIFY_SOCKET="vsock:2:1234" is not usable: it is an AF_VSOCK address"#),
            "\(daemon.log)")
    }
}
