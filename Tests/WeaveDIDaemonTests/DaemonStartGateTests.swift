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

        init() throws {
            let shim = try PreloadLibrary.build(#"""
                #define _GNU_SOURCE
                #include <dlfcn.h>
                #include <fcntl.h>
                #include <stdarg.h>
                #include <stdlib.h>
                #include <string.h>
                #include <time.h>
                #include <unistd.h>
                static void hold(const char *path) {
                  size_t length = strlen(path), suffix = strlen("/jobs.json");
                  if (length < suffix || strcmp(path + length - suffix, "/jobs.json") != 0) return;
                  const char *reached = getenv("WEAVEDI_TEST_REACHED"), *until = getenv("WEAVEDI_TEST_HOLD");
                  if (!reached || !until) return;
                  close(creat(reached, 0644));
                  struct timespec pause = {0, 10000000};
                  for (int i = 0; i < 30000 && access(until, F_OK) == 0; i++) nanosleep(&pause, NULL);
                }
                int openat(int directory, const char *path, int flags, ...) {
                  static int (*next)(int, const char *, int, ...);
                  if (!next) next = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
                  va_list arguments; va_start(arguments, flags); mode_t mode = va_arg(arguments, mode_t); va_end(arguments);
                  hold(path);
                  return next(directory, path, flags, mode);
                }
                int openat64(int directory, const char *path, int flags, ...) {
                  static int (*next)(int, const char *, int, ...);
                  if (!next) next = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat64");
                  va_list arguments; va_start(arguments, flags); mode_t mode = va_arg(arguments, mode_t); va_end(arguments);
                  hold(path);
                  return next(directory, path, flags, mode);
                }
                """#, in: directory, slowing: "openat")
            try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
            let config = directory.write("weavedid.json", """
                {"sync": {"jobs": [{"name": "docs", "source": "\(directory.path)/source",
                  "destination": "\(directory.path)/mirror", "interval": 3600}]}}
                """)
            directory.write("hold", "")
            daemon = try DaemonProcess(
                ["--config", config],
                environment: [
                    "LD_PRELOAD": shim, "WEAVEDI_TEST_REACHED": directory.path + "/reached", "WEAVEDI_TEST_HOLD": directory.path + "/hold",
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

        func release() { try? FileManager.default.removeItem(atPath: hold) }
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
