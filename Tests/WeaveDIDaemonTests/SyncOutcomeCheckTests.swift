import Foundation
import Testing
import WeaveDI
import WeaveDIControl
@testable import WeaveDIDaemon
import WeaveDIPosix

/// A job kind whose runs return what the test says, whatever it is.
struct ReturningJob: SyncJob {
    let outcome: SyncOutcome
    func run(_ context: SyncRunContext) async -> SyncOutcome { outcome }
}

/// What the scheduler takes of a run's outcome: a kind of a program's own may return anything,
/// and the daemon never traps on it, nor writes a state file or a reply it would refuse.
@Suite(.serialized) struct SyncOutcomeCheckTests {
    static let outcomes = Locked<[String: SyncOutcome]>([:])
    let state = TemporaryDirectory()

    init() {
        SyncJobKinds.register("returning") { job, _ in ReturningJob(outcome: SyncOutcomeCheckTests.outcomes.withLock { $0[job.name]! }) }
    }

    /// A scheduler with the job `web` of kind `returning`, whose runs return `outcome`; its log
    /// goes to `log.txt` in the state directory.
    func scheduler(_ outcome: SyncOutcome) throws -> SyncScheduler {
        Self.outcomes.withLock { $0["web"] = outcome }
        var configuration = DaemonConfiguration(source: .file(path: "/test.json"), environment: [:], workingDirectory: state.path)
        configuration.stateDirectory = state.path
        var job = DaemonConfiguration.Job(name: "web")
        job.kind = "returning"
        job.interval = .seconds(3600)
        configuration.sync.jobs = [job]
        let output = try FileDescriptor.open(state.path + "/log.txt", .writeOnly, options: [.create, .append]).release()
        let log = DaemonLog(filter: LogFilter(defaultLevel: .info, overrides: [:]), journald: false, output: output)
        return SyncScheduler(
            store: ConfigurationStore(configuration), container: WeaveDI.Container(), log: log,
            registry: UnifiedRegistry(clock: ManualHealthClock()))
    }

    var logged: String { state.read("log.txt") ?? "" }

    /// Counts out of range (negative, or past what a JSON number holds) are taken into range
    /// (the totals add them up without trapping), one warning names the job, its kind and what was
    /// mended, and the state file keeps the last run at a restart. Before, `Int.max` counts
    /// trapped (the daemon crashed), and a negative one made the restart drop the last run.
    @Test func countsOutOfRange_areTakenIntoRange_andAddedUpWithoutTrapping() async throws {
        var outcome = SyncOutcome(result: .success)
        outcome.copied = .max
        outcome.updated = .max
        outcome.bytes = .max
        outcome.deleted = -5
        let scheduler = try scheduler(outcome)
        try await scheduler.start()
        for _ in 1...2 {
            let record = try await scheduler.runNow("web") { _ in }
            #expect(record.copied == SyncOutcome.maximumCount && record.updated == SyncOutcome.maximumCount, "\(record)")
            #expect(record.deleted == 0 && record.bytes == SyncOutcome.maximumCount, "\(record)")
        }
        let metrics = await scheduler.metrics()
        // Counters as Prometheus has them, floating-point numbers.
        func counter(_ name: String) -> Double? {
            metrics.split(separator: "\n").first { $0.hasPrefix(name + #"{job="web"} "#) }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        #expect(counter("weavedi_sync_files_copied_total") == Double(4 * SyncOutcome.maximumCount), "\(metrics)")
        #expect(counter("weavedi_sync_bytes_copied_total") == Double(2 * SyncOutcome.maximumCount), "\(metrics)")
        await scheduler.stop()
        let max = SyncOutcome.maximumCount
        let line = #"warning sync: job "web" (kind "returning") returned a filesCopied past \#(max) (\#(Int.max)); taken as \#(max); "#
            + #"a filesUpdated past \#(max) (\#(Int.max)); taken as \#(max); a negative filesDeleted (-5); taken as 0; "#
            + #"a bytes past \#(max) (\#(Int.max)); taken as \#(max)"#
        #expect(logged.components(separatedBy: line).count == 3, "\(logged)")

        let again = try self.scheduler(outcome)
        try await again.start()
        let last = (await again.jobs()).first?[member: "lastRun"]
        #expect(last?[member: "id"]?.stringValue == "web-2", "\(last.map { "\($0)" } ?? "no last run")")
        #expect(last?[member: "filesDeleted"]?.intValue == 0, "\(last.map { "\($0)" } ?? "no last run")")
        #expect(!logged.contains("dropped"), "\(logged)")
        await again.stop()
    }

    /// Failed items whose path or reason was set past the cap after they were made are cut to
    /// it, `errors` is at least the items listed, and a `sourceMounts` the state file would
    /// refuse is not taken: `ListJobs` and the state file stay small, and a restart keeps the
    /// job's last run and items. Before, 20 items of 1 MiB made both over 16 MiB.
    @Test func overLongItems_fewErrors_andBadMounts_areMended() async throws {
        var outcome = SyncOutcome(result: .partial)
        let huge = String(repeating: "x", count: 1 << 20)
        outcome.errors = (0..<20).map { index in
            var item = SyncItemError(path: "p\(index)", reason: "r")
            item.path = huge
            item.reason = huge
            return item
        }
        outcome.sourceMounts = SyncSourceMounts(source: "relative", paths: ["a"])
        let scheduler = try scheduler(outcome)
        try await scheduler.start()
        let record = try await scheduler.runNow("web") { _ in }
        #expect(record.errorCount == 20, "\(record.errorCount)")
        #expect(record.errors.count == 20 && record.errors.allSatisfy {
            $0.path.utf8.count <= SyncItemError.byteLimit && $0.reason.utf8.count <= SyncItemError.byteLimit })
        let reply = JSONValue.array(await scheduler.jobs()).serialized
        #expect(reply.utf8.count < 100_000, "\(reply.utf8.count) bytes")
        await scheduler.stop()
        #expect(logged.contains(#"warning sync: job "web" (kind "returning") returned errors 0, fewer than its 20 failed "#
            + "items; taken as 20; 20 failed item(s) with a path or reason over 1024 bytes; cut to it; a sourceMounts the "
            + #"state file would refuse (sourceMounts.source: expected an absolute path, got "relative"); not taken, the job "#
            + "keeps what it remembered"), "\(logged)")
        let saved = try #require(state.read("jobs.json"))
        #expect(saved.utf8.count < 100_000, "\(saved.utf8.count) bytes")

        let again = try self.scheduler(outcome)
        try await again.start()
        let last = (await again.jobs()).first?[member: "lastRun"]
        #expect(last?[member: "failedItems"]?.arrayValue?.count == 20, "\(last.map { "\($0)" } ?? "no last run")")
        #expect(!logged.contains("dropped"), "\(logged)")
        await again.stop()
    }
}
