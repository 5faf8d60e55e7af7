import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// `weavedictl run-job` against the real daemon, on a run that lasts: without `--wait` it
/// answers once the run has started, with `--wait` it follows it; interrupted or cut short by
/// a reload, it says what became of the run.
@Suite struct CtlRunJobTests {
    /// A daemon whose job `big` copies a sparse file `big.bin` of `size` bytes when run, the
    /// files already in `given` (a run that lasts is `heldJobDaemon`'s), and `smallFiles` small
    /// ones (whose copies make progress updates while a large one is copied), with
    /// `control.callTimeout` at `callTimeout`, and `gate`'s library preloaded; `little` holds
    /// the settings of the job `little` besides its source and destination.
    func bigJobDaemon(
        size: Int = 0, smallFiles: Int = 0, callTimeout: Double = 10, maxConcurrentRuns: Int = 4,
        little: String = #""interval": 3600"#, gate: CopyGate? = nil, in given: TemporaryDirectory? = nil
    ) throws -> (DaemonProcess, TemporaryDirectory) {
        let directory = given ?? TemporaryDirectory()
        let big = directory.write("source/big.bin", "")
        for index in 0..<smallFiles { directory.write("source/small/\(index).txt", "\(index)\n") }
        directory.write("little-source/a.txt", "a\n")
        directory.write("other-source/a.txt", "a\n")
        for mirror in ["mirror", "little-mirror", "other-mirror"] {
            try FileManager.default.createDirectory(atPath: directory.path + "/" + mirror, withIntermediateDirectories: true)
        }
        try #require(truncate(big, off_t(size)) == 0, "truncate: \(Errno.current)")
        let config = directory.write("weavedid.json", """
            {"control": {"callTimeout": \(callTimeout)}, "sync": {"maxConcurrentRuns": \(maxConcurrentRuns),
              "jobs": [{"name": "big", "source": "\(directory.path)/source",
              "destination": "\(directory.path)/mirror", "interval": 3600},
              {"name": "little", "source": "\(directory.path)/little-source", "destination": "\(directory.path)/little-mirror",
              \(little)},
              {"name": "other", "source": "\(directory.path)/other-source", "destination": "\(directory.path)/other-mirror",
              "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], environment: gate?.environment ?? [:], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        return (daemon, directory)
    }

    /// The file of `heldJobDaemon`'s job `big` whose copy the gate holds.
    static let held = "slow-big.bin"

    /// A daemon as `bigJobDaemon`'s, whose job `big` copies a file (`held`) that `CopyGate`
    /// holds in its copy until the test releases it (`gate.release(Self.held)`): a run that
    /// goes on, on any file system, as long as the test needs, and ends once released. The file
    /// is sparse, 32 MiB: cheap to make, 4 copy chunks (a cancelled run stops at a safe point
    /// between two), and 37 s held before the run's walk watch fails the copy.
    /// The test releases the gate before it stops the daemon (a held run holds the shutdown).
    func heldJobDaemon(
        callTimeout: Double = 10, maxConcurrentRuns: Int = 4, little: String = #""interval": 3600"#
    ) throws -> (DaemonProcess, TemporaryDirectory, CopyGate) {
        let directory = TemporaryDirectory()
        let gate = try CopyGate.build(in: directory)
        let held = directory.write("source/" + Self.held, "")
        try #require(truncate(held, 32 << 20) == 0, "truncate: \(Errno.current)")
        let (daemon, _) = try bigJobDaemon(
            callTimeout: callTimeout, maxConcurrentRuns: maxConcurrentRuns, little: little, gate: gate, in: directory)
        return (daemon, directory, gate)
    }

    /// weavedictl started in the background, its output in files.
    final class Background {
        let capture = TemporaryDirectory("weavedictl-output")
        private var process: Subprocess?
        let pid: Int32
        private(set) var status: TerminationStatus?

        init(_ argv: [String]) throws {
            let process = try Subprocess.spawn(
                argv[0], arguments: Array(argv.dropFirst()), environment: ["PATH": "/usr/local/bin:/usr/bin:/bin"],
                standardOutput: .file(capture.path + "/out"), standardError: .file(capture.path + "/err"))
            pid = process.pid
            self.process = consume process
        }

        deinit {
            if status == nil {
                try? Signal.kill.send(to: pid)
                _ = try? process?.wait()
            }
        }

        var output: String { capture.read("out") ?? "" }
        var error: String { capture.read("err") ?? "" }

        /// Waits until standard output contains `text`.
        func waitForOutput(_ text: String, timeout: Duration = .seconds(30)) -> Bool {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline, status == nil {
                if output.contains(text) { return true }
                usleep(10_000)
            }
            return output.contains(text)
        }

        func wait(timeout: Duration = .seconds(30)) -> TerminationStatus? {
            let deadline = ContinuousClock.now + timeout
            while status == nil, ContinuousClock.now < deadline {
                status = try? process?.waitIfExited()
                if status == nil { usleep(10_000) }
            }
            return status
        }
    }

    /// Without `--wait`, a run longer than the daemon's call time limit is no failure: the
    /// answer comes as soon as the run has started, with its id, and the run goes on.
    @Test func runJob_withoutWait_answersOnceStarted_andTheRunGoesOn() throws {
        let (daemon, _, gate) = try heldJobDaemon(callTimeout: 1)
        defer { gate.release(Self.held) }
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", "big"])
        #expect(run.code == 0, "\(run.all)\n\(daemon.log)")
        #expect(run.output == "job big: run big-1 started; it goes on in the daemon (`weavedictl jobs` shows how it ends)\n", "\(run.all)")
        gate.release(Self.held)
        #expect(daemon.waitForLog("big: run big-1 success", timeout: .seconds(180)), "\(daemon.log)")
    }

    /// A run that fails before it walks its source (here the source is missing) made no
    /// progress: `run-job --wait` says nothing of progress, rather than `0/0 files` as for an
    /// empty tree walked, and then how the run ended.
    @Test func runJob_wait_aRunThatNeverWalked_showsNoProgress() throws {
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "lost", "source": "\(directory.path)/missing", "destination": "\(directory.path)/mirror",
              "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", "lost", "--wait"])
        #expect(run.code == 1, "\(run.all)")
        let lines = run.output.split(separator: "\n")
        #expect(lines.count == 2 && lines.first == "job lost: run lost-1 started", "\(run.all)")
        #expect(lines.last?.hasPrefix("job lost: run lost-1 failed in ") == true, "\(run.all)")
        #expect(!run.output.contains("progress") && !run.output.contains("0/0"), "\(run.all)")
    }

    /// `run-job --wait` ends with the line the daemon logs for the run's end, the same facts in
    /// the same order and formats, after the job's name: one shape for the operator to read,
    /// for a success as for a failure with its message.
    @Test func runJob_wait_summary_isTheLogsLineForTheRun() throws {
        let directory = TemporaryDirectory()
        directory.write("source/a.txt", "a\n")
        directory.write("source/b.txt", "bb\n")
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(directory.path)/source", "destination": "\(directory.path)/mirror",
              "interval": 3600}, {"name": "lost", "source": "\(directory.path)/missing", "destination": "\(directory.path)/mirror2",
              "interval": 3600}]}}
            """)
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        for (job, code) in [("docs", Int32(0)), ("lost", 1)] {
            let run = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", job, "--wait"])
            #expect(run.code == code, "\(run.all)")
            let summary = try #require(run.output.split(separator: "\n").last.map(String.init), "\(run.all)")
            try #require(summary.hasPrefix("job \(job): run \(job)-"), "\(run.all)")
            // `job docs: run docs-1 success in 3 ms (copied 2, …)` is logged `sync: docs: run docs-1 success in 3 ms (copied 2, …)`.
            let logged = "sync: " + summary.dropFirst("job ".count)
            #expect(daemon.waitForLog(logged), "\(logged)\n\(daemon.log)")
        }
        #expect(daemon.log.contains("(copied 2, updated 0, deleted 0, skipped 0, errors 0, 5 B)"), "\(daemon.log)")
        // The retry after the failure gives its wait (up to the interval, 3600 s) in the run
        // line's duration format.
        let retry = /sync: lost: retrying in (\d+ ms|\d+\.\d s|\d+m \d\ds|1h 00m) \(backoff after 1 failed run\)\n/
        #expect(daemon.log.contains(retry), "\(daemon.log)")
    }

    /// The varlink side: with `more`, the first reply names the run as soon as it has started;
    /// `detach` answers with the run's id in `runId` while the run goes on; a job already
    /// running is a `skipped` run, as without it; `detach` with `more` is refused.
    @Test func runJob_namesTheRun_andDetachAnswersOnceStarted() throws {
        let (daemon, _, gate) = try heldJobDaemon()
        defer { gate.release(Self.held) }
        let follower = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        try follower.send(VarlinkCall(method: "io.weavedi.Daemon.RunJob", parameters: [("name", .string("big"))], more: true))
        let first = try follower.receive()
        #expect(first.continues && first.parameter("runId") == .string("big-1"), "\(first)")
        #expect(first.parameter("run") == nil && first.parameter("progress") == nil, "\(first)")  // both null

        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        let started = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("little")), ("detach", .bool(true))])
        #expect(started.parameter("runId") == .string("little-2"), "\(started)")
        #expect(started.parameter("run") == nil)
        #expect(daemon.waitForLog("little: run little-2 success"), "\(daemon.log)")
        let again = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        #expect(again.parameter("runId") == nil)
        #expect(again.parameter("run")?[member: "result"] == .string("skipped"), "\(again)")
        do {
            try client.call(VarlinkCall(
                method: "io.weavedi.Daemon.RunJob", parameters: [("name", .string("big")), ("detach", .bool(true))], more: true))
            Issue.record("detach with more was taken")
        } catch let failure as VarlinkFailure {
            #expect(failure.name == "org.varlink.service.InvalidParameter", "\(failure)")
            #expect(failure.parameters.first { $0.0 == "parameter" }?.1 == .string("detach"), "\(failure)")
        }
    }

    /// A run asked for while `sync.maxConcurrentRuns` runs are going waits for a slot: the
    /// answer says it is queued, and why (the runs going, the cap), in `queued` beside its
    /// `runId` (which a client that knows nothing of `queued` reads as before); weavedictl says
    /// so rather than `started`, and exits 0; the run starts once the slot is free (here, a
    /// reload removes the job whose run holds it).
    @Test func runJob_withoutWait_whileEverySlotIsTaken_saysTheRunIsQueued() throws {
        let (daemon, directory, gate) = try heldJobDaemon(maxConcurrentRuns: 1)
        defer { gate.release(Self.held) }
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        let first = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        #expect(first.parameter("runId") == .string("big-1"), "\(first)")
        #expect(first.parameter("queued") == nil, "\(first)")

        let queued = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", "little"])
        #expect(queued.code == 0, "\(queued.all)\n\(daemon.log)")
        #expect(queued.output == "job little: run little-2 queued: 1 run going (maxConcurrentRuns 1); it starts when one ends, "
            + "and goes on in the daemon (`weavedictl jobs` shows how it ends)\n", "\(queued.all)\n\(daemon.log)")
        let json = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "run-job", "little"])
        #expect(json.output.contains(#""result":"skipped""#), "\(json.all)")  // the queued run counts as going
        #expect(json.output.contains("run little-2 waits for a slot; a job has one run at a time"), "\(json.all)")
        #expect(json.output.contains(#""goingRunId":"little-2""#), "\(json.all)")
        #expect(daemon.log.contains("info    sync: little: run little-2 waits for a slot (1 run going, maxConcurrentRuns 1)"),
            "\(daemon.log)")
        let other = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("other")), ("detach", .bool(true))])
        #expect(other.parameter("runId") == .string("other-3"), "\(other)")
        #expect(other.parameter("queued") == .object([("runsGoing", .int(1)), ("maxConcurrentRuns", .int(1))]), "\(other)")
        #expect(!daemon.log.contains("little: run little-2 started"), "a queued run started with no slot free: \(daemon.log)")

        let config = try #require(directory.read("weavedid.json"))
        directory.write("weavedid.json", config.replacingOccurrences(of: #"{"name": "big""#, with: #"{"name": "gone""#))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        gate.release(Self.held)
        #expect(daemon.waitForLog("little: run little-2 success", timeout: .seconds(60)), "\(daemon.log)")
        #expect(daemon.waitForLog("other: run other-3 success", timeout: .seconds(60)), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Followed with `more` (`run-job --wait`), a run waiting for a slot is named at once with
    /// `queued`, and once more without it when it starts: weavedictl says it is queued, then
    /// started, and follows it to its end.
    @Test func runJob_wait_saysQueued_thenStarted() throws {
        let (daemon, directory, gate) = try heldJobDaemon(maxConcurrentRuns: 1)
        defer { gate.release(Self.held) }
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        let ctl = try Background([CtlRun.binary, "--socket", daemon.defaultSocket, "run-job", "little", "--wait"])
        try #require(ctl.waitForOutput("\n"), "\(ctl.output)\(ctl.error)\n\(daemon.log)")
        #expect(ctl.output == "job little: run little-2 queued: 1 run going (maxConcurrentRuns 1); it starts when one ends\n",
            "\(ctl.output)\(ctl.error)")
        let follower = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(60))
        try follower.send(VarlinkCall(method: "io.weavedi.Daemon.RunJob", parameters: [("name", .string("other"))], more: true))
        let first = try follower.receive()
        #expect(first.continues && first.parameter("runId") == .string("other-3"), "\(first)")
        #expect(first.parameter("queued") == .object([("runsGoing", .int(1)), ("maxConcurrentRuns", .int(1))]), "\(first)")

        let config = try #require(directory.read("weavedid.json"))
        directory.write("weavedid.json", config.replacingOccurrences(of: #"{"name": "big""#, with: #"{"name": "gone""#))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        gate.release(Self.held)
        #expect(ctl.wait(timeout: .seconds(60)) == .exited(0), "\(ctl.output)\(ctl.error)\n\(daemon.log)")
        let lines = ctl.output.split(separator: "\n")
        #expect(lines.count >= 3 && lines[1] == "job little: run little-2 started", "\(ctl.output)")
        #expect(lines.last?.hasPrefix("job little: run little-2 success") == true, "\(ctl.output)")
        var replies = [first]
        while replies.last?.continues == true { replies.append(try follower.receive()) }
        #expect(replies.dropFirst().dropLast().contains { $0.parameter("runId") == .string("other-3") && $0.parameter("queued") == nil },
            "\(replies)")
        #expect(replies.last?.parameter("run")?[member: "result"] == .string("success"), "\(replies)")
    }

    /// `ListJobs` tells a run waiting for a slot from one going: both are `running` (as
    /// older clients read it), the waiting one also `queued`, with the runs going and the cap;
    /// `weavedictl jobs` says `queued (1 going, maxConcurrentRuns 1)` for it, and `going`
    /// for the run holding the slot: the word the queue line uses.
    @Test func jobs_tellARunWaitingForASlot_fromOneGoing() throws {
        let (daemon, directory, gate) = try heldJobDaemon(maxConcurrentRuns: 1)
        defer { gate.release(Self.held) }
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        let queued = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("little")), ("detach", .bool(true))])
        try #require(queued.parameter("queued") != nil, "\(queued)")

        let jobs = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue ?? []
        let big = try #require(jobs.first { $0[member: "name"] == .string("big") })
        let little = try #require(jobs.first { $0[member: "name"] == .string("little") })
        #expect(big[member: "running"] == .bool(true) && big[member: "queued"] == .null, "\(big)")
        #expect(little[member: "running"] == .bool(true), "\(little)")
        #expect(little[member: "queued"] == .object([("runsGoing", .int(1)), ("maxConcurrentRuns", .int(1))]), "\(little)")
        let table = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs"])
        let rows = table.output.split(separator: "\n")
        #expect(rows.first { $0.hasPrefix("big ") }?.contains(" going ") == true, "\(table.all)")
        #expect(rows.first { $0.hasPrefix("little ") }?.contains(" queued (1 going, maxConcurrentRuns 1) ") == true, "\(table.all)")

        let config = try #require(directory.read("weavedid.json"))
        directory.write("weavedid.json", config.replacingOccurrences(of: #"{"name": "big""#, with: #"{"name": "gone""#))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        gate.release(Self.held)
        #expect(daemon.waitForLog("little: run little-2 success", timeout: .seconds(60)), "\(daemon.log)")
        let after = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue ?? []
        #expect(after.first { $0[member: "name"] == .string("little") }?[member: "queued"] == .null, "\(after)")
    }

    /// A run waiting for a slot whose job a reload removes leaves the line at once, while the
    /// run holding the slot goes on: it ends cancelled, saying why, and the job added back by
    /// the next reload runs (queued again), instead of being refused while the old run waited.
    @Test func aQueuedRunOfAJobAReloadRemoves_endsAtOnce_andTheJobAddedBackRuns() throws {
        let (daemon, directory, gate) = try heldJobDaemon(maxConcurrentRuns: 1)
        defer { gate.release(Self.held) }
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        let ctl = try Background([CtlRun.binary, "--socket", daemon.defaultSocket, "run-job", "little", "--wait"])
        try #require(ctl.waitForOutput("job little: run little-2 queued"), "\(ctl.output)\(ctl.error)\n\(daemon.log)")

        let config = try #require(directory.read("weavedid.json"))
        directory.write("weavedid.json", config.replacingOccurrences(of: #"{"name": "little""#, with: #"{"name": "gone""#))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        #expect(ctl.wait(timeout: .seconds(30)) == .exited(1), "\(ctl.output)\(ctl.error)\n\(daemon.log)")
        #expect(ctl.output.contains("job little: run little-2 cancelled"), "\(ctl.output)")
        #expect(ctl.output.contains(": the job was removed from the configuration by a reload; cancelled while it waited for a slot"),
            "\(ctl.output)")
        let jobs = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue ?? []
        let big = try #require(jobs.first { $0[member: "name"] == .string("big") })
        #expect(big[member: "running"] == .bool(true), "the long run ended first: the test proves nothing: \(daemon.log)")

        directory.write("weavedid.json", config)
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let again = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("little")), ("detach", .bool(true))])
        #expect(again.parameter("runId") == .string("little-3"), "\(again)\n\(daemon.log)")
        #expect(again.parameter("queued") == .object([("runsGoing", .int(1)), ("maxConcurrentRuns", .int(1))]), "\(again)")

        directory.write("weavedid.json", config.replacingOccurrences(of: #"{"name": "big""#, with: #"{"name": "gone""#))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        gate.release(Self.held)
        #expect(daemon.waitForLog("little: run little-3 success", timeout: .seconds(60)), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A run waiting for a slot starts under its job's settings as they are when it gets the
    /// slot: a reload that gave the job another destination meanwhile is heeded, and the
    /// destination the configuration no longer names is left alone.
    @Test func aQueuedRun_startsUnderTheSettingsAReloadGaveItsJobMeanwhile() throws {
        let (daemon, directory, gate) = try heldJobDaemon(maxConcurrentRuns: 1)
        defer { gate.release(Self.held) }
        try FileManager.default.createDirectory(atPath: directory.path + "/little-mirror-new", withIntermediateDirectories: true)
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        let queued = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("little")), ("detach", .bool(true))])
        try #require(queued.parameter("queued") != nil, "\(queued)")

        let config = try #require(directory.read("weavedid.json"))
        let moved = config.replacingOccurrences(of: "\(directory.path)/little-mirror\"", with: "\(directory.path)/little-mirror-new\"")
        try #require(moved != config)
        directory.write("weavedid.json", moved)
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let jobs = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue ?? []
        let little = try #require(jobs.first { $0[member: "name"] == .string("little") })
        #expect(little[member: "queued"] != .null, "the run got its slot before the reload: the test proves nothing: \(little)")

        directory.write("weavedid.json", moved.replacingOccurrences(of: #"{"name": "big""#, with: #"{"name": "gone""#))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        gate.release(Self.held)
        #expect(daemon.waitForLog("little: run little-2 success", timeout: .seconds(60)), "\(daemon.log)")
        #expect(directory.read("little-mirror-new/a.txt") == "a\n", "\(daemon.log)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: directory.path + "/little-mirror")) == [], "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// The metrics tell a run waiting for a slot from one going: `weavedi_sync_running` is 1
    /// only for the job whose run holds the slot, `weavedi_sync_queued` 1 for the job whose run
    /// waits for it; once that run has had its slot and ended, both are 0 for it.
    @Test func metrics_tellARunWaitingForASlot_fromOneGoing() throws {
        let (daemon, directory, gate) = try heldJobDaemon(maxConcurrentRuns: 1)
        defer { gate.release(Self.held) }
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        let queued = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("little")), ("detach", .bool(true))])
        try #require(queued.parameter("queued") != nil, "\(queued)")
        func metrics() throws -> [Substring] {
            let text = try client.call("io.weavedi.Daemon.GetMetrics").parameter("text")?.stringValue ?? ""
            return text.split(separator: "\n")
        }

        let during = try metrics()
        for line in [#"weavedi_sync_running{job="big"} 1"#, #"weavedi_sync_running{job="little"} 0"#,
                     #"weavedi_sync_queued{job="big"} 0"#, #"weavedi_sync_queued{job="little"} 1"#,
                     #"weavedi_sync_queued{job="other"} 0"#] {
            #expect(during.contains(Substring(line)), "\(line) missing: \(during.filter { $0.hasPrefix("weavedi_sync_") })")
        }
        #expect(during.contains("# TYPE weavedi_sync_queued gauge"), "\(during)")

        let config = try #require(directory.read("weavedid.json"))
        directory.write("weavedid.json", config.replacingOccurrences(of: #"{"name": "big""#, with: #"{"name": "gone""#))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        gate.release(Self.held)
        #expect(daemon.waitForLog("little: run little-2 success", timeout: .seconds(60)), "\(daemon.log)")
        let after = try metrics()
        for line in [#"weavedi_sync_running{job="little"} 0"#, #"weavedi_sync_queued{job="little"} 0"#] {
            #expect(after.contains(Substring(line)), "\(line) missing: \(after.filter { $0.hasPrefix("weavedi_sync_") })")
        }
    }

    /// A disabled job runs by hand: `weavedictl jobs` shows its run, waiting for a slot
    /// (`queued (1 going, maxConcurrentRuns 1)`) or going (`going`), after `disabled`,
    /// which it shows alone again once the run has ended.
    @Test func jobs_showTheRunOfADisabledJob() throws {
        let (daemon, directory, gate) = try heldJobDaemon(maxConcurrentRuns: 1, little: #""interval": 3600, "enabled": false"#)
        defer { gate.release(Self.held) }
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        let queued = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("little")), ("detach", .bool(true))])
        try #require(queued.parameter("queued") != nil, "\(queued)")
        func littleRow() throws -> String {
            let table = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs"])
            return table.output.split(separator: "\n").first { $0.hasPrefix("little ") }.map(String.init) ?? table.all
        }

        let during = try littleRow()
        #expect(during.contains(" disabled, queued (1 going, maxConcurrentRuns 1) "), "\(during)")

        let config = try #require(directory.read("weavedid.json"))
        directory.write("weavedid.json", config.replacingOccurrences(of: #"{"name": "big""#, with: #"{"name": "gone""#))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        gate.release(Self.held)
        #expect(daemon.waitForLog("little: run little-2 success", timeout: .seconds(60)), "\(daemon.log)")
        let after = try littleRow()
        #expect(after.contains(" disabled "), "\(after)")
    }

    /// A paused job runs by hand: `weavedictl jobs` says both that it is paused and that its
    /// run waits for a slot, or is going, instead of the run alone (which hid that no timer
    /// runs the job after it).
    @Test func jobs_showThatAJobIsPaused_andItsRun() throws {
        let (daemon, _, gate) = try heldJobDaemon(maxConcurrentRuns: 1)
        defer { gate.release(Self.held) }
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        for name in ["big", "little"] { _ = try client.call("io.weavedi.Daemon.PauseJob", [("name", .string(name))]) }
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        let queued = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("little")), ("detach", .bool(true))])
        try #require(queued.parameter("queued") != nil, "\(queued)")
        let table = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs"])
        let rows = table.output.split(separator: "\n")
        #expect(rows.first { $0.hasPrefix("big ") }?.contains(" paused, going ") == true, "\(table.all)")
        #expect(rows.first { $0.hasPrefix("little ") }?.contains(" paused, queued (1 going, maxConcurrentRuns 1) ") == true,
            "\(table.all)")
        #expect(rows.first { $0.hasPrefix("other ") }?.contains(" scheduled ") == true, "\(table.all)")
    }

    /// The job's fix cancels a run stuck for more than `staleAfterIntervals` intervals, timed
    /// from when the run got its slot: a run waiting in line for one (`maxConcurrentRuns`
    /// reached) has not started, and is left to start when a slot frees, however long it
    /// waited (here, longer than its job's 1 s limit).
    @Test func theJobsFix_leavesARunWaitingForASlot_whateverItsWait() throws {
        let (daemon, directory, gate) = try heldJobDaemon(
            maxConcurrentRuns: 1, little: #""interval": 1, "staleAfterIntervals": 1, "enabled": false"#)
        defer { gate.release(Self.held) }
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        let first = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        #expect(first.parameter("runId") == .string("big-1"), "\(first)")
        let queued = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("little")), ("detach", .bool(true))])
        try #require(queued.parameter("queued") != nil, "\(queued)")
        usleep(2_000_000)  // in line for twice its job's stuck limit

        let fix = try CtlRun.run(["--socket", daemon.defaultSocket, "fix", "job.little"])
        #expect(fix.code == 0, "\(fix.all)\n\(daemon.log)")
        #expect(!fix.output.contains("stuck"), "\(fix.all)")
        #expect(fix.output.contains("run little-2 waits for a slot (1 run going, maxConcurrentRuns 1)"), "\(fix.all)")
        let jobs = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue ?? []
        let big = try #require(jobs.first { $0[member: "name"] == .string("big") })
        #expect(big[member: "running"] == .bool(true), "the long run ended before the fix: the test proves nothing: \(daemon.log)")
        #expect(!daemon.log.contains("little-2 cancelled"), "\(daemon.log)")

        let config = try #require(directory.read("weavedid.json"))
        directory.write("weavedid.json", config.replacingOccurrences(of: #"{"name": "big""#, with: #"{"name": "gone""#))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        gate.release(Self.held)
        #expect(daemon.waitForLog("little: run little-2 success", timeout: .seconds(60)), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Ctrl-C while following a run ends weavedictl, not the run: it says so, with the run's id.
    @Test func runJob_wait_interrupted_saysTheRunGoesOn() throws {
        let (daemon, _, gate) = try heldJobDaemon()
        defer { gate.release(Self.held) }
        let ctl = try Background([CtlRun.binary, "--socket", daemon.defaultSocket, "run-job", "big", "--wait"])
        try #require(ctl.waitForOutput("job big: run big-1 started\n"), "\(ctl.output)\(ctl.error)\n\(daemon.log)")
        try Signal.interrupt.send(to: ctl.pid)
        #expect(ctl.wait() == .signaled(.interrupt), "\(ctl.output)\(ctl.error)")
        #expect(ctl.error == "weavedictl: interrupted; the run big-1 goes on in the daemon (`weavedictl jobs` shows how it ends)\n",
            "\(ctl.error)")
        gate.release(Self.held)
        #expect(daemon.waitForLog("big: run big-1 success", timeout: .seconds(180)), "\(daemon.log)")
    }

    /// On a terminal, the bar's line is ended before the message, so that neither it nor the
    /// shell's prompt lands on the bar.
    @Test(.enabled(if: fileExists("/usr/bin/script"), "needs script(1) for a pseudo-terminal"))
    func runJob_wait_interruptedOnATerminal_endsTheBarsLineFirst() throws {
        // The run is held (`CopyGate`) in the copy of one `slow-` file, then of the other, until
        // weavedictl has been interrupted: a run that ended first (a fast copy, on tmpfs) would
        // leave no weavedictl to interrupt. The first file's batch ends once the progress
        // meter's interval (50 ms, a lower bound the wait passes whatever the load) is over, so
        // that it sends the progress that draws the bar.
        let directory = TemporaryDirectory()
        let gate = try CopyGate.build(in: directory)
        let names = ["slow-1.bin", "slow-2.bin"]
        for name in names { directory.write("source/" + name, String(repeating: "x", count: 2 << 20)) }
        let (daemon, _) = try bigJobDaemon(size: 2 << 20, smallFiles: 200, gate: gate, in: directory)
        defer { for name in names { gate.release(name) } }
        let command = "exec '\(CtlRun.binary)' --socket '\(daemon.defaultSocket)' run-job big --wait"
        let script = try Background(["/usr/bin/script", "-qefc", command, "/dev/null"])
        let first = try #require(gate.waitForAny(names), "\(script.output)\(script.error)\n\(daemon.log)")
        Thread.sleep(forTimeInterval: 0.2)
        gate.release(first)
        try #require(script.waitForOutput("\u{1B}[K"), "\(script.output)\(script.error)\n\(daemon.log)")
        // script(1) runs the command as its child; `exec` makes that weavedictl itself.
        let children = try String(contentsOfFile: "/proc/\(script.pid)/task/\(script.pid)/children", encoding: .utf8)
        let ctl = try #require(children.split(separator: " ").first.flatMap { Int32($0) }, "\(children)")
        try Signal.interrupt.send(to: ctl)
        _ = script.wait()
        #expect(script.output.contains("\u{1B}[K\r\nweavedictl: interrupted; the run big-1 goes on in the daemon"), "\(script.output)")
    }

    /// A run that a reload cancels (its job removed) says why, not only that it stopped.
    @Test func runJob_wait_cancelledByAReload_saysWhy() throws {
        let (daemon, directory, gate) = try heldJobDaemon()
        defer { gate.release(Self.held) }
        let ctl = try Background([CtlRun.binary, "--socket", daemon.defaultSocket, "run-job", "big", "--wait"])
        try #require(daemon.waitForLog("run big-1 started"), "\(daemon.log)")
        directory.write("weavedid.json", #"{"sync": {"jobs": []}}"#)
        daemon.send(.hangup)
        // Released once the reload has removed the job (the held run goes on till then).
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        let deadline = ContinuousClock.now + .seconds(60)
        while try job("big", on: client) != nil, ContinuousClock.now < deadline { usleep(10_000) }
        gate.release(Self.held)
        #expect(ctl.wait(timeout: .seconds(60)) == .exited(1), "\(ctl.output)\(ctl.error)\n\(daemon.log)")
        #expect(ctl.output.contains("job big: run big-1 cancelled"), "\(ctl.output)")
        #expect(ctl.output.contains(": the job was removed from the configuration by a reload; stopped at a safe point"), "\(ctl.output)")
    }

    /// The job `name`'s entry in `ListJobs`.
    func job(_ name: String, on client: VarlinkClient) throws -> JSONValue? {
        try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first { $0[member: "name"]?.stringValue == name }
    }

    /// A run asked for by hand while one of the job goes is skipped, and said to be only that:
    /// weavedictl prints what happened without a duration or counts of a run that never was,
    /// exits 1; its JSON has no run id (null) but the going run's in `goingRunId`. Such a
    /// refusal is no tick of the schedule: `skippedRuns` (and its metric) stay at 0.
    @Test func runJob_whileTheJobsRunGoes_isSkipped_saysOnlyThat_andCountsNoSkippedTick() throws {
        let (daemon, _, gate) = try heldJobDaemon()
        defer { gate.release(Self.held) }
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        let first = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        #expect(first.parameter("runId") == .string("big-1"), "\(first)")
        let text = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", "big"])
        #expect(text.code == 1, "\(text.all)")
        #expect(text.output == "job big: skipped: run big-1 is already going\n", "\(text.all)")
        let json = try CtlRun.run(["--socket", daemon.defaultSocket, "--json", "run-job", "big"])
        #expect(json.code == 1, "\(json.all)")
        let run = try JSONValue.parse(json.output.trimmingCharacters(in: .newlines))[member: "run"]
        #expect(run?[member: "result"] == .string("skipped"), "\(json.all)")
        #expect(run?[member: "id"] == .null, "\(json.all)")
        #expect(run?[member: "goingRunId"] == .string("big-1"), "\(json.all)")
        #expect(!json.output.contains("big-skipped"), "\(json.all)")
        // The same without detach, as an older weavedictl asks.
        let plain = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big"))])
        #expect(plain.parameter("run")?[member: "goingRunId"] == .string("big-1"), "\(plain)")
        let big = try job("big", on: client)
        #expect(big?[member: "running"] == .bool(true), "\(big.map { "\($0)" } ?? "no job")")
        #expect(big?[member: "skippedRuns"] == .int(0), "\(big.map { "\($0)" } ?? "no job")")
        let metrics = try client.call("io.weavedi.Daemon.GetMetrics").parameter("text")?.stringValue ?? ""
        #expect(metrics.contains("weavedi_sync_skipped_runs_total{job=\"big\"} 0\n"), "\(metrics)")
        gate.release(Self.held)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A `oneway` `RunJob` wants no reply: it starts the run as `detach` does, and the next
    /// call on the connection is answered while the run still goes (it waited for the run's
    /// end, within callTimeout).
    @Test func runJob_oneway_startsTheRun_andTheNextCallIsAnsweredWhileItGoes() throws {
        let (daemon, _, gate) = try heldJobDaemon(callTimeout: 600)
        defer { gate.release(Self.held) }
        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(600))
        try client.send(VarlinkCall(method: "io.weavedi.Daemon.RunJob", parameters: [("name", .string("big"))], oneway: true))
        let ping = try client.call("io.weavedi.Daemon.Ping")
        #expect(ping.parameter("version") != nil, "\(ping)")
        // Answered on the same connection, with no reply to the oneway call before it.
        let big = try job("big", on: client)
        #expect(big?[member: "lastRun"] == .null, "the run had ended: \(big.map { "\($0)" } ?? "no job")\n\(daemon.log)")
        #expect(big?[member: "running"] == .bool(true), "\(big.map { "\($0)" } ?? "no job")\n\(daemon.log)")
        #expect(daemon.waitForLog("big: run big-1 started"), "\(daemon.log)")
        gate.release(Self.held)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
