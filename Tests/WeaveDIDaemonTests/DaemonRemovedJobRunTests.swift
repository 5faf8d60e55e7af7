import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// The real daemon with a job removed by a reload while its run goes, and added back by a
/// later reload while that run is still stopping. The run is held there by a source
/// subdirectory that stops answering (`DeadMount`): cancelled, the run waits for its stuck step
/// `WalkWatch.cancelGrace` (2 s) before it ends without it.
@Suite struct DaemonRemovedJobRunTests {
    /// When the log line holding `text` was written (its timestamp), if it was.
    static func loggedAt(_ text: String, in log: String) -> Date? {
        guard let line = log.split(separator: "\n").first(where: { $0.contains(text) }),
            let stamp = line.split(separator: " ").first
        else { return nil }
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return format.date(from: String(stamp))
    }

    /// Until the removed job's run has ended, the job added back says so (`ListJobs`'
    /// `removedRunStopping`, `weavedictl jobs`' state), instead of `scheduled` for a job whose
    /// ticks are skipped; once it has ended, the run its first tick (`runAtStart`) skipped
    /// starts, not an interval (an hour) later.
    ///
    /// What is seen while the run stops must be seen within its `cancelGrace`: an attempt whose
    /// run ended (by the log's time) before both views were taken proves nothing, and is made
    /// again, three times at most.
    @Test func aJobAddedBackWhileTheRemovedJobsRunStops_saysItWaits_andRunsOnceThatRunEnded() throws {
        if let reason = DeadMount.unsupportedReason {
            try Test.cancel("\(reason)")
        }
        for attempt in 1...3 {
            if try attemptWhileTheRemovedRunStops() { return }
            print("\(#function): attempt \(attempt): the removed job's run ended before both views were taken; again")
        }
        Issue.record("the removed job's run ended before ListJobs and weavedictl jobs answered, three times")
    }

    /// One attempt; false when the removed run ended before both views of it were taken.
    func attemptWhileTheRemovedRunStops() throws -> Bool {
        let wrapper = try #require(MountNamespace.wrapper())
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("src/a.txt", "a")
        directory.write("src/z/dead/inside.txt", "inside")
        try FileManager.default.createDirectory(atPath: "\(d)/dst/z/dead", withIntermediateDirectories: true)
        func configuration(interval: Int?, runAtStart: Bool = false) -> String {
            let job = interval.map {
                #"{"name": "walk", "source": "\#(d)/src", "destination": "\#(d)/dst", "interval": \#($0), "runAtStart": \#(runAtStart)}"#
            }
            return #"{"sync": {"jobs": [\#(job ?? "")]}}"#
        }
        let config = directory.write("weavedid.json", configuration(interval: 3600))
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory, wrapper: wrapper)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let mount = try DeadMount(at: "\(d)/src/z/dead", inNamespaceOf: daemon.pid, scratch: directory)
        defer { mount.revive() }
        let started = try daemon.sendCall("RunJob", #"{"name": "walk", "detach": true}"#).varlinkReply()
        #expect(started?.parameter("runId") == .string("walk-1"), "\(daemon.log)")
        try #require(DeadMount.threadsWaiting(in: daemon.pid, expected: 1) == 1, "\(daemon.log)")
        // Removed: its run is cancelled, and waits the grace for its step on the mount.
        directory.write("weavedid.json", configuration(interval: nil))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        // Added back, to run at once and then hourly: its first tick is skipped while walk-1 stops.
        directory.write("weavedid.json", configuration(interval: 3600, runAtStart: true))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let waiting = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        let table = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs"])
        let seen = Date()
        // walk-1 ends, and the run the job's first tick skipped starts then.
        let ended = "walk: run walk-1 of a job removed by a reload cancelled"
        #expect(daemon.waitForLog(ended), "\(daemon.log)")
        guard let endedAt = Self.loggedAt(ended, in: daemon.log), endedAt > seen else { return false }
        #expect(waiting?[member: "removedRunStopping"] == .string("walk-1"), "\(String(describing: waiting)) \(daemon.log)")
        #expect(waiting?[member: "running"] == .bool(false), "\(String(describing: waiting))")
        #expect(table.output.contains(" waits for run walk-1 of the removed job to stop "), "\(table.all) \(daemon.log)")
        #expect(daemon.log.contains("walk: run walk-1 of the removed job of this name is still stopping; this run starts once it has"))
        #expect(daemon.waitForLog("walk: run walk-2 started"), "\(daemon.log)")
        let after = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(after?[member: "removedRunStopping"] == .null, "\(String(describing: after))")
        let shown = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs"])
        #expect(!shown.output.contains("removed job"), "\(shown.all)")
        mount.revive()
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        return true
    }
}
