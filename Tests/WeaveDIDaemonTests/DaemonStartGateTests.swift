import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Calls made while the daemon starts: the control server is the first service up, so a
/// client (the one whose connection started a socket-activated daemon, above all) reaches it
/// before the jobs and the health checks exist. A call that reads those waits for the start to
/// be over instead of being answered from a half-built picture ("healthy", "no jobs"); `Ping`
/// is answered at once.
@Suite struct DaemonStartGateTests {
    /// A daemon whose start is held at the read of its jobs' state file (the sync scheduler's
    /// start, after the control server's) until the test releases it: a preloaded `openat` of a
    /// path ending in `/jobs.json` creates `reached` and waits while `hold` exists.
    struct HeldStart {
        let directory = TemporaryDirectory()
        let daemon: DaemonProcess
        var reached: String { directory.path + "/reached" }
        var hold: String { directory.path + "/hold" }

        /// A daemon whose start is held; with `holdingRuns`, the job's source holds a file
        /// `jobs.json` whose read by a run is held too, until the test removes `holdRun`.
        init(callTimeout: Double = 10, holdingRuns: Bool = false) throws {
            let shim = try PreloadLibrary.holdingOpenat(#"""
                static int endsWith(const char *path, const char *suffix) {
                  size_t length = strlen(path), count = strlen(suffix);
                  return length >= count && strcmp(path + length - count, suffix) == 0;
                }
                static void hold(const char *path) {
                  // The state file is opened by its whole path; a run's copy opens the source's
                  // jobs.json by its name in the source's directory: held while
                  // WEAVEDI_TEST_HOLD_RUN exists.
                  int run = strcmp(path, "jobs.json") == 0;
                  if (!run && !endsWith(path, "/jobs.json")) return;
                  const char *reached = getenv(run ? "WEAVEDI_TEST_RUN_REACHED" : "WEAVEDI_TEST_REACHED");
                  const char *until = getenv(run ? "WEAVEDI_TEST_HOLD_RUN" : "WEAVEDI_TEST_HOLD");
                  if (!reached || !until) return;
                  close(creat(reached, 0644));
                  struct timespec pause = {0, 10000000};
                  for (int i = 0; i < 30000 && access(until, F_OK) == 0; i++) nanosleep(&pause, NULL);
                }
                """#, in: directory)
            try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
            if holdingRuns {
                directory.write("source/jobs.json", "{}")
                directory.write("hold-run", "")
            }
            let config = directory.write("weavedid.json", """
                {"control": {"callTimeout": \(callTimeout)}, "sync": {"jobs": [{"name": "docs", "source": "\(directory.path)/source",
                  "destination": "\(directory.path)/mirror", "interval": 3600}]}}
                """)
            directory.write("hold", "")
            daemon = try DaemonProcess(
                ["--config", config],
                environment: [
                    "LD_PRELOAD": shim, "WEAVEDI_TEST_REACHED": directory.path + "/reached", "WEAVEDI_TEST_HOLD": directory.path + "/hold",
                    "WEAVEDI_TEST_RUN_REACHED": directory.path + "/run-reached", "WEAVEDI_TEST_HOLD_RUN": directory.path + "/hold-run",
                    "WEAVEDID_LOG": "info,control=debug", "WEAVEDI_REGISTRY_AUTO_FIX": "0",
                ],
                directory: directory)
        }

        /// Waits until the start is held with the control socket up (`Ping` answers).
        func waitUntilHeld() throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while !fileExists(reached), ContinuousClock.now < deadline, daemon.wait(timeout: .milliseconds(10)) == nil {}
            try #require(fileExists(reached), "the start was not seen at the state file's read\n\(daemon.log)")
            while !fileExists(daemon.defaultSocket), ContinuousClock.now < deadline { usleep(10_000) }
        }

        func release() {
            try? FileManager.default.removeItem(atPath: hold)
            try? FileManager.default.removeItem(atPath: directory.path + "/hold-run")
        }

        /// Lets the start go on; runs stay held.
        func releaseStart() { try? FileManager.default.removeItem(atPath: hold) }
    }

    /// A call that waited for the start, then ran out of what was left of its time, is told
    /// the limit it had in all, `control.callTimeout`, as configured: not the rest after the
    /// wait, which weavedictl would show as the daemon's callTimeout.
    @Test func aCallThatWaitedForTheStart_thenTimedOut_reportsTheConfiguredCallTimeout() throws {
        let held = try HeldStart(callTimeout: 2, holdingRuns: true)
        defer { held.release() }
        try held.waitUntilHeld()
        let daemon = held.daemon
        let client = try RawClient(daemon.defaultSocket)
        try client.send(call("io.weavedi.Daemon.RunJob", #"{"name":"docs"}"#))
        _ = daemon.waitForLog("io.weavedi.Daemon.RunJob waits for the daemon's start to finish")
        held.releaseStart()
        // The run is held at its open of the source's jobs.json until the reply has come.
        let reply = try #require(client.reply(), "\(daemon.log)")
        #expect(reply == #"{"error":"io.weavedi.Daemon.CallTimedOut","parameters":{"method":"io.weavedi.Daemon.RunJob","seconds":2.0}}"#,
                "\(daemon.log)")
        held.release()
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// `GetHealth`, `ListJobs` and `GetMetrics` sent while the start is held are answered once
    /// it is over, with the jobs and their checks; `Ping` is answered at once, start or not.
    @Test func callsDuringTheStart_waitForIt_pingDoesNot() throws {
        let held = try HeldStart()
        defer { held.release() }
        try held.waitUntilHeld()
        let daemon = held.daemon

        let ping = try RawClient(daemon.defaultSocket)
        try ping.send(call("io.weavedi.Daemon.Ping"))
        let pong = try #require(ping.reply(), "no Ping reply while starting\n\(daemon.log)")
        #expect(pong.contains(#""version""#), "\(pong)")
        #expect(!daemon.log.contains("ready;"), "\(daemon.log)")

        let client = try RawClient(daemon.defaultSocket)
        try client.send(call("io.weavedi.Daemon.GetHealth") + call("io.weavedi.Daemon.ListJobs") + call("io.weavedi.Daemon.GetMetrics"))
        // The daemon's own word that the calls wait (a daemon that answered at once has already
        // replied: the replies below then show the start half done).
        _ = daemon.waitForLog("io.weavedi.Daemon.GetHealth waits for the daemon's start to finish")
        held.release()

        let health = try JSONValue.parse(Array(try #require(client.reply(), "\(daemon.log)").utf8))
        let checks = health[member: "parameters"]?[member: "health"]?[member: "checks"]?.arrayValue ?? []
        #expect(checks.contains { $0[member: "name"]?.stringValue == "job.docs" }, "\(health)")
        let jobs = try JSONValue.parse(Array(try #require(client.reply(), "\(daemon.log)").utf8))
        #expect(jobs[member: "parameters"]?[member: "jobs"]?.arrayValue?.first?[member: "name"]?.stringValue == "docs", "\(jobs)")
        let metrics = try #require(client.reply(), "\(daemon.log)")
        #expect(metrics.contains(#"job=\"docs\""#), "\(metrics)")
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")

        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A start that a shutdown ends answers the calls waiting for it with `NotReady`, saying
    /// so, rather than leaving them to their time limit or answering from what never started.
    @Test func callsDuringAStartThatAShutdownEnds_areToldTheDaemonIsStopping() throws {
        let held = try HeldStart()
        defer { held.release() }
        try held.waitUntilHeld()
        let daemon = held.daemon

        let client = try RawClient(daemon.defaultSocket)
        try client.send(call("io.weavedi.Daemon.ListJobs"))
        _ = daemon.waitForLog("io.weavedi.Daemon.ListJobs waits for the daemon's start to finish")
        daemon.send(.terminate)
        let reply = try #require(client.reply(), "\(daemon.log)")
        #expect(reply.contains(#""error":"io.weavedi.Daemon.NotReady""#), "\(reply)")
        #expect(reply.contains("the daemon is stopping (SIGTERM from pid"), "\(reply)")
        held.release()
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
