import Foundation
import Testing
import WeaveDIPosix

/// A second signal during a shutdown exits at once; a shutdown longer than `shutdownTimeout`
/// is cut short. Both need a shutdown in progress when something else happens, made
/// deterministic by stopping the daemon (SIGSTOP) while the signals are sent.
@Suite struct DaemonShutdownTests {
    /// A daemon whose job is copying a 1 GiB file (seconds of work: the copy is written and
    /// flushed to disk) when this returns. The source is allocated, not written, so it costs
    /// nothing to make.
    func busyDaemon(shutdownTimeout: Double = 10) throws -> (DaemonProcess, TemporaryDirectory) {
        let directory = TemporaryDirectory()
        let big = directory.write("source/big.bin", "")
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        let allocated = try Subprocess.run("/usr/bin/fallocate", arguments: ["-l", "1G", big], environment: [:])
        try #require(allocated.status == .exited(0), "fallocate: \(allocated.standardErrorText)")
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
}
