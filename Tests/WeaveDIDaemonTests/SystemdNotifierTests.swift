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

extension SystemdNotifierTests {
    /// systemd ignores a notification with a NUL byte in it, whole: a `STATUS=` quoting a key of
    /// the configuration file (`"a\u0000"`) made it ignore the `READY=1` sent with it after a
    /// reload. Control characters reach it escaped, newlines as spaces.
    @Test func aNulInAStatus_reachesSystemdEscaped() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": notify.address])
        #expect(notifier.notify("READY=1", "STATUS=a\u{0}b\nc\u{1B}[31m"))
        #expect(notify.wait { $0.hasPrefix("READY=1") })
        #expect(notify.received.last == "READY=1\nSTATUS=a\\u{0}b c\\u{1B}[31m")
    }

    /// The daemon's reload refused for a key with a NUL in it: its `READY=1` holds no NUL.
    @Test func aReloadRefusedForAKeyWithANul_isReadyForSystemd() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let config = directory.write("weavedid.json", #"{"shutdownTimeout": 5}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        directory.write("weavedid.json", #"{"a\u0000": 1}"#)
        daemon.send(.hangup)
        #expect(notify.wait { $0.contains("reload refused") }, "\(daemon.log)")
        let refused = try #require(notify.received.last { $0.contains("reload refused") })
        #expect(refused.hasPrefix("READY=1\nSTATUS=running; reload refused: "), "\(refused)")
        #expect(!refused.unicodeScalars.contains("\u{0}"), "\(refused.debugDescription)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }
}

extension SystemdNotifierTests {
    /// systemd ignores a notification of 4096 bytes or more, whole: a `STATUS=` quoting long
    /// paths is cut short, so that the `READY=1` sent with it arrives.
    @Test func aLongStatus_isCutShort_soThatTheNotificationArrives() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": notify.address])
        let status = "STATUS=running; reload refused: /" + String(repeating: "é", count: 6000)
        #expect(notifier.notify("READY=1", status))
        #expect(notify.wait { $0.hasPrefix("READY=1") })
        let message = try #require(notify.received.last)
        #expect(message.utf8.count <= 4000, "a notification of \(message.utf8.count) bytes")
        #expect(message.utf8.count > 3990, "a notification of \(message.utf8.count) bytes")
        #expect(message.hasPrefix("READY=1\nSTATUS=running; reload refused: /éé"))
        #expect(message.hasSuffix("éé..."))
        // Short ones go out as they are.
        #expect(notifier.notify("READY=1", "STATUS=running"))
        #expect(notify.wait { $0 == "READY=1\nSTATUS=running" })
    }
}
