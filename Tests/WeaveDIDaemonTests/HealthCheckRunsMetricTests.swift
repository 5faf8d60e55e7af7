import Foundation
import Glibc
import Testing
import WeaveDIControl
import WeaveDIPosix

/// `weavedi_health_check_runs_total` through the real daemon: `RunChecks` calls on many
/// connections share the runs of a check, and the metric counts the runs, not the calls.
@Suite struct HealthCheckRunsMetricTests {
    /// A library whose `fstatat` of the path `WEAVEDI_TEST_WATCHED` (the control socket, which the
    /// `control.socket` check looks at) waits: the first such call made while the file `first`
    /// exists in the directory `WEAVEDI_TEST_HOLD`, while it exists; any other, while `later`
    /// exists. Each marks that it waits (`held-first`, `held-later`). One call waits at a time
    /// (the runs of a check go one at a time): one made meanwhile goes through, so that runs
    /// started beside the one held, were there any, would not hold the threads of Swift's pool
    /// (the check runs on one; two on two cores) and stall the daemon, but be counted.
    static let holdingTheSocketsLook = #"""
        static int firstTaken, holding;
        static void waitWhile(const char *directory, const char *name) {
          char path[4096], mark[4096];
          snprintf(path, sizeof path, "%s/%s", directory, name);
          snprintf(mark, sizeof mark, "%s/held-%s", directory, name);
          int fd = open(mark, O_WRONLY | O_CREAT, 0600);
          if (fd >= 0) close(fd);
          struct timespec pause = {0, 10000000};
          for (int i = 0; i < 6000 && access(path, F_OK) == 0; i++) nanosleep(&pause, NULL);
        }
        static void hold(const char *path) {
          const char *watched = getenv("WEAVEDI_TEST_WATCHED"), *directory = getenv("WEAVEDI_TEST_HOLD");
          if (!watched || !directory || strcmp(path, watched) != 0) return;
          char first[4096], later[4096];
          snprintf(first, sizeof first, "%s/first", directory);
          snprintf(later, sizeof later, "%s/later", directory);
          if (!__sync_bool_compare_and_swap(&holding, 0, 1)) return;
          if (access(first, F_OK) == 0 && __sync_bool_compare_and_swap(&firstTaken, 0, 1)) waitWhile(directory, "first");
          else if (access(later, F_OK) == 0) waitWhile(directory, "later");
          __sync_lock_release(&holding);
        }
        """#

    /// Twenty-one `RunChecks` calls, each on a connection of its own, while a run of
    /// `control.socket` is held: the one run going is all they start while it is held, and the
    /// callers that came meanwhile share one run after it. That run is held too until its
    /// timeout (2 s), when its callers, and any that came behind it, are answered without
    /// another run; so the calls cost two runs, whenever each reached the check, or one if the
    /// first run passed its own timeout before it was let go (a slow machine), which answers
    /// them all.
    @Test func manyRunChecksCalls_shareTheRunsOfACheck_asWeavediHealthCheckRunsTotalShows() throws {
        let directory = TemporaryDirectory()
        let shim = try PreloadLibrary.holdingFstatat(Self.holdingTheSocketsLook, in: directory)
        let holds = directory.path + "/holds"
        try FileManager.default.createDirectory(atPath: holds, withIntermediateDirectories: true)
        // A connection of its own for each call: more than the 16 a user may have by default.
        let config = directory.write("weavedid.json", #"{"control": {"maxClientsPerUser": 64}}"#)
        let socket = directory.path + "/run/control.sock"
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["LD_PRELOAD": shim, "WEAVEDI_TEST_HOLD": holds, "WEAVEDI_TEST_WATCHED": socket],
            directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.defaultSocket == socket)
        let client = try VarlinkClient(path: socket, timeout: .seconds(30))
        func metrics() throws -> String { try client.call("io.weavedi.Daemon.GetMetrics").parameter("text")?.stringValue ?? "" }
        func sample(_ prefix: String, in text: String) -> Int? {
            text.split(separator: "\n").first { $0.hasPrefix(prefix + " ") }.flatMap { Int($0.dropFirst(prefix.count + 1)) }
        }
        func runs(_ text: String) -> Int? { sample(#"weavedi_health_check_runs_total{check="control.socket"}"#, in: text) }
        let text = try metrics()
        #expect(text.contains("""
            # HELP weavedi_health_check_runs_total Runs of each health check started: once per run, however many callers shared \
            it; a run that timed out counts.
            # TYPE weavedi_health_check_runs_total counter
            """), "\(text)")
        for name in ["control.socket", "daemon.configuration", "container.graph"] {
            #expect(text.contains(#"weavedi_health_check_runs_total{check="\#(name)"} "#), "\(name): \(text)")
        }
        let before = try #require(runs(text), "\(text)")

        directory.write("holds/first", "")
        directory.write("holds/later", "")
        defer {
            unlink(holds + "/first")
            unlink(holds + "/later")
        }
        func exists(_ name: String) -> Bool {
            let deadline = ContinuousClock.now + .seconds(30)
            while access(holds + "/" + name, F_OK) != 0 {
                if ContinuousClock.now >= deadline { return false }
                usleep(10_000)
            }
            return true
        }
        let checks = #"{"tags": ["liveness"]}"#
        let leader = try daemon.sendCall("RunChecks", checks)
        try #require(exists("held-first"), "\(daemon.log)")
        let callers = try (0..<20).map { _ in try daemon.sendCall("RunChecks", checks) }
        // Every call has reached the daemon: answered (the calls metric counts it then) or open
        // (a request of its session), read in that order, so that none counts twice; beside
        // them, ListSessions' own request.
        let arrived = ContinuousClock.now + .seconds(30)
        while true {
            let answered = sample(#"weavedi_control_calls_total{method="io.weavedi.Daemon.RunChecks"}"#, in: try metrics()) ?? 0
            let sessions = try client.call("io.weavedi.Daemon.ListSessions").parameter("sessions")?.arrayValue ?? []
            let open = sessions.compactMap { $0[member: "requests"]?.intValue }.reduce(0, +) - 1
            if answered + open >= 21 { break }
            try #require(ContinuousClock.now < arrived, "\(answered) answered, \(open) open: \(sessions)")
            usleep(10_000)
        }
        #expect(runs(try metrics()) == before + 1, "twenty-one calls, one run going")
        unlink(holds + "/first")
        let deadline = ContinuousClock.now + .seconds(60)
        let replies = ([leader] + callers).map { $0.varlinkReply(timeout: max(.zero, deadline - ContinuousClock.now)) }
        let answers = replies.map { reply in
            reply?.parameter("health")?[member: "checks"]?.arrayValue?.first { $0[member: "name"]?.stringValue == "control.socket" }
        }
        #expect(answers.allSatisfy { $0 != nil }, "\(replies)\n\(daemon.log)")
        // The first call's answer is the held run's result, when it was let go within its
        // timeout (the calls that came meanwhile then shared the run after it), or its timeout:
        // one run for all.
        let released = answers[0]?[member: "status"]?.stringValue == "healthy"
        let after = try #require(runs(try metrics()))
        #expect(after - before == (released ? 2 : 1), "\(after - before) runs for 21 calls; the first: \(String(describing: answers[0]))")
        unlink(holds + "/later")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
