import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// `PauseJob` waits for the write of the state file that holds the pause, for a bounded time:
/// a write that does not end answers `notSaved` before the call times out.
@Suite struct DaemonPauseWriteTimeoutTests {
    /// A write of the state file held (a preloaded `openat` of its temporary file waits while
    /// `hold` exists, as a stalled file system does) gets the pause answered within three
    /// quarters of `control.callTimeout` (2 s here), with the change applied and said not
    /// written yet. Before, the call waited for the write, and timed out.
    @Test func aPauseWhoseWriteDoesNotEnd_isAnsweredNotSaved_beforeTheCallTimesOut() throws {
        let directory = TemporaryDirectory()
        let shim = try PreloadLibrary.holdingOpenat(#"""
            static void hold(const char *path) {
              const char *until = getenv("WEAVEDI_TEST_HOLD");
              if (!until || !strstr(path, ".jobs.json.tmp")) return;
              struct timespec pause = {0, 10000000};
              for (int i = 0; i < 30000 && access(until, F_OK) == 0; i++) nanosleep(&pause, NULL);
            }
            """#, in: directory)
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        let state = directory.path + "/state"
        let config = directory.write("weavedid.json", """
            {"stateDirectory": "\(state)", "control": {"callTimeout": 2}, "sync": {"jobs": [{"name": "docs",
              "source": "\(directory.path)/source", "destination": "\(directory.path)/mirror", "interval": 3600}]}}
            """)
        let hold = directory.path + "/hold"
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["LD_PRELOAD": shim, "WEAVEDI_TEST_HOLD": hold, "WEAVEDI_REGISTRY_AUTO_FIX": "0"],
            directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        // The start's write (the job first seen) is through; the next ones are held.
        #expect(directory.read("state/jobs.json", once: "firstSeenAt") != nil, "\(daemon.log)")
        directory.write("hold", "")
        defer { try? FileManager.default.removeItem(atPath: hold) }
        let reply = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.PauseJob", [("name", .string("docs"))])
        #expect(reply.parameter("notSaved")?.stringValue == "not written yet (the state file's write did not end within 1.5 s)",
            "\(reply)\n\(daemon.log)")
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(job?[member: "paused"] == .bool(true), "\(job.map { "\($0)" } ?? "no job")")
        try? FileManager.default.removeItem(atPath: hold)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
