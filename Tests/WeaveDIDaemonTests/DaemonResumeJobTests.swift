import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// `ResumeJob` catches up, as systemd's `Persistent=true` timers do: a job due while it was
/// paused runs at once, and one not yet due keeps its next run as planned, not a whole
/// interval from the resume. Before, every resume restarted the timer on a full interval.
@Suite struct DaemonResumeJobTests {
    /// The configuration file of the job `docs`, run every `interval` seconds.
    @discardableResult
    func writeConfiguration(_ directory: TemporaryDirectory, interval: Int = 3600) -> String {
        directory.write("weavedid.json", """
            {"stateDirectory": "\(directory.path)/state", "sync": {"jobs": [{"name": "docs", "source": "\(directory.path)/source",
              "destination": "\(directory.path)/mirror", "interval": \(interval)}]}}
            """)
    }

    /// A daemon with one job, `docs` (interval 1 h, its source there unless `withoutSource`:
    /// its runs succeed, or fail), whose state file says `entry`.
    func start(
        _ directory: TemporaryDirectory, entry: String, lastRunNumber: Int = 1, withoutSource: Bool = false, environment: [String: String] = [:]
    ) throws -> DaemonProcess {
        if !withoutSource { directory.write("source/a.txt", "a") }
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        directory.write("state/jobs.json", #"{"lastRunNumber": \#(lastRunNumber), "jobs": {"docs": \#(entry)}}"#)
        let config = writeConfiguration(directory)
        let daemon = try DaemonProcess(
            ["--config", config], environment: environment.merging(["WEAVEDI_REGISTRY_AUTO_FIX": "0", "WEAVEDID_LOG": "info,sync=debug"]) { $1 },
            directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        return daemon
    }

    /// `start(directory, entry:)`, with a run of the job by hand, docs-2, going: held in its copy
    /// of `slow-big.bin` (`mebibytes` large: the walk watch fails a copy held for 5 s plus 1 s per
    /// MiB, 7 s for 2 MiB, 13 s for 8 MiB or more) until `gate` releases it.
    func startWithARunByHandHeld(_ directory: TemporaryDirectory, entry: String, mebibytes: Int = 2) throws -> (DaemonProcess, CopyGate) {
        let gate = try CopyGate.build(in: directory)
        let big = directory.write("source/slow-big.bin", "")
        try #require(truncate(big, off_t(mebibytes) << 20) == 0, "truncate: \(Errno.current)")
        let daemon = try start(directory, entry: entry, environment: gate.environment)
        try holdARunByHand(daemon, gate)
        return (daemon, gate)
    }

    /// Starts a run of the job by hand, docs-2, and waits until `gate` holds it.
    func holdARunByHand(_ daemon: DaemonProcess, _ gate: CopyGate) throws {
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let id = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs")), ("detach", .bool(true))]).parameter("runId")?.stringValue
        try #require(id == "docs-2", "\(daemon.log)")
        try #require(gate.waitForReached("slow-big.bin"), "\(daemon.log)")
    }

    func job(_ daemon: DaemonProcess) throws -> JSONValue? {
        try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
    }

    func resume(_ daemon: DaemonProcess) throws {
        _ = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ResumeJob", [("name", .string("docs"))])
    }

    /// The time in seconds since 1970 `ago` seconds before now, as the state file has it.
    static func time(_ ago: Int) -> String { String(Int(Date().timeIntervalSince1970) - ago) }

    /// A state file entry of the job paused, whose last run, docs-1, succeeded an hour (its
    /// interval) less `seconds` ago: its timer's tick comes `seconds` from now, to the fraction.
    static func pausedEntry(dueIn seconds: Double) -> String {
        let now = Date().timeIntervalSince1970
        return """
            {"consecutiveFailures": 0, "paused": true, "firstSeenAt": \(now - 7200), "lastSuccess": \(now - 3599 + seconds),
             "lastRun": {"id": "docs-1", "job": "docs", "result": "success", "startedAt": \(now - 3600 + seconds),
               "endedAt": \(now - 3599 + seconds)}}
            """
    }

    /// A run due while the job was paused (its timer's tick came, 2 s after the start) is
    /// made up at once when it is resumed, and the log says why; its timer then goes on an
    /// interval from that run.
    @Test func aJobWhoseTickCameWhilePaused_runsAtOnce_whenResumed() throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: """
            {"consecutiveFailures": 0, "paused": true, "firstSeenAt": \(Self.time(7200)), "lastSuccess": \(Self.time(3597)),
             "lastRun": {"id": "docs-1", "job": "docs", "result": "success", "startedAt": \(Self.time(3598)),
               "endedAt": \(Self.time(3597))}}
            """)
        #expect(try job(daemon)?[member: "nextRunIn"]?.isNull == true)
        try #require(daemon.waitForLog("sync: docs: a run is due, but the job is paused: it runs once resumed"), "\(daemon.log)")
        #expect(!daemon.log.contains("run docs-2"), "\(daemon.log)")
        try daemon.resumeExpectingARunNow()
        #expect(daemon.waitForLog("sync: docs: run docs-2 success"), "\(daemon.log)")
        let after = try job(daemon)
        let next = after?[member: "nextRunIn"]?.numberValue ?? -1
        #expect(next > 3000 && next <= 3600, "\(after.map { "\($0)" } ?? "no job")")
        // One run: the tick the resume planned, none of a timer before it.
        #expect(after?[member: "skippedRuns"]?.intValue == 0, "\(after.map { "\($0)" } ?? "no job")")
        daemon.stopExpectingNoRun("docs-3")
    }

    /// A job paused and resumed before its next run was due keeps that next run: `ListJobs`'
    /// `nextRunIn` goes on from where it was (half an hour here, not a new hour), no run starts,
    /// and the log says when the next one comes.
    @Test func aJobNotYetDue_keepsItsPlannedNextRun_whenResumed() throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: """
            {"consecutiveFailures": 0, "firstSeenAt": \(Self.time(7200)), "lastSuccess": \(Self.time(1799)),
             "lastRun": {"id": "docs-1", "job": "docs", "result": "success", "startedAt": \(Self.time(1800)),
               "endedAt": \(Self.time(1799))}}
            """)
        let before = try #require(try job(daemon)?[member: "nextRunIn"]?.numberValue, "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        _ = try client.call("io.weavedi.Daemon.PauseJob", [("name", .string("docs"))])
        #expect(try job(daemon)?[member: "nextRunIn"]?.isNull == true)
        try resume(daemon)
        let after = try job(daemon)
        let next = try #require(after?[member: "nextRunIn"]?.numberValue, "\(after.map { "\($0)" } ?? "no job")")
        #expect(next <= before && next > 1000, "before \(before), after \(next)")
        #expect(after?[member: "running"]?.boolValue == false, "\(after.map { "\($0)" } ?? "no job")")
        // The line says the same time, in minutes and seconds.
        let line = daemon.log.split(separator: "\n").first { $0.contains("docs resumed") }.map(String.init) ?? ""
        #expect(line.contains("notice  sync: docs resumed; next run in "), "\(daemon.log)")
        let said = line.split(separator: " ").suffix(2).map { Int($0.dropLast()) ?? -1 }
        let logged = Double(said.first ?? -1) * 60 + Double(said.last ?? -1)
        #expect(logged >= next.rounded(.down) - 1 && logged <= before + 1, "\(line): before \(before), after \(next)")
        daemon.stopExpectingNoRun("docs-2")
    }

    /// A job whose last run never ended, or was cancelled (by a stop), stays paused at the
    /// start, and runs at once when it is resumed, saying why, as an unpaused one would have
    /// at the start.
    @Test(arguments: [
        (#""unfinished": true, "lastRun": {"id": "docs-1", "job": "docs", "result": "failed", "message": "run docs-1 never ended", "#,
         "never ended"),
        (#""lastRun": {"id": "docs-1", "job": "docs", "result": "cancelled", "message": "the daemon is stopping", "#, "was cancelled"),
    ])
    func aJobWhoseLastRunDidNotFinish_runsAtOnce_whenResumed(entry: String, how: String) throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: """
            {"consecutiveFailures": 0, "paused": true, "firstSeenAt": \(Self.time(7200)), \(entry)
               "startedAt": \(Self.time(10)), "endedAt": \(Self.time(9))}}
            """)
        #expect(daemon.log.contains("notice  sync: docs: its last run docs-1 \(how) (the destination may be behind); it stays paused"),
                "\(daemon.log)")
        try resume(daemon)
        #expect(daemon.log.contains("notice  sync: docs resumed: its last run docs-1 \(how) (the destination may be behind); it runs "
            + "again now"), "\(daemon.log)")
        #expect(daemon.waitForLog("sync: docs: run docs-2 success"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Two runs in a row that never ended (what a run that crashes the daemon leaves) keep a
    /// paused job from running at once when it is resumed too, as at the start: its timer goes
    /// on to its interval, and the log says why.
    @Test func aJobWhoseTwoRunsNeverEnded_isNotRunAtOnce_whenResumed() throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: """
            {"consecutiveFailures": 1, "paused": true, "firstSeenAt": \(Self.time(60)), "unfinished": true,
             "lastRun": {"id": "docs-1", "job": "docs", "result": "failed", "startedAt": \(Self.time(30)), "endedAt": \(Self.time(30)),
               "message": "run docs-1, started at …, never ended"},
             "runGoing": {"id": "docs-2", "startedAt": \(Self.time(5))}}
            """, lastRunNumber: 2)
        #expect(daemon.log.contains("(it is paused); weavedictl run-job docs runs it now"), "\(daemon.log)")
        try resume(daemon)
        let line = daemon.log.split(separator: "\n").first { $0.contains("docs resumed") }.map(String.init) ?? ""
        #expect(line.contains("notice  sync: docs resumed: its runs docs-1 and docs-2 both never ended, so it is not run again at "
            + "once, but at its interval; next run in 59m ") && line.hasSuffix("s (weavedictl run-job docs runs it now)"), "\(daemon.log)")
        let after = try job(daemon)
        let next = after?[member: "nextRunIn"]?.numberValue ?? -1
        #expect(next > 3000 && next <= 3600, "\(after.map { "\($0)" } ?? "no job")")
        daemon.stopExpectingNoRun("docs-3")
    }

    /// A backoff being waited out goes on through a pause: resumed before its end, the job
    /// keeps it (`nextRunIn` goes on from where it was, not a new interval), and the log says so.
    @Test func aBackoffBeingWaitedOut_isKept_whenResumed() throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: #"{"consecutiveFailures": 0, "firstSeenAt": \#(Self.time(60))}"#, lastRunNumber: 0,
                               withoutSource: true)
        let client = try VarlinkClient(path: daemon.defaultSocket)
        // The backoff is drawn at random up to the interval (doubled after each failure): one
        // that would end before the resume (a minute) is drawn again by another failed run.
        var failures = 0
        var before = 0.0
        while failures < 5, before <= 60 {
            let run = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
            try #require(run?[member: "result"]?.stringValue == "failed", "\(run.map { "\($0)" } ?? "no run")")
            failures += 1
            before = try job(daemon)?[member: "nextRunIn"]?.numberValue ?? 0
        }
        try #require(before > 60, "\(daemon.log)")
        #expect(daemon.log.contains("sync: docs: retrying in "), "\(daemon.log)")
        _ = try client.call("io.weavedi.Daemon.PauseJob", [("name", .string("docs"))])
        try resume(daemon)
        let next = try #require(try job(daemon)?[member: "nextRunIn"]?.numberValue, "\(daemon.log)")
        #expect(next <= before && next > 30, "before \(before), after \(next)")
        let line = daemon.log.split(separator: "\n").first { $0.contains("docs resumed") }.map(String.init) ?? ""
        let after = failures == 1 ? "1 failed run" : "\(failures) failed runs in a row"
        #expect(line.contains("notice  sync: docs resumed; next run in ") && line.hasSuffix(" (backoff after \(after))"), "\(daemon.log)")
        daemon.stopExpectingNoRun("docs-\(failures + 1)")
    }

    /// A job resumed while a run of it is going keeps its next run, even one due (its last run
    /// never ended): the run going does that work, and a run started at once would only be
    /// skipped beside it.
    @Test func aJobWithARunGoing_keepsItsPlannedNextRun_whenResumed() throws {
        let directory = TemporaryDirectory()
        let (daemon, gate) = try startWithARunByHandHeld(directory, entry: """
            {"consecutiveFailures": 1, "paused": true, "firstSeenAt": \(Self.time(7200)), "unfinished": true,
             "lastRun": {"id": "docs-1", "job": "docs", "result": "failed", "startedAt": \(Self.time(10)), "endedAt": \(Self.time(10)),
               "message": "run docs-1 never ended"}}
            """)
        defer { gate.release("slow-big.bin") }
        try resume(daemon)
        let line = daemon.log.split(separator: "\n").first { $0.contains("docs resumed") }.map(String.init) ?? ""
        #expect(line.contains("notice  sync: docs resumed; next run in ") && line.hasSuffix(" (run docs-2 is going)"), "\(daemon.log)")
        let next = try job(daemon)?[member: "nextRunIn"]?.numberValue ?? -1
        #expect(next > 3000 && next <= 3600, "\(daemon.log)")
        gate.release("slow-big.bin")
        #expect(daemon.waitForLog("sync: docs: run docs-2 success"), "\(daemon.log)")
        #expect(try job(daemon)?[member: "skippedRuns"]?.intValue == 0, "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(!daemon.log.contains("run docs-3") && !daemon.log.contains("this run is skipped"), "\(daemon.log)")
    }

    /// A job resumed while its run by hand, which took on the run missed while it was paused, is
    /// going, goes by that run's end as any job once it is resumed: when the run then fails
    /// (held in its copy past the walk watch's limit, 13 s for the 8 MiB file, long after the
    /// resume), it backs off, saying so, and the run it took on is no run missed (that is for a
    /// job still paused): nothing says so, and no run starts at once. Only a run that succeeded
    /// was covered (`aJobWithARunGoing_keepsItsPlannedNextRun_whenResumed`).
    @Test func aJobResumedDuringARunByHandThatTookOnAMissedRun_backsOff_whenThatRunFails() throws {
        let directory = TemporaryDirectory()
        let gate = try CopyGate.build(in: directory)
        defer { gate.release("slow-big.bin") }
        let big = directory.write("source/slow-big.bin", "")
        try #require(truncate(big, off_t(8) << 20) == 0, "truncate: \(Errno.current)")
        // Its tick comes 1 s after the start, while it is paused: a run missed, before any run.
        let daemon = try start(directory, entry: Self.pausedEntry(dueIn: 1), environment: gate.environment)
        try #require(daemon.waitForLog("sync: docs: a run is due, but the job is paused: it runs once resumed"), "\(daemon.log)")
        // The run by hand takes it on, and is held.
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let id = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs")), ("detach", .bool(true))]).parameter("runId")?.stringValue
        try #require(id == "docs-2", "\(daemon.log)")
        try #require(gate.waitForReached("slow-big.bin"), "\(daemon.log)")
        try resume(daemon)
        let resumed = daemon.log.split(separator: "\n").first { $0.contains("docs resumed") }.map(String.init) ?? ""
        #expect(resumed.contains("notice  sync: docs resumed; next run in ") && resumed.hasSuffix(" (run docs-2 is going)"), "\(daemon.log)")
        try #require(!daemon.log.contains("run docs-2 failed"), "the run failed before the resume: the test proves nothing\n\(daemon.log)")
        try #require(daemon.waitForLog("sync: docs: run docs-2 failed"), "\(daemon.log)")
        // Booked in one go with the failure: the backoff's line is there with it.
        let retry = daemon.log.split(separator: "\n").first { $0.contains("sync: docs: retrying in ") }.map(String.init) ?? ""
        #expect(retry.contains("notice  sync: docs: retrying in ") && retry.hasSuffix(" (backoff after 1 failed run)"), "\(daemon.log)")
        #expect(!daemon.log.contains("which was to do the work of a run due while the job was paused"), "\(daemon.log)")
        let after = try job(daemon)
        #expect(after?[member: "paused"]?.boolValue == false && after?[member: "consecutiveFailures"]?.intValue == 1,
                "\(after.map { "\($0)" } ?? "no job")")
        // Its timer goes on (the backoff, drawn up to the interval).
        #expect(after?[member: "nextRunIn"]?.numberValue.map { $0 <= 3600 } == true, "\(after.map { "\($0)" } ?? "no job")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(!daemon.log.contains("docs resumed: a run was due while it was paused"), "\(daemon.log)")
    }

    /// The job paused, its next run 59 min away, with a run of it by hand, docs-2, held at the
    /// gate (`mebibytes` large), and a tick of the job's timer that came while that run was held:
    /// after it by construction, not by a bet on how long the start and the run take. Once the
    /// run is held, a reload gives the job an interval 4 s longer than the time since the run
    /// was asked for, which that run cannot have outgone: the reload counts the next run from
    /// the run's start (the log says so), and the timer's tick comes a few seconds later, the
    /// run held still. (An interval the run had outgone would make it the run due instead, the
    /// tick handed to it by the reload, not by the timer.) Once the tick is logged, a reload back
    /// to the hour counts the next run from the run's start again, so that no tick comes after
    /// that run's end: one then, the run no longer going, would be a run missed by itself.
    func startWithATickWhileARunByHandIsHeld(_ directory: TemporaryDirectory, mebibytes: Int) throws -> (DaemonProcess, CopyGate) {
        let gate = try CopyGate.build(in: directory)
        let big = directory.write("source/slow-big.bin", "")
        try #require(truncate(big, off_t(mebibytes) << 20) == 0, "truncate: \(Errno.current)")
        let daemon = try start(directory, entry: Self.pausedEntry(dueIn: 3540), environment: gate.environment)
        let asked = ContinuousClock.now
        try holdARunByHand(daemon, gate)
        let since = ContinuousClock.now - asked
        writeConfiguration(directory, interval: Int(since.components.seconds) + 4)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let line = reloadLine(daemon)
        try #require(line.contains("notice  sync: docs: changed by the reload; next run in ")
            && line.contains(" (counted from its run docs-2, going, started ") && line.hasSuffix(" ago); it stays paused"), "\(daemon.log)")
        try #require(daemon.waitForLog("sync: docs: a run is due while the job is paused, and run docs-2 of it is going: that run does its work"),
                     "\(daemon.log)")
        writeConfiguration(directory)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        #expect(reloadLine(daemon, count: 2).contains("notice  sync: docs: changed by the reload; next run in 59m "), "\(daemon.log)")
        return (daemon, gate)
    }

    /// The line of the `count`th reload for the job.
    func reloadLine(_ daemon: DaemonProcess, count: Int = 1) -> String {
        let lines = daemon.log.split(separator: "\n").filter { $0.contains("sync: docs: changed by the reload; ") }
        return lines.count >= count ? String(lines[count - 1]) : ""
    }

    /// What the log says of a tick of the paused job's timer that came with no run going: a
    /// run missed by itself.
    static let tickWithNoRunGoing = "sync: docs: a run is due, but the job is paused: it runs once resumed"

    /// A tick of a paused job's timer that comes while a run of it by hand is going misses
    /// nothing (that run does the work, as an unpaused job's tick beside its run is only
    /// skipped): resumed after that run, the job keeps its next run rather than running again.
    @Test func aTickWhileARunByHandGoes_isNoMissedRun() throws {
        let directory = TemporaryDirectory()
        // 8 MiB: 13 s before the walk watch would fail the copy held.
        let (daemon, gate) = try startWithATickWhileARunByHandIsHeld(directory, mebibytes: 8)
        defer { gate.release("slow-big.bin") }
        gate.release("slow-big.bin")
        try #require(daemon.waitForLog("sync: docs: run docs-2 success"), "\(daemon.log)")
        #expect(!daemon.log.contains(Self.tickWithNoRunGoing), "\(daemon.log)")
        try resume(daemon)
        let line = daemon.log.split(separator: "\n").first { $0.contains("docs resumed") }.map(String.init) ?? ""
        #expect(line.contains("notice  sync: docs resumed; next run in "), "\(daemon.log)")
        let next = try job(daemon)?[member: "nextRunIn"]?.numberValue ?? -1
        #expect(next > 3000 && next <= 3600, "\(daemon.log)")
        daemon.stopExpectingNoRun("docs-3")
    }

    /// But a tick that came while a run by hand was going is a run missed when that run fails
    /// (held here in its copy past the walk watch's limit, 13 s for the 8 MiB file): resumed,
    /// the job runs at once, as if nothing had been going. Before, the tick was lost, and the
    /// job waited for its next one.
    @Test func aTickWhileARunByHandGoes_isAMissedRun_whenThatRunFails() throws {
        let directory = TemporaryDirectory()
        let (daemon, gate) = try startWithATickWhileARunByHandIsHeld(directory, mebibytes: 8)
        defer { gate.release("slow-big.bin") }
        try #require(daemon.waitForLog("sync: docs: run docs-2 failed"), "\(daemon.log)")
        #expect(daemon.log.contains("sync: docs: run docs-2, which was to do the work of a run due while the job was paused, failed: that "
            + "run is missed, and runs once the job is resumed"), "\(daemon.log)")
        // The one tick came while the run went: the run missed is that one.
        #expect(!daemon.log.contains(Self.tickWithNoRunGoing), "\(daemon.log)")
        // Still paused, the job does not run it now: no run is going once that run's end is
        // booked (a run started then would be held at the gate).
        let after = try job(daemon)
        #expect(after?[member: "running"]?.boolValue == false && after?[member: "nextRunIn"]?.isNull == true,
                "\(after.map { "\($0)" } ?? "no job")")
        // The copy left behind goes on; the next run's copy of the file passes the gate.
        gate.release("slow-big.bin")
        try daemon.resumeExpectingARunNow()
        #expect(daemon.waitForLog("sync: docs: run docs-3 started"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A tick that came while the job was paused, with no run going, stays a run missed when
    /// the run by hand started after it (`run-job`, or the job's fix asked by hand) fails: it
    /// did not do that work, and the job, resumed, runs at once. Before, the run by hand was
    /// taken to have made it up as it started, and the job waited for its next tick.
    @Test(arguments: ["RunJob", "Fix"])
    func aMissedRun_staysMissed_whenTheRunByHandAfterItFails(startedBy method: String) throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: Self.pausedEntry(dueIn: 2), withoutSource: true)
        try #require(daemon.waitForLog("sync: docs: a run is due, but the job is paused: it runs once resumed"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        if method == "RunJob" {
            _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs")), ("detach", .bool(true))])
        } else {
            let fix = try client.call("io.weavedi.Daemon.Fix", [("check", .string("job.docs"))]).parameter("fixes")?.arrayValue?.first
            #expect(fix?[member: "message"]?.stringValue?.contains("reset the backoff") == true, "\(fix.map { "\($0)" } ?? "no fix")")
        }
        try #require(daemon.waitForLog("sync: docs: run docs-2 failed"), "\(daemon.log)")
        #expect(daemon.log.contains("sync: docs: run docs-2, which was to do the work of a run due while the job was paused, failed: that "
            + "run is missed, and runs once the job is resumed"), "\(daemon.log)")
        try daemon.resumeExpectingARunNow()
        #expect(daemon.waitForLog("sync: docs: run docs-3 failed"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}

extension DaemonProcess {
    /// Stops the daemon, expecting a clean exit and that the run `id` (the job's next) never
    /// started.
    func stopExpectingNoRun(_ id: String, sourceLocation: SourceLocation = #_sourceLocation) {
        send(.terminate)
        #expect(wait() == .exited(0), "\(log)", sourceLocation: sourceLocation)
        #expect(!log.contains("run \(id)"), "\(log)", sourceLocation: sourceLocation)
    }

    /// Resumes the job `docs`, expecting its log line to say that a run was due while it was
    /// paused and runs now.
    func resumeExpectingARunNow(sourceLocation: SourceLocation = #_sourceLocation) throws {
        _ = try VarlinkClient(path: defaultSocket).call("io.weavedi.Daemon.ResumeJob", [("name", .string("docs"))])
        let line = log.split(separator: "\n").first { $0.contains("docs resumed") }.map(String.init) ?? ""
        #expect(line.contains("notice  sync: docs resumed: a run was due while it was paused (") && line.hasSuffix(" ago); it runs now"),
                "\(log)", sourceLocation: sourceLocation)
    }
}
