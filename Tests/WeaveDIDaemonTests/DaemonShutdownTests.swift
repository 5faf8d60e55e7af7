import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// A second signal during a shutdown exits at once; a shutdown longer than `shutdownTimeout`
/// is cut short. Both need a shutdown in progress when something else happens, made
/// deterministic by stopping the daemon (SIGSTOP) while the signals are sent.
@Suite struct DaemonShutdownTests {
    /// The size of the file whose copy is under way when the shutdown comes: sparse, so it
    /// takes no disk space, and large enough that no disk copies it (zeros written out in
    /// full) in the moments before the signal.
    static let sparseSize: Int = 8 << 30

    /// A daemon whose job is copying a sparse 8 GiB file (`sparseSize`: seconds of work, as the
    /// copy's zeros are written out) when this returns. The source costs nothing to make; the
    /// copy stops at the shutdown, and its temporary file goes.
    func busyDaemon(shutdownTimeout: Double = 10) throws -> (DaemonProcess, TemporaryDirectory) {
        let directory = TemporaryDirectory()
        let big = directory.write("source/big.bin", "")
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        try #require(truncate(big, Self.sparseSize) == 0, "truncate: \(Errno.current)")
        let config = directory.write("weavedid.json", """
            {"shutdownTimeout": \(shutdownTimeout), "sync": {"jobs": [{"name": "big", "source": "\(directory.path)/source",
              "destination": "\(directory.path)/mirror", "interval": 3600, "runAtStart": true}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("run big-1 started"), "\(daemon.log)")
        usleep(100_000)
        return (daemon, directory)
    }

    @Test func secondSignal_exitsAtOnce() throws {
        let (daemon, directory) = try busyDaemon()
        // Stopped, the daemon cannot act on the first signal before the second arrives: both
        // are pending when it continues, and it reads them in one go, lowest number first
        // (signalfd's order): SIGINT starts the shutdown, SIGTERM is the second signal.
        daemon.send(.stop)
        daemon.send(.terminate)
        daemon.send(.interrupt)
        daemon.send(.continue)
        #expect(daemon.wait() == .exited(128 + 15))
        #expect(daemon.log.contains("second SIGTERM; exiting at once"))
        #expect(!fileExists(directory.path + "/mirror/big.bin"))  // the copy was never published
    }

    @Test func shutdownOverrunningItsTimeout_isCutShort() throws {
        // One millisecond: stopping the services and cancelling the copy in flight takes longer.
        let (daemon, _) = try busyDaemon(shutdownTimeout: 0.001)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(1))
        #expect(daemon.log.contains("shutdown did not finish within 0.001 seconds; exiting"), "\(daemon.log)")
    }

    /// `shutdownTimeout` is one of the fields a reload applies: the shutdown after it keeps to
    /// the new one.
    @Test func aReloadedShutdownTimeout_isTheOneTheShutdownKeepsTo() throws {
        let (daemon, directory) = try busyDaemon(shutdownTimeout: 3600)
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
        let names = ["plain", "streaming", "pipelined"]
        var jobs: [String] = []
        for name in names {
            let big = directory.write("source-\(name)/big.bin", "")
            try FileManager.default.createDirectory(atPath: directory.path + "/mirror-\(name)", withIntermediateDirectories: true)
            try #require(truncate(big, Self.sparseSize) == 0, "truncate: \(Errno.current)")
            jobs.append(#"{"name": "\#(name)", "source": "\#(directory.path)/source-\#(name)", "destination": "\#(directory.path)/mirror-\#(name)", "interval": 3600}"#)
        }
        let config = directory.write("weavedid.json", #"{"sync": {"maxConcurrentRuns": 3, "jobs": [\#(jobs.joined(separator: ", "))]}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")

        let plain = try RawClient(daemon.defaultSocket)
        try plain.send(call("io.weavedi.Daemon.RunJob", #"{"name": "plain"}"#))
        let streaming = try RawClient(daemon.defaultSocket)
        try streaming.send(call("io.weavedi.Daemon.RunJob", #"{"name": "streaming"}"#, extra: #","more":true"#))
        let pipelined = try RawClient(daemon.defaultSocket)
        try pipelined.send(call("io.weavedi.Daemon.RunJob", #"{"name": "pipelined"}"#) + call("io.weavedi.Daemon.Ping"))
        for name in names { try #require(daemon.waitForLog("run \(name)-"), "\(daemon.log)") }
        usleep(100_000)
        daemon.send(.terminate)

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
