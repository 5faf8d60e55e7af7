import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// A reload keeps a changed job's schedule where it can: a change that does not touch it
/// (`workers` here) leaves the timer going (its next run, a backoff, a run missed while
/// paused), and a new interval counts the next run from the start of the job's last run, as
/// the start does. Before, every change restarted the timer on a whole interval from the
/// reload: an hourly job edited 55 minutes after its last run waited another hour.
@Suite struct DaemonReloadScheduleTests {
    /// The configuration file of a job `docs` (its runs succeed, or fail `withoutSource`),
    /// with `fields` added to the job.
    @discardableResult
    func writeConfiguration(
        _ directory: TemporaryDirectory, interval: Int = 3600, destination: String = "mirror", fields: String = ""
    ) -> String {
        directory.write("weavedid.json", """
            {"stateDirectory": "\(directory.path)/state", "sync": {"jobs": [{"name": "docs", "source": "\(directory.path)/source",
              "destination": "\(directory.path)/\(destination)", "interval": \(interval)\(fields)}]}}
            """)
    }

    /// A daemon with that job (`fields` added to it), whose state file says `entry`.
    func start(
        _ directory: TemporaryDirectory, entry: String, interval: Int = 3600, fields: String = "", withoutSource: Bool = false,
        environment: [String: String] = [:]
    ) throws -> DaemonProcess {
        if !withoutSource { directory.write("source/a.txt", "a") }
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        directory.write("state/jobs.json", #"{"lastRunNumber": 1, "jobs": {"docs": \#(entry)}}"#)
        let config = writeConfiguration(directory, interval: interval, fields: fields)
        let daemon = try DaemonProcess(
            ["--config", config], environment: environment.merging(["WEAVEDI_REGISTRY_AUTO_FIX": "0", "WEAVEDID_LOG": "info,sync=debug"]) { $1 },
            directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        return daemon
    }

    /// A state file entry whose last run, docs-1, succeeded, started `ago` seconds ago.
    func lastRun(startedAgo ago: Int, paused: Bool = false) -> String {
        """
        {"consecutiveFailures": 0, "paused": \(paused), "firstSeenAt": \(time(90_000)), "lastSuccess": \(time(ago - 1)),
         "lastRun": {"id": "docs-1", "job": "docs", "result": "success", "startedAt": \(time(ago)), "endedAt": \(time(ago - 1))}}
        """
    }

    /// The time in seconds since 1970 `ago` seconds before now, as the state file has it.
    func time(_ ago: Int) -> String { String(Int(Date().timeIntervalSince1970) - ago) }

    func job(_ daemon: DaemonProcess) throws -> JSONValue? {
        try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
    }

    func nextRunIn(_ daemon: DaemonProcess) throws -> Double {
        try #require(try job(daemon)?[member: "nextRunIn"]?.numberValue, "\(daemon.log)")
    }

    /// The reload's line for the job, from what follows `changed by the reload; `.
    func reloadLine(_ daemon: DaemonProcess) -> String {
        daemon.log.split(separator: "\n").first { $0.contains("sync: docs: changed by the reload; ") }.map(String.init) ?? ""
    }

    /// A duration of a minute or more and less than an hour as the log writes it, `29m 05s`,
    /// in seconds; nil in another form.
    func minutesAndSeconds(_ text: Substring) -> Int? {
        let parts = text.split(separator: " ")
        guard parts.count == 2, parts[0].hasSuffix("m"), parts[1].hasSuffix("s"), let minutes = Int(parts[0].dropLast()),
              let seconds = Int(parts[1].dropLast()), (0..<60).contains(seconds)
        else { return nil }
        return minutes * 60 + seconds
    }

    /// What the reload's `line` says of a next run counted from the last run, docs-1: in how
    /// long it comes and how long ago that run started, in seconds
    /// (`next run in 29m 57s (counted from its last run docs-1, 30m 02s ago)`); nil in another form.
    func countedFromTheLastRun(_ line: String) -> (next: Int, ago: Int)? {
        guard let next = line.range(of: "next run in "), let from = line.range(of: " (counted from its last run docs-1, "),
              next.upperBound <= from.lowerBound, line.hasSuffix(" ago)"),
              let wait = minutesAndSeconds(line[next.upperBound..<from.lowerBound]),
              let ago = minutesAndSeconds(line[from.upperBound...].dropLast(" ago)".count))
        else { return nil }
        return (wait, ago)
    }

    /// Whether `counted` says a last run started 30 min before `written` (when the state file
    /// entry was made): as long ago as that, and the time since (the daemon's start, the
    /// reload), at most; and the next run `jitter` at most after an hour from its start. Each
    /// shown in whole seconds, rounded down.
    func isHalfAnHourBefore(_ written: Date, _ counted: (next: Int, ago: Int)?, jitter: Int = 0) -> Bool {
        guard let counted else { return false }
        let most = 1800 + Int(Date().timeIntervalSince(written)) + 2
        return (1800...most).contains(counted.ago) && (3599...3600 + jitter).contains(counted.next + counted.ago)
    }

    /// A change of `workers` leaves the timer as it was: `nextRunIn` goes on from where it was
    /// (half an hour here, not a new hour), and the log says the next run is as planned. By
    /// SIGHUP.
    @Test func aChangeOfWorkers_keepsTheNextRun() throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: lastRun(startedAgo: 1800))
        let before = try nextRunIn(daemon)
        try #require(before > 1000 && before <= 1800, "\(before)")
        writeConfiguration(directory, fields: #", "workers": 2"#)
        daemon.send(.hangup)
        try #require(daemon.waitForLog("sync: docs: changed by the reload; "), "\(daemon.log)")
        let after = try nextRunIn(daemon)
        #expect(after <= before && after > 1000, "before \(before), after \(after)")
        let line = reloadLine(daemon)
        #expect(line.contains("notice  sync: docs: changed by the reload; next run in ") && line.hasSuffix(", as planned"), "\(daemon.log)")
        daemon.stopExpectingNoRun("docs-2")
    }

    /// A daily job whose last run started 2 h ago, given an interval of an hour, is overdue:
    /// it runs at once, and the log says why, as at the start.
    @Test func aShorterIntervalAfterALongWait_runsTheJobAtOnce() throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: lastRun(startedAgo: 7200), interval: 86400)
        let before = try nextRunIn(daemon)
        try #require(before > 70_000, "\(before)")
        writeConfiguration(directory, interval: 3600)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        #expect(reloadLine(daemon).contains("notice  sync: docs: changed by the reload; overdue: its last run docs-1 started 2h 00m ago, "
            + "more than its interval (1h 00m): it runs now"), "\(daemon.log)")
        #expect(daemon.waitForLog("sync: docs: run docs-2 success"), "\(daemon.log)")
        // Then on the new interval, from that run.
        let next = try nextRunIn(daemon)
        #expect(next > 3000 && next <= 3600, "\(next)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A longer interval counts from the last run's start: 30 min ago, with two hours, the
    /// next run is about 1 h 30 min away, not two hours from the reload; the log says so.
    @Test func aLongerInterval_isCountedFromTheLastRun() throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: lastRun(startedAgo: 1800))
        writeConfiguration(directory, interval: 7200)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let next = try nextRunIn(daemon)
        #expect(next > 4400 && next <= 5400, "\(next)")
        let line = reloadLine(daemon)
        #expect(line.contains("notice  sync: docs: changed by the reload; next run in 1h ")
            && line.contains(" (counted from its last run docs-1, ") && line.hasSuffix(" ago)"), "\(daemon.log)")
        daemon.stopExpectingNoRun("docs-2")
    }

    /// A paused job whose run came due while it was paused still makes it up at once when
    /// resumed after a reload that changed its `workers`: the reload keeps the run missed.
    @Test func aPausedJobsMissedRun_isKeptThroughAReload() throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: lastRun(startedAgo: 3598, paused: true))
        try #require(daemon.waitForLog("sync: docs: a run is due, but the job is paused: it runs once resumed"), "\(daemon.log)")
        writeConfiguration(directory, fields: #", "workers": 2"#)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let line = reloadLine(daemon)
        #expect(line.contains("notice  sync: docs: changed by the reload; it stays paused; a run was due while it was paused (")
            && line.hasSuffix(" ago): it runs once resumed"), "\(daemon.log)")
        #expect(!daemon.log.contains("run docs-2"), "\(daemon.log)")
        _ = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ResumeJob", [("name", .string("docs"))])
        #expect(daemon.log.contains("notice  sync: docs resumed: a run was due while it was paused ("), "\(daemon.log)")
        #expect(daemon.waitForLog("sync: docs: run docs-2 success"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A backoff being waited out is kept through a reload that changes `failureThreshold`
    /// (`nextRunIn` goes on from where it was, not a new interval), and the log names it; a
    /// reload that lowers `backoffCap` below what is left of it ends it no later than the new
    /// cap after the failed run.
    @Test(arguments: [false, true])
    func aBackoffBeingWaitedOut_isKeptThroughAReload_unlessTheCapIsLowered(lowered: Bool) throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: #"{"consecutiveFailures": 0, "firstSeenAt": \#(time(60))}"#, withoutSource: true)
        let client = try VarlinkClient(path: daemon.defaultSocket)
        // The backoff is drawn at random up to the interval (doubled after each failure): one
        // that would end within 2 min is drawn again by another failed run.
        var failures = 0
        var before = 0.0
        while failures < 5, before <= 120 {
            let run = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
            try #require(run?[member: "result"]?.stringValue == "failed", "\(run.map { "\($0)" } ?? "no run")")
            failures += 1
            before = try nextRunIn(daemon)
        }
        try #require(before > 120, "\(daemon.log)")
        writeConfiguration(directory, fields: lowered ? #", "backoffCap": 60"# : #", "failureThreshold": 5"#)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let next = try nextRunIn(daemon)
        let line = reloadLine(daemon)
        let after = failures == 1 ? "1 failed run" : "\(failures) failed runs in a row"
        #expect(line.contains("notice  sync: docs: changed by the reload; next run in "), "\(daemon.log)")
        if lowered {
            #expect(next <= 60, "before \(before), after \(next)")
            #expect(line.hasSuffix(" (backoff after \(after), ended sooner by the new backoffCap, 1m 00s)") && !line.contains("as planned"), "\(daemon.log)")
        } else {
            #expect(next <= before && next > 60, "before \(before), after \(next)")
            #expect(line.hasSuffix(", as planned (backoff after \(after))"), "\(daemon.log)")
        }
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A job disabled at the start has no timer (`nextRunIn` null); enabled again by a reload,
    /// its next run is counted from the start of its last run as at a start: what is left of
    /// the interval (half an hour here, not a new hour), at once when that has passed, and at
    /// once too when its last run did not finish: it never ended (the daemon stopped during
    /// it), or was cancelled (by a stop), a minute ago, well within the interval.
    @Test(arguments: ["counted", "overdue", "never ended", "was cancelled"])
    func aJobEnabledAgain_countsItsNextRunFromItsLastRun(case last: String) throws {
        let directory = TemporaryDirectory()
        let written = Date()
        let entry = switch last {
        case "counted": lastRun(startedAgo: 1800)
        case "overdue": lastRun(startedAgo: 7200)
        case "was cancelled": """
            {"consecutiveFailures": 0, "firstSeenAt": \(time(90_000)),
             "lastRun": {"id": "docs-1", "job": "docs", "result": "cancelled", "message": "the daemon is stopping",
               "startedAt": \(time(60)), "endedAt": \(time(59))}}
            """
        default: """
            {"consecutiveFailures": 0, "firstSeenAt": \(time(90_000)), "unfinished": true,
             "lastRun": {"id": "docs-1", "job": "docs", "result": "failed", "message": "run docs-1 never ended",
               "startedAt": \(time(60)), "endedAt": \(time(60))}}
            """
        }
        let daemon = try start(directory, entry: entry, fields: #", "enabled": false"#)
        #expect(try job(daemon)?[member: "nextRunIn"]?.isNull == true, "\(daemon.log)")
        writeConfiguration(directory)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let line = reloadLine(daemon)
        switch last {
        case "counted":
            let next = try nextRunIn(daemon)
            #expect(next > 1000 && next <= 1800, "\(next)")
            // Counted from docs-1's start, however long the daemon's start and the reload took.
            #expect(line.contains("notice  sync: docs: changed by the reload; next run in "), "\(daemon.log)")
            #expect(isHalfAnHourBefore(written, countedFromTheLastRun(line)), "\(line)")
        case "overdue":
            #expect(line.contains("notice  sync: docs: changed by the reload; overdue: its last run docs-1 started 2h 00m ago, "
                + "more than its interval (1h 00m): it runs now"), "\(daemon.log)")
            #expect(daemon.waitForLog("sync: docs: run docs-2 success"), "\(daemon.log)")
        default:
            #expect(line.contains("notice  sync: docs: changed by the reload; its last run docs-1 \(last) (the destination may "
                + "be behind): it runs again now"), "\(daemon.log)")
            #expect(daemon.waitForLog("sync: docs: run docs-2 success"), "\(daemon.log)")
        }
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        if last == "counted" { #expect(!daemon.log.contains("run docs-2"), "\(daemon.log)") }
    }

    /// The timer is set by the reload whatever the log lets through: with the sync log quieter
    /// than notice (here `warning`, by `SetLogLevel`), where the reload's line for the job is
    /// not written, a job enabled again still has its next run counted from its last run (half
    /// an hour here). Before, the timer was set while making that line's text, which a log
    /// that does not take the line never makes: the job was left without a timer, never to run
    /// again but by hand (and a job disabled so kept its timer, and a new interval was unused).
    @Test func aJobEnabledAgain_getsItsTimer_withTheSyncLogQuieterThanNotice() throws {
        let directory = TemporaryDirectory()
        let daemon = try start(directory, entry: lastRun(startedAgo: 1800), fields: #", "enabled": false"#)
        #expect(try job(daemon)?[member: "nextRunIn"]?.isNull == true, "\(daemon.log)")
        let levels = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.SetLogLevel", [("filter", .string("warning"))])
        try #require(levels.parameter("filter")?.stringValue == "warning", "\(levels.parameters)")
        writeConfiguration(directory)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        #expect(reloadLine(daemon).isEmpty, "\(daemon.log)")
        let next = try nextRunIn(daemon)
        #expect(next > 1000 && next <= 1800, "\(next)")
        daemon.stopExpectingNoRun("docs-2")
    }

    /// A new `jitter` counts the next run from the last run's start, as a new interval does
    /// (what is left of the hour, plus up to the new jitter), not as planned.
    @Test func aNewJitter_countsTheNextRunFromTheLastRun() throws {
        let directory = TemporaryDirectory()
        let written = Date()
        let daemon = try start(directory, entry: lastRun(startedAgo: 1800))
        writeConfiguration(directory, fields: #", "jitter": 60"#)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let next = try nextRunIn(daemon)
        #expect(next > 1000 && next <= 1860, "\(next)")
        let line = reloadLine(daemon)
        #expect(line.contains("notice  sync: docs: changed by the reload; next run in "), "\(daemon.log)")
        #expect(isHalfAnHourBefore(written, countedFromTheLastRun(line), jitter: 60), "\(line)")
        daemon.stopExpectingNoRun("docs-2")
    }

    /// `start(directory, entry:, …)` with a CopyGate, and a run of the job by hand, docs-2, going:
    /// held in its copy of `slow-big.bin` (`mebibytes` large: the walk watch fails a copy held
    /// for 5 s plus 1 s per MiB, 7 s for 2 MiB, 13 s for 8 MiB or more) until the gate releases it.
    func startWithARunByHandHeld(_ directory: TemporaryDirectory, entry: String, mebibytes: Int = 2) throws -> (DaemonProcess, CopyGate) {
        let (daemon, gate) = try startWithAGate(directory, entry: entry, mebibytes: mebibytes)
        try holdARunByHand(daemon, gate)
        return (daemon, gate)
    }

    /// `start(directory, entry:, …)` with a CopyGate, and `slow-big.bin` in the source.
    func startWithAGate(_ directory: TemporaryDirectory, entry: String, mebibytes: Int = 2) throws -> (DaemonProcess, CopyGate) {
        let gate = try CopyGate.build(in: directory)
        let big = directory.write("source/slow-big.bin", "")
        try #require(truncate(big, off_t(mebibytes) << 20) == 0, "truncate: \(Errno.current)")
        return (try start(directory, entry: entry, environment: gate.environment), gate)
    }

    /// Starts a run of the job by hand, docs-2, and waits until `gate` holds it.
    func holdARunByHand(_ daemon: DaemonProcess, _ gate: CopyGate) throws {
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let id = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs")), ("detach", .bool(true))]).parameter("runId")?.stringValue
        try #require(id == "docs-2", "\(daemon.log)")
        try #require(gate.waitForReached("slow-big.bin"), "\(daemon.log)")
    }

    /// A reload that changes the interval (and the destination) of a job whose run is going:
    /// the run goes on under the old settings (into the old destination), and counts as the
    /// job's last run: the next comes the new interval after its start, and stays there once
    /// it has succeeded.
    @Test func aRunGoingAtAReload_goesOn_andTheNextRunIsCountedFromIt() throws {
        let directory = TemporaryDirectory()
        let (daemon, gate) = try startWithARunByHandHeld(directory, entry: lastRun(startedAgo: 60))
        defer { gate.release("slow-big.bin") }
        writeConfiguration(directory, interval: 7200, destination: "mirror2")
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let line = reloadLine(daemon)
        #expect(line.contains("notice  sync: docs: changed by the reload; next run in 1h 59m (counted from its run docs-2, going, "
            + "started ") && line.hasSuffix(" ago)"), "\(daemon.log)")
        let before = try nextRunIn(daemon)
        #expect(before > 7000 && before <= 7200, "\(before)")
        gate.release("slow-big.bin")
        try #require(daemon.waitForLog("sync: docs: run docs-2 success"), "\(daemon.log)")
        #expect(FileManager.default.fileExists(atPath: directory.path + "/mirror/slow-big.bin"))
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/mirror2/slow-big.bin"))
        let after = try nextRunIn(daemon)
        #expect(after <= before && after > 7000, "before \(before), after \(after)")
        daemon.stopExpectingNoRun("docs-3")
    }

    /// A run going for longer than the new interval is the run due: the next comes an interval
    /// from the reload, a tick beside the run going is skipped (no second run), and the timer
    /// goes on once the run has ended.
    @Test func aRunGoingLongerThanTheNewInterval_isTheRunDue() throws {
        let directory = TemporaryDirectory()
        // Held through the reload and the tick after it (8 MiB: 13 s before the walk watch
        // would fail it).
        let (daemon, gate) = try startWithARunByHandHeld(directory, entry: lastRun(startedAgo: 60), mebibytes: 8)
        defer { gate.release("slow-big.bin") }
        // Going for more than the new interval, 1 s.
        Thread.sleep(forTimeInterval: 1.5)
        writeConfiguration(directory, interval: 1)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        #expect(reloadLine(daemon).hasSuffix("notice  sync: docs: changed by the reload; next run in 1.0 s (an interval from now: its "
            + "run docs-2 is going, started more than an interval ago)"), "\(daemon.log)")
        #expect(daemon.waitForLog("sync: docs: the previous run is still going; this run is skipped"), "\(daemon.log)")
        gate.release("slow-big.bin")
        try #require(daemon.waitForLog("sync: docs: run docs-2 success"), "\(daemon.log)")
        #expect(daemon.waitForLog("sync: docs: run docs-3 started"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A paused job's run by hand going for longer than the new interval is the run due: when it
    /// then fails (held past the walk watch's limit, 13 s for the 8 MiB file, before the tick an
    /// interval after the reload: seconds of margin on either side of the reload), that run is
    /// missed, and the job, resumed, runs at once.
    /// Before, the reload planned the next run an interval away and the failure left nothing
    /// missed: resumed, the job waited for that tick.
    @Test func aPausedJobsRunGoingLongerThanTheNewInterval_thatFails_leavesTheRunDueMissed() throws {
        let directory = TemporaryDirectory()
        let (daemon, gate) = try startWithARunByHandHeld(directory, entry: lastRun(startedAgo: 60, paused: true), mebibytes: 8)
        defer { gate.release("slow-big.bin") }
        // Going for more than the new interval, 8 s; it fails about 13 s after it was held, the
        // tick would come about 17 s after.
        Thread.sleep(forTimeInterval: 9)
        writeConfiguration(directory, interval: 8)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        try #require(!daemon.log.contains("run docs-2 failed"), "the run failed before the reload: the test proves nothing\n\(daemon.log)")
        #expect(reloadLine(daemon).hasSuffix("notice  sync: docs: changed by the reload; next run in 8.0 s (an interval from now: its "
            + "run docs-2 is going, started more than an interval ago); it stays paused"), "\(daemon.log)")
        try expectTheRunsFailureLeavesTheRunDueMissed(daemon, gate)
    }

    /// A run missed while the job was paused, which a run by hand started after it took on,
    /// stays missed through a reload that counts the next run from that run while it goes, when
    /// the run then fails (held past the walk watch's limit, 7 s for the 2 MiB file): resumed,
    /// the job runs at once. Before, the reload dropped it, and the job waited for its next run.
    @Test func aMissedRunTakenOnByARunByHand_isKeptThroughAReload_whenThatRunFails() throws {
        let directory = TemporaryDirectory()
        let (daemon, gate) = try startWithAGate(directory, entry: lastRun(startedAgo: 3598, paused: true))
        defer { gate.release("slow-big.bin") }
        try #require(daemon.waitForLog("sync: docs: a run is due, but the job is paused: it runs once resumed"), "\(daemon.log)")
        try holdARunByHand(daemon, gate)
        writeConfiguration(directory, interval: 7200)
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let line = reloadLine(daemon)
        #expect(line.contains("notice  sync: docs: changed by the reload; next run in 1h 59m (counted from its run docs-2, going, "
            + "started ") && line.hasSuffix(" ago); it stays paused"), "\(daemon.log)")
        try expectTheRunsFailureLeavesTheRunDueMissed(daemon, gate)
    }

    /// Run docs-2 of the paused job, held at `gate`, fails (past the walk watch's limit), and
    /// that leaves the run due it was to do missed: resumed, the job runs at once (the copy
    /// left behind goes on; the next run's copy of the file passes the gate).
    func expectTheRunsFailureLeavesTheRunDueMissed(_ daemon: DaemonProcess, _ gate: CopyGate) throws {
        try #require(daemon.waitForLog("sync: docs: run docs-2 failed"), "\(daemon.log)")
        #expect(daemon.log.contains("sync: docs: run docs-2, which was to do the work of a run due while the job was paused, failed: that "
            + "run is missed, and runs once the job is resumed"), "\(daemon.log)")
        try daemon.resumeExpectingARunNow()
        gate.release("slow-big.bin")
        #expect(daemon.waitForLog("sync: docs: run docs-3 started"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
