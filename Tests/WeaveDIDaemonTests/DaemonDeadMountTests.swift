import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// The real daemon with a mirror root on a file system that stops answering (`DeadMount`, as a
/// hard NFS mount whose server is gone): a run's start and a job's fix give up on it after 5 s,
/// naming the path, while the daemon goes on answering and stops normally, at once.
@Suite struct DaemonDeadMountTests {
    /// A daemon in a mount namespace of its own, with mirror jobs `one` and `two` from
    /// `@/src-NAME` into `@/nfs/NAME`, and the dead mount on `@/nfs` once it runs.
    final class Setup {
        let directory = TemporaryDirectory()
        let daemon: DaemonProcess
        let mount: DeadMount
        var d: String { directory.path }

        /// Where no dead mount can be made, cancels the test (skipped), saying why.
        /// With `stateOnTheMount`, the state directory is `@/nfs/state`: it answers at the start,
        /// and dies with the mount. With `localJob`, a third job, `local`, mirrors `@/src-local`
        /// into `@/local`, off the mount.
        init(
            sources: Bool = true, stateOnTheMount: Bool = false, localJob: Bool = false, environment: [String: String] = [:],
            healthLoop: Bool = false
        ) throws {
            try DeadMount.requireSupport()
            let wrapper = try #require(MountNamespace.wrapper())
            let d = directory.path
            for name in ["one", "two"] {
                if sources { directory.write("src-\(name)/\(name).txt", name) }
                try FileManager.default.createDirectory(atPath: "\(d)/nfs/\(name)", withIntermediateDirectories: true)
            }
            let state = stateOnTheMount ? #""stateDirectory": "\#(d)/nfs/state", "# : ""
            let health = healthLoop ? #""health": {"interval": 0.2}, "# : ""
            var local = ""
            if localJob {
                directory.write("src-local/local.txt", "local")
                try FileManager.default.createDirectory(atPath: "\(d)/local", withIntermediateDirectories: true)
                local = #",\#n  {"name": "local", "source": "\#(d)/src-local", "destination": "\#(d)/local", "interval": 3600}"#
            }
            let config = directory.write("weavedid.json", """
                {\(state)\(health)"sync": {"jobs": [
                  {"name": "one", "source": "\(d)/src-one", "destination": "\(d)/nfs/one", "interval": 3600},
                  {"name": "two", "source": "\(d)/src-two", "destination": "\(d)/nfs/two", "interval": 3600}\(local)]}}
                """)
            var environment = environment
            if healthLoop { environment["WEAVEDI_REGISTRY_AUTO_HEALTH"] = "1" }
            daemon = try DaemonProcess(["--config", config], environment: environment, directory: directory, wrapper: wrapper)
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            mount = try DeadMount(at: "\(d)/nfs", inNamespaceOf: daemon.pid, scratch: directory)
        }

        /// Sends a call on a connection of its own; `reply(_:)` reads its answer.
        func send(_ method: String, _ parameters: String = "{}") throws -> RawClient {
            try daemon.sendCall(method, parameters)
        }

        /// The call's reply, or nil when none came within `timeout`: generous by default, for a
        /// busy machine; what must come sooner is bounded by what the daemon does (its 5 s step
        /// limit, a log line not yet written).
        func reply(_ client: RawClient, timeout: Duration = .seconds(20)) -> VarlinkReply? {
            client.varlinkReply(timeout: timeout)
        }

        /// The daemon's threads stuck on the mount (`DeadMount.threadsWaiting`), once the count
        /// is `expected`, or after 10 s.
        func threadsWaitingOnTheMount(expected: Int) -> Int {
            DeadMount.threadsWaiting(in: daemon.pid, expected: expected)
        }
    }

    /// `for 3 s` written `for N s`.
    static func sanitized(_ text: String?) -> String? {
        text?.replacing(/for [0-9]+ s/) { _ in "for N s" }
    }

    @Test func runsWhoseDestinationDoesNotAnswer_failNamingIt_whileTheDaemonGoesOn() throws {
        // No auto-fix: it would try the destination too (see the last test).
        let setup = try Setup(environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"])
        let d = setup.d
        // Two runs stuck at once: as many as Swift's pool has threads on two cores.
        let one = try setup.send("RunJob", #"{"name": "one"}"#)
        #expect(setup.daemon.waitForLog("run one-1 started"), "\(setup.daemon.log)")
        let two = try setup.send("RunJob", #"{"name": "two"}"#)
        #expect(setup.daemon.waitForLog("run two-2 started"), "\(setup.daemon.log)")
        // Meanwhile the daemon answers a call that needs the pool (the scheduler's actor): before
        // the runs' 5 s are out, when their threads are left behind, and the log says so (a run
        // that held a thread of the pool would let it go only then).
        let paused = setup.reply(try setup.send("PauseJob", #"{"name": "one"}"#))
        #expect(paused != nil && paused?.error == nil, "\(setup.daemon.log)")
        #expect(!setup.daemon.log.contains("left behind"), "\(setup.daemon.log)")
        for (name, client) in [("one", one), ("two", two)] {
            let run = setup.reply(client)?.parameter("run")
            #expect(run?[member: "result"]?.stringValue == "failed", "\(setup.daemon.log)")
            #expect(run?[member: "message"]?.stringValue
                == "\"\(d)/nfs/\(name)\": resolving the destination did not answer within 5 s (is its file system responding?)")
        }
        // Recorded as failed: the log and the job's health say so.
        #expect(setup.daemon.log.contains(
            "one: run one-1 failed in 5.") && setup.daemon.log.contains(
            "\"\(d)/nfs/one\": resolving the destination did not answer within 5 s"), "\(setup.daemon.log)")
        let jobs = setup.reply(try setup.send("ListJobs"))?.parameter("jobs")?.arrayValue
        let job = jobs?.first { $0[member: "name"]?.stringValue == "two" }
        #expect(job?[member: "consecutiveFailures"]?.intValue == 1)
        #expect(job?[member: "lastRun"]?[member: "result"]?.stringValue == "failed")
        let health = setup.reply(try setup.send("RunChecks", #"{"tags": ["sync"]}"#))?.parameter("health")
        let check = health?[member: "checks"]?.arrayValue?.first { $0[member: "name"]?.stringValue == "job.two" }
        #expect(check?[member: "status"]?.stringValue == "degraded")
        #expect(check?[member: "message"]?.stringValue
            == "last run failed: \"\(d)/nfs/two\": resolving the destination did not answer within 5 s (is its file system responding?)")
        setup.daemon.send(.terminate)
        #expect(setup.daemon.wait() == .exited(0), "\(setup.daemon.log)")
    }

    @Test func aJobOffTheMount_runs_leavingTheJobsWhoseRootsDoNotAnswerOutOfItsOverlapCheck() throws {
        let setup = try Setup(localJob: true)
        let d = setup.d
        // The first run waits the 5 s on one's destination, then goes on without it, and without
        // trying two's, on the same mount; and says so.
        let run = setup.reply(try setup.send("RunJob", #"{"name": "local"}"#))?.parameter("run")
        #expect(run?[member: "result"]?.stringValue == "success", "\(setup.daemon.log)")
        #expect(setup.directory.read("local/local.txt") == "local")
        #expect(setup.daemon.log.contains(
            "warning sync: local: \"\(d)/nfs/one\": not checked for overlap with this job's roots: resolving the destination of "
                + "job \"one\" did not answer within 5 s (is its file system responding?)"), "\(setup.daemon.log)")
        let mountedAt = "warning sync: local: \"\(d)/nfs/two\": not checked for overlap with this job's roots: its file system, "
            + "mounted at \"\(d)/nfs\", did not answer for job \"one\""
        #expect(setup.daemon.log.contains(mountedAt), "\(setup.daemon.log)")
        #expect(setup.threadsWaitingOnTheMount(expected: 1) == 1, "\(setup.daemon.log)")
        // The next run meets the thread left stuck there, and does not try: no other thread is
        // left there.
        let again = setup.reply(try setup.send("RunJob", #"{"name": "local"}"#))?.parameter("run")
        #expect(again?[member: "result"]?.stringValue == "success", "\(setup.daemon.log)")
        #expect(setup.daemon.log.contains(
            "warning sync: local: \"\(d)/nfs/one\": not checked for overlap with this job's roots: resolving the destination of job "
                + "\"one\" was not tried: an earlier thread (a mirror run's start) has been stuck on \"\(d)/nfs/one\""), "\(setup.daemon.log)")
        #expect(setup.daemon.log.components(separatedBy: mountedAt).count == 3, "\(setup.daemon.log)")
        #expect(setup.threadsWaitingOnTheMount(expected: 1) == 1, "\(setup.daemon.log)")
        setup.daemon.send(.terminate)
        #expect(setup.daemon.wait() == .exited(0), "\(setup.daemon.log)")
    }

    @Test func aShutdownDuringARunWhoseDestinationDoesNotAnswer_stopsTheRunAtOnce() throws {
        let setup = try Setup()
        let run = try setup.send("RunJob", #"{"name": "one"}"#)
        #expect(setup.daemon.waitForLog("run one-1 started"), "\(setup.daemon.log)")
        // The run's start waits on the destination.
        #expect(setup.threadsWaitingOnTheMount(expected: 1) == 1, "\(setup.daemon.log)")
        setup.daemon.send(.terminate)
        // The run does not wait for the destination, and the call hears how it ended before the
        // socket closes.
        let answer = setup.reply(run)
        #expect(answer?.parameter("run")?[member: "result"]?.stringValue == "cancelled", "\(answer as Any)\n\(setup.daemon.log)")
        #expect(setup.daemon.wait(timeout: .seconds(20)) == .exited(0), "\(setup.daemon.log)")
        #expect(setup.daemon.log.contains("one: run one-1 cancelled"), "\(setup.daemon.log)")
        // The daemon was gone before the destination's 5 s were out, when the step's thread is
        // left behind, and the log says so.
        #expect(!setup.daemon.log.contains("left behind"), "\(setup.daemon.log)")
    }

    @Test func aCallStillWaitingOnTheMountAtAShutdown_isLeftAfterTheDrainsGrace() throws {
        // No source: the run fails at once, before its destination, and the job's check is
        // degraded; its fix looks for the destination, on the dead mount, and would answer
        // after 5 s.
        let setup = try Setup(sources: false)
        let run = setup.reply(try setup.send("RunJob", #"{"name": "one"}"#))?.parameter("run")
        #expect(run?[member: "result"]?.stringValue == "failed", "\(setup.daemon.log)")
        let fix = try setup.send("Fix", #"{"check": "job.one"}"#)
        #expect(setup.threadsWaitingOnTheMount(expected: 1) == 1, "\(setup.daemon.log)")
        let stopping = ContinuousClock.now
        setup.daemon.send(.terminate)
        // The shutdown waits 1 s for it, then closes its connection unanswered, and says so.
        #expect(fix.closedByPeer(timeout: .seconds(20)), "\(setup.daemon.log)")
        #expect(fix.reply(timeout: .zero) == nil)
        #expect(setup.daemon.wait(timeout: .seconds(20)) == .exited(0), "\(setup.daemon.log)")
        #expect(ContinuousClock.now - stopping >= .seconds(1))
        #expect(setup.daemon.log.contains("closed with 1 call(s) unanswered (1 still running 1.0 seconds into the shutdown)"), "\(setup.daemon.log)")
        // Gone before the fix's 5 s were out, when its thread is left behind, and the log says so.
        #expect(!setup.daemon.log.contains("left behind"), "\(setup.daemon.log)")
    }

    @Test func aStateDirectoryThatStopsAnswering_holdsNeitherTheRunsNorTheShutdown() throws {
        let setup = try Setup(stateOnTheMount: true)
        let d = setup.d
        let writeFailed = #"sync: cannot write the jobs' state file "\#(d)/nfs/state/jobs.json": "# + "writing the file did not answer "
            + "within 5 s (is its file system responding?)"
        // The run's launch has the state file written off the scheduler, which goes on answering
        // while that write waits on the mount: before the write's 5 s are out and its failure is
        // logged (a scheduler that waited for the write would answer only then).
        let run = try setup.send("RunJob", #"{"name": "one"}"#)
        #expect(setup.daemon.waitForLog("run one-1 started"), "\(setup.daemon.log)")
        let jobs = setup.reply(try setup.send("ListJobs"))
        #expect(jobs?.parameter("jobs")?.arrayValue?.count == 2, "\(setup.daemon.log)")
        #expect(!setup.daemon.log.contains(writeFailed), "\(setup.daemon.log)")
        // The run fails on its destination, and the write on the state directory.
        #expect(setup.reply(run)?.parameter("run")?[member: "result"]?.stringValue == "failed", "\(setup.daemon.log)")
        #expect(setup.daemon.waitForLog(writeFailed, timeout: .seconds(20)), "\(setup.daemon.log)")
        // The shutdown's last save meets the thread stuck on that file, and does not try it.
        setup.daemon.send(.terminate)
        #expect(setup.daemon.wait(timeout: .seconds(20)) == .exited(0), "\(setup.daemon.log)")
        #expect(setup.daemon.log.contains(#"jobs.json": writing the file was not tried: an earlier thread (a write of the jobs' state file) has been stuck on"#), "\(setup.daemon.log)")
    }

    @Test func theAutoFixOfJobsWhoseDestinationDoesNotAnswer_failsNamingIt_whileTheDaemonGoesOn() throws {
        // No sources: the runs fail at once, before their destinations, and the jobs' checks are
        // degraded; the health loop's next round calls their fixes, which try the destination.
        let setup = try Setup(sources: false, healthLoop: true)
        let d = setup.d
        for name in ["one", "two"] {
            let run = setup.reply(try setup.send("RunJob", #"{"name": "\#(name)"}"#))?.parameter("run")
            #expect(run?[member: "result"]?.stringValue == "failed", "\(setup.daemon.log)")
        }
        // A round has evaluated the checks: both fixes have begun, and wait on the dead mount.
        #expect(setup.threadsWaitingOnTheMount(expected: 2) == 2, "\(setup.daemon.log)")
        // The daemon answers a call that needs the pool: before the fixes' 5 s are out, when
        // their threads are left behind, and the log says so (a fix that held a thread of the
        // pool would let it go only then).
        let paused = setup.reply(try setup.send("PauseJob", #"{"name": "one"}"#))
        #expect(paused != nil && paused?.error == nil, "\(setup.daemon.log)")
        #expect(!setup.daemon.log.contains("left behind"), "\(setup.daemon.log)")
        var fixes: [JSONValue] = []
        for _ in 0..<300 {
            fixes = setup.reply(try setup.send("ListFixes"))?.parameter("fixes")?.arrayValue ?? []
            if Set(fixes.compactMap { $0[member: "check"]?.stringValue }).isSuperset(of: ["job.one", "job.two"]) { break }
            usleep(100_000)
        }
        for name in ["one", "two"] {
            // The first attempt; a retry meets the thread still stuck there and fails at once.
            let fix = fixes.first { $0[member: "check"]?.stringValue == "job.\(name)" }
            #expect(fix?[member: "trigger"]?.stringValue == "automatic")
            #expect(fix?[member: "outcome"]?.stringValue == "failed", "\(fixes)")
            #expect(fix?[member: "error"]?.stringValue
                == "\"\(d)/nfs/\(name)\": checking the destination did not answer within 5 s (is its file system responding?)")
        }
        setup.daemon.send(.terminate)
        #expect(setup.daemon.wait() == .exited(0), "\(setup.daemon.log)")
    }

    /// A reload whose look at the paths meets the dead mount (the metrics file's directory,
    /// which the load does not resolve without a mirror job) is in effect, and
    /// `daemon.configuration` says its paths could not all be looked at, not that there is
    /// nothing to warn about; a reload whose look finishes says so no longer.
    @Test func aReloadWhosePathsCouldNotAllBeLookedAt_isSaidSoByTheConfigurationsHealth() throws {
        try DeadMount.requireSupport()
        let directory = TemporaryDirectory()
        let d = directory.path
        let wrapper = try #require(MountNamespace.wrapper())
        try FileManager.default.createDirectory(atPath: "\(d)/nfs", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", #"{"sync": {"jobs": []}}"#)
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory, wrapper: wrapper)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let mount = try DeadMount(at: "\(d)/nfs", inNamespaceOf: daemon.pid, scratch: directory)
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        #expect(try DaemonPathWarningsTests.configurationCheck(client) == "configuration in effect")
        directory.write("weavedid.json", #"{"sync": {"metricsFile": "\#(d)/nfs/textfile/weavedi.prom", "jobs": []}}"#)
        _ = try client.call("io.weavedi.Daemon.Reload")
        #expect(daemon.log.contains("the configuration's paths could not all be looked at: "), "\(daemon.log)")
        let message = try DaemonPathWarningsTests.configurationCheck(client) ?? ""
        #expect(message == #"configuration in effect; its paths could not all be looked at (\#(config): sync.metricsFile: looking at "#
            + #""\#(d)/nfs/textfile" did not answer within 5 s (is its file system responding?)), so their warnings are unknown "#
            + "(in the log)", "\(message)")
        // Back to a configuration off the mount: its paths are looked at, and there is nothing to say.
        directory.write("weavedid.json", #"{"sync": {"jobs": []}}"#)
        _ = try client.call("io.weavedi.Daemon.Reload")
        #expect(try DaemonPathWarningsTests.configurationCheck(client) == "configuration in effect")
        mount.revive()
        daemon.send(.terminate)
        #expect(daemon.wait(timeout: .seconds(20)) == .exited(0), "\(daemon.log)")
    }

    @Test func reloadsAndRunsThatMeetADeadMount_leaveOneThreadStuckOnIt_whoseReturnIsLogged() throws {
        let setup = try Setup(environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"])
        let d = setup.d
        let config = d + "/weavedid.json"
        // The first reload waits the 5 s on one's destination, and its thread is left there.
        let first = setup.reply(try setup.send("Reload"))
        #expect(first?.error == "io.weavedi.Daemon.ReloadRefused", "\(setup.daemon.log)")
        #expect(first?.parameter("reason")?.stringValue == "\(config): sync.jobs[0].destination: resolving "
            + "\"\(d)/nfs/one\" did not answer within 5 s (is its file system responding?)")
        #expect(setup.daemon.log.contains(
            "a thread is stuck on \"\(d)/nfs/one\" (a configuration load) and left behind; 1 stuck in all"), "\(setup.daemon.log)")
        #expect(setup.threadsWaitingOnTheMount(expected: 1) == 1)
        // Further reloads, and a run into that destination, do not try it: refused saying so,
        // no other thread left there.
        let notTried = "resolving \"\(d)/nfs/one\" was not tried: an earlier thread (a configuration load) has been stuck on "
            + "\"\(d)/nfs/one\" for N s (is its file system responding?)"
        for _ in 0..<3 {
            let again = setup.reply(try setup.send("Reload"))
            #expect(Self.sanitized(again?.parameter("reason")?.stringValue)
                == "\(config): sync.jobs[0].destination: \(notTried)")
        }
        #expect(setup.threadsWaitingOnTheMount(expected: 1) == 1, "\(setup.daemon.log)")
        let run = setup.reply(try setup.send("RunJob", #"{"name": "one"}"#))?.parameter("run")
        #expect(run?[member: "result"]?.stringValue == "failed")
        #expect(Self.sanitized(run?[member: "message"]?.stringValue)
            == "\"\(d)/nfs/one\": resolving the destination was not tried: an earlier thread (a configuration load) has been stuck "
                + "on \"\(d)/nfs/one\" for N s (is its file system responding?)")
        #expect(setup.threadsWaitingOnTheMount(expected: 1) == 1, "\(setup.daemon.log)")
        // The mount answers at last (with an error): the thread returns, and the log says so.
        setup.mount.revive()
        #expect(setup.daemon.waitForLog("a thread stuck on \"\(d)/nfs/one\" (a configuration load) returned after "), "\(setup.daemon.log)")
        #expect(setup.daemon.log.contains(" s; 0 still stuck"), "\(setup.daemon.log)")
        let reloaded = setup.reply(try setup.send("Reload"))
        #expect(reloaded?.error == nil && reloaded?.parameter("status")?.stringValue == "configuration reloaded", "\(setup.daemon.log)")
        setup.daemon.send(.terminate)
        #expect(setup.daemon.wait() == .exited(0), "\(setup.daemon.log)")
    }
}
