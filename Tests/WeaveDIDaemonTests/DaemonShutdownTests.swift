import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// A second stop signal during a shutdown does not cut it short; a shutdown longer than
/// `shutdownTimeout` is, and removes the socket file all the same. Both need a shutdown in
/// progress when something else happens.
@Suite struct DaemonShutdownTests {
    /// The size of a file whose copy `CopyGate` holds when the shutdown comes: sparse, so it
    /// costs nothing to make, and 32 MiB: 4 copy chunks, a cancelled copy stops between two,
    /// and 37 s held before the run's walk watch fails it.
    static let heldSize: off_t = 32 << 20

    /// A daemon whose job's run is held (`CopyGate`) in the copy of `slow-big.bin` when this
    /// returns: a shutdown then finds it under way, on any file system. A shutdown cut short
    /// ends the daemon with the copy still held; the test releases it otherwise.
    func busyDaemon(shutdownTimeout: Double = 10) throws -> (DaemonProcess, TemporaryDirectory, CopyGate) {
        let directory = TemporaryDirectory()
        let gate = try CopyGate.build(in: directory)
        let big = directory.write("source/slow-big.bin", "")
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        try #require(truncate(big, Self.heldSize) == 0, "truncate: \(Errno.current)")
        let config = directory.write("weavedid.json", """
            {"shutdownTimeout": \(shutdownTimeout), "sync": {"jobs": [{"name": "big", "source": "\(directory.path)/source",
              "destination": "\(directory.path)/mirror", "interval": 3600, "runAtStart": true}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], environment: gate.environment, directory: directory)
        try #require(daemon.waitForLog("run big-1 started"), "\(daemon.log)")
        try #require(gate.waitForReached("slow-big.bin"), "\(daemon.log)")
        return (daemon, directory, gate)
    }

    /// Where the second stop signal of `secondStopSignal_doesNotCutTheShutdownShort` goes.
    enum SecondSignal: String, CaseIterable, Sendable {
        /// SIGTERM again, to the daemon (`kill PID` twice).
        case terminateToProcess
        /// SIGTERM again, to the daemon's process group, as `timeout(1)` sends it after the one
        /// to its child.
        case terminateToGroup
        /// SIGINT after the SIGTERM (Ctrl-C in a terminal while it stops).
        case interruptToProcess
    }

    /// A stop signal while the daemon stops does not cut the shutdown short: it is said, and
    /// the shutdown goes on to its end: the run is cancelled and its end written to the state
    /// file, the socket file removed, exit 0, with the log in time order and `stopped` its last
    /// line. The shutdown is held (the run's scan waits in `lstat` on a preloaded library,
    /// until the run is given up on) while the second signal is sent with the daemon stopped
    /// (SIGSTOP): it is read once the first was, during the shutdown.
    /// (Parameterized: a test case cancelled is reported passed, so the condition is a trait.)
    @Test(.enabled(if: PreloadLibrary.isPossible, "needs a C compiler (cc) to build the library that slows lstat"),
          arguments: SecondSignal.allCases)
    func secondStopSignal_doesNotCutTheShutdownShort(second: SecondSignal) throws {
        let directory = TemporaryDirectory()
        let shim = try PreloadLibrary.holdingFstatat(#"""
            /* An lstat of a name starting with "hold-" says so in WEAVEDI_TEST_HELD, then waits
               while the file WEAVEDI_TEST_HOLD exists. */
            static void hold(const char *path) {
              const char *name = strrchr(path, '/');
              if (strncmp(name ? name + 1 : path, "hold-", 5) != 0) return;
              const char *held = getenv("WEAVEDI_TEST_HELD"), *until = getenv("WEAVEDI_TEST_HOLD");
              if (!held || !until) return;
              close(open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
              struct timespec pause = {0, 10000000};
              while (access(until, F_OK) == 0) nanosleep(&pause, NULL);
            }
            """#, in: directory)
        directory.write("source/hold-1", "x")
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        let (held, hold) = (directory.path + "/held", directory.write("hold", ""))
        let config = directory.write("weavedid.json", """
            {"shutdownTimeout": 600, "sync": {"jobs": [{"name": "docs", "source": "\(directory.path)/source",
              "destination": "\(directory.path)/mirror", "interval": 3600, "runAtStart": true}]}}
            """)
        // setsid: the daemon leads a process group of its own, which the test may signal.
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["LD_PRELOAD": shim, "WEAVEDI_TEST_HELD": held, "WEAVEDI_TEST_HOLD": hold],
            directory: directory, wrapper: ["setsid"])
        defer { try? FileManager.default.removeItem(atPath: hold) }
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let deadline = ContinuousClock.now + .seconds(30)
        while !fileExists(held), ContinuousClock.now < deadline { usleep(10_000) }
        try #require(fileExists(held), "the run's scan was not seen under way\n\(daemon.log)")
        #expect(fileExists(daemon.defaultSocket))

        daemon.send(.terminate)
        try #require(daemon.waitUntilSignalTaken(.terminate), "\(daemon.log)")
        daemon.send(.stop)
        switch second {
        case .terminateToProcess: daemon.send(.terminate)
        case .terminateToGroup: try Signal.terminate.send(to: -daemon.pid)
        case .interruptToProcess: daemon.send(.interrupt)
        }
        daemon.send(.continue)
        let name = second == .interruptToProcess ? "SIGINT" : "SIGTERM"
        let said = "\(name) from pid \(getpid()) while stopping: the shutdown goes on (within shutdownTimeout, 600.0 seconds); "
            + "SIGKILL ends the daemon at once, without its cleanup"
        let waitDeadline = ContinuousClock.now + .seconds(30)
        while !daemon.log.contains(said), daemon.wait(timeout: .milliseconds(20)) == nil, ContinuousClock.now < waitDeadline {}
        #expect(daemon.log.contains(said), "\(daemon.log)")
        try? FileManager.default.removeItem(atPath: hold)

        #expect(daemon.wait(timeout: .seconds(120)) == .exited(0), "\(daemon.log)")
        #expect(!fileExists(daemon.defaultSocket), "the socket file was left behind\n\(daemon.log)")
        let saved = try JSONValue.parse(Array(FileManager.default.contents(atPath: directory.path + "/state/jobs.json") ?? Data()))
        // The run's end was written: a clean shutdown leaves no run said going (a cut one
        // would leave docs-1 going, and the next start would call it a crash).
        #expect(saved[member: "lastRunNumber"]?.intValue == 1, "\(saved)")
        #expect(saved[member: "jobs"]?[member: "docs"]?[member: "runGoing"]?.isNull == true, "\(saved)")
        Self.expectInTimeOrder(daemon.log, lastLine: "notice  daemon: stopped")
    }

    /// Each line of `log` starts with a timestamp no earlier than the line before's, and the last
    /// line ends with `lastLine`.
    static func expectInTimeOrder(_ log: String, lastLine: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = log.split(separator: "\n")
        let stamps = lines.map { $0.prefix(while: { $0 != " " }) }
        #expect(stamps.allSatisfy { $0.count == 24 && $0.hasSuffix("Z") }, "\(log)", sourceLocation: sourceLocation)
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 <= $1 }, "lines out of time order:\n\(log)", sourceLocation: sourceLocation)
        #expect(lines.last?.hasSuffix(lastLine) == true, "\(log)", sourceLocation: sourceLocation)
    }

    @Test func shutdownOverrunningItsTimeout_isCutShort() throws {
        // One millisecond: stopping the services and cancelling the copy in flight takes longer.
        let (daemon, _, gate) = try busyDaemon(shutdownTimeout: 0.001)
        defer { gate.release("slow-big.bin") }
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(1))
        // The socket file goes all the same, and nothing is written after the line that says so.
        let socket = JSONValue.quotedPathForMessage(daemon.defaultSocket)
        Self.expectInTimeOrder(daemon.log, lastLine: "error   daemon: shutdown did not finish within 0.001 seconds; exiting (removed \(socket))")
        #expect(!fileExists(daemon.defaultSocket), "the socket file was left behind\n\(daemon.log)")
    }

    /// `shutdownTimeout` is one of the fields a reload applies: the shutdown after it keeps to
    /// the new one.
    @Test func aReloadedShutdownTimeout_isTheOneTheShutdownKeepsTo() throws {
        let (daemon, directory, gate) = try busyDaemon(shutdownTimeout: 3600)
        defer { gate.release("slow-big.bin") }
        let config = try String(contentsOfFile: directory.path + "/weavedid.json", encoding: .utf8)
        directory.write("weavedid.json", config.replacingOccurrences(of: #""shutdownTimeout": 3600.0"#, with: #""shutdownTimeout": 0.001"#))
        daemon.send(.hangup)
        try #require(daemon.waitForLog("configuration reloaded"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(1), "\(daemon.log)")
        #expect(daemon.log.contains("shutdown did not finish within 0.001 seconds; exiting"), "\(daemon.log)")
    }

    /// The shutdown stops the runs first; the control socket closes only once the calls in
    /// flight have been answered, so a client waiting on a run hears how it ended. Each round
    /// asks on three connections: a plain call, a stream (`more`), and a call with a second one
    /// pipelined behind it.
    @Test(arguments: 1...3) func callsInFlightAtAShutdown_areAnsweredBeforeTheSocketCloses(round: Int) throws {
        let directory = TemporaryDirectory()
        let gate = try CopyGate.build(in: directory)
        let names = ["plain", "streaming", "pipelined"]
        let held = names.map { "slow-\($0).bin" }
        defer { for name in held { gate.release(name) } }
        var jobs: [String] = []
        for name in names {
            let big = directory.write("source-\(name)/slow-\(name).bin", "")
            try FileManager.default.createDirectory(atPath: directory.path + "/mirror-\(name)", withIntermediateDirectories: true)
            try #require(truncate(big, Self.heldSize) == 0, "truncate: \(Errno.current)")
            jobs.append(#"{"name": "\#(name)", "source": "\#(directory.path)/source-\#(name)", "destination": "\#(directory.path)/mirror-\#(name)", "interval": 3600}"#)
        }
        let config = directory.write("weavedid.json", #"{"sync": {"maxConcurrentRuns": 3, "jobs": [\#(jobs.joined(separator: ", "))]}}"#)
        var environment = gate.environment
        environment["WEAVEDID_LOG"] = "info,daemon=debug"  // says when it stops its sync service
        let daemon = try DaemonProcess(["--config", config], environment: environment, directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")

        let plain = try RawClient(daemon.defaultSocket)
        try plain.send(call("io.weavedi.Daemon.RunJob", #"{"name": "plain"}"#))
        let streaming = try RawClient(daemon.defaultSocket)
        try streaming.send(call("io.weavedi.Daemon.RunJob", #"{"name": "streaming"}"#, extra: #","more":true"#))
        let pipelined = try RawClient(daemon.defaultSocket)
        try pipelined.send(call("io.weavedi.Daemon.RunJob", #"{"name": "pipelined"}"#) + call("io.weavedi.Daemon.Ping"))
        for name in held { try #require(gate.waitForReached(name), "\(daemon.log)") }
        daemon.send(.terminate)
        // Held until the shutdown is stopping the runs: they end cancelled, at a safe point.
        try #require(daemon.waitForLog("stopping sync"), "\(daemon.log)")
        for name in held { gate.release(name) }

        func decoded(_ text: String?) -> VarlinkReply? { text.flatMap { try? VarlinkReply.decode(Array($0.utf8)) } }
        func result(_ reply: VarlinkReply?) -> String? { reply?.parameter("run")?[member: "result"]?.stringValue }
        let answer = decoded(plain.reply())
        #expect(result(answer) == "cancelled", "\(answer as Any)\n\(daemon.log)")
        var last = decoded(streaming.reply())
        while last?.continues == true { last = decoded(streaming.reply()) }
        #expect(result(last) == "cancelled", "\(last as Any)\n\(daemon.log)")
        let first = decoded(pipelined.reply())
        #expect(result(first) == "cancelled", "\(first as Any)\n\(daemon.log)")
        // The call behind it was read before the shutdown, and is answered in its turn.
        let ping = decoded(pipelined.reply())
        #expect(ping != nil && ping?.error == nil, "\(ping as Any)\n\(daemon.log)")
        for client in [plain, streaming, pipelined] { #expect(client.closedByPeer()) }
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
