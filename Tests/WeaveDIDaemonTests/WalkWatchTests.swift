import Foundation
import Glibc
import Testing
import WeaveDI
@testable import WeaveDIDaemon

/// The watch of a mirror run's worker threads (`WalkWatch`), on a real `MirrorWorkerPool`
/// whose worker blocks in a step as on a file system that does not answer
/// (`StepDeadlineTests.Gate`), with a step limit of 100 ms and a `StuckThreads` of the test's
/// own. (The daemon tests do the same on a real dead mount; a mount that answers lookups and
/// then hangs in the middle of a copy needs a file system server, which those do not have.)
@Suite struct WalkWatchTests {
    typealias Events = StuckThreadsTests.Events

    /// A watch on `/src` and `/dst` with a 100 ms step limit, counting in `stuck`, and the one
    /// worker of its pool blocked in the step `kind` on `name` until `release`.
    final class StuckWorker {
        let watch: WalkWatch
        let pool: MirrorWorkerPool
        let verdict = Locked<WalkVerdict?>(nil)
        private let gate = StuckThreadsTests.gate()
        private var step: Task<Void, any Error>?

        init(_ kind: WalkStepKind, _ name: String, stuck: StuckThreads) throws {
            watch = WalkWatch(source: "/src", destination: "/dst", stuck: stuck, baseLimit: .milliseconds(100))
            try watch.start { [verdict] given in verdict.withLock { $0 = given } }
            pool = try MirrorWorkerPool(threads: 1, watch: watch)
            step = Task(executorPreference: pool) { [gate] in
                try WalkWatch.begin(kind, name)
                gate.block()
            }
        }

        deinit { gate.open() }

        /// Waits up to 30 s for the watch's verdict.
        func waitForVerdict() async throws -> WalkVerdict? {
            let deadline = ContinuousClock.now + .seconds(30)
            while verdict.withLock({ $0 == nil }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            return verdict.withLock { $0 }
        }

        /// The step's call returns; the pool stops.
        func release() async {
            gate.open()
            _ = await step?.result
            pool.shutdown()
        }
    }

    /// A copy waits on two file systems: the thread stuck in one is recorded under both paths,
    /// so that a later step on the destination's file is not tried either (it would leave a
    /// second thread on the same dead mount), and the messages name both.
    @Test func aThreadStuckInACopy_isCountedOnTheSourceAndTheDestination() async throws {
        let events = Events()
        let stuck = StuckThreads(limit: 8, report: events.add)
        let worker = try StuckWorker(.copying, "big.iso", stuck: stuck)
        let watch = worker.watch
        let verdict = try await worker.waitForVerdict()

        if case let .failed(path, reason) = verdict {
            #expect(path == "/src/big.iso")
            #expect(reason == #"copying the file's content to "/dst/big.iso" did not answer within 0.1 s (is its file system responding?)"#)
        } else {
            Issue.record("no failure: \(String(describing: verdict))")
        }
        #expect(stuck.count == 1)
        #expect(events.all == [.stuck(#"a thread is stuck on "/src/big.iso" or "/dst/big.iso" (a mirror run's walk) and left "#
            + "behind; 1 stuck in all (at most 8, then nothing more is tried)")])
        // Neither file is tried again: not the destination's (as a new copy, or a look at it) ...
        let lookAtCopy = WalkStep(.lookingAt(.destination), nil, "big.iso", in: watch)
        #expect(lookAtCopy.paths == ["/dst/big.iso"])
        #expect(stuck.refusal(toTry: lookAtCopy, by: -1).map { StuckThreadsTests.sanitized($0.problem) }
            == #"reading the destination entry was not tried: an earlier thread (a mirror run's walk) has been stuck on "#
                + #""/dst/big.iso" for N s (is its file system responding?)"#)
        // ... nor the source's, nor a copy that only writes there.
        #expect(stuck.refusal(toTry: WalkStep(.openingFile, nil, "big.iso", in: watch), by: -1) != nil)
        #expect(stuck.refusal(toTry: WalkStep(.copying, nil, "big.iso", in: watch), by: -1)?.errno == ETIMEDOUT)
        // Other files are.
        #expect(stuck.refusal(toTry: WalkStep(.copying, nil, "small.txt", in: watch), by: -1) == nil)
        #expect(stuck.refusal(toTry: WalkStep(.lookingAt(.destination), nil, "big.iso.part", in: watch), by: -1) == nil)

        // The call returns at last: the thread is forgotten, and the report names both paths.
        await worker.release()
        let returned = ContinuousClock.now + .seconds(30)
        while stuck.count != 0, ContinuousClock.now < returned { try await Task.sleep(for: .milliseconds(10)) }
        #expect(stuck.count == 0)
        #expect(try await events.waitForReturned())
        #expect(events.all.last.map { if case let .returned(text) = $0 { StuckThreadsTests.sanitized(text) } else { "" } }
            == #"a thread stuck on "/src/big.iso" or "/dst/big.iso" (a mirror run's walk) returned after N s; 0 still stuck"#)
    }

    /// A step on one side is recorded under its own path only.
    @Test func aThreadStuckInAOneSidedStep_isCountedOnItsPathOnly() async throws {
        let stuck = StuckThreads(limit: 8)
        let worker = try StuckWorker(.lookingAt(.destination), "big.iso", stuck: stuck)
        let watch = worker.watch
        let verdict = try await worker.waitForVerdict()
        #expect(stuck.count == 1)
        if case let .failed(path, reason) = verdict {
            #expect(path == "/dst/big.iso")
            #expect(reason == "reading the destination entry did not answer within 0.1 s (is its file system responding?)")
        } else {
            Issue.record("no failure")
        }
        #expect(stuck.refusal(toTry: WalkStep(.lookingAt(.destination), nil, "big.iso", in: watch), by: -1) != nil)
        #expect(stuck.refusal(toTry: WalkStep(.openingFile, nil, "big.iso", in: watch), by: -1) == nil)
        // A copy that writes there is not tried: its destination side is where the thread waits,
        // and the path its run fails under.
        #expect(stuck.refusal(toTry: WalkStep(.copying, nil, "big.iso", in: watch), by: -1)?.at == "/dst/big.iso")
        let refused = try StuckWorker(.copying, "big.iso", stuck: stuck)
        if case let .failed(path, reason) = try await refused.waitForVerdict() {
            #expect(path == "/dst/big.iso")
            #expect(StuckThreadsTests.sanitized(reason) == #"copying the file's content to "/dst/big.iso" was not tried: an "#
                + #"earlier thread (a mirror run's walk) has been stuck on "/dst/big.iso" for N s (is its file system responding?)"#)
        } else {
            Issue.record("the copy was tried")
        }
        await refused.release()
        await worker.release()
    }
}
