import Foundation
import Glibc
import Testing
import WeaveDI
@testable import WeaveDIDaemon

/// The bound on threads left stuck by `StepDeadline`: a step on a path a thread is stuck on is
/// not tried, and beyond the limit nothing new starts; a stuck thread that returns is reported
/// and forgotten. Each test counts its threads apart (a `StuckThreads` of its own), with steps
/// that block as on a dead mount (`StepDeadlineTests.Gate`).
@Suite struct StuckThreadsTests {
    typealias Gate = StepDeadlineTests.Gate

    /// A gate that stays shut while the test runs, however slowly: each test opens its own.
    /// (60 s was not enough under ThreadSanitizer with the whole suite running, whose tests
    /// can keep this one's task off the cooperative pool for longer.)
    static func gate() -> Gate { Gate(giveUp: .seconds(600)) }

    static let file = "/etc/weavedi/weavedid.json"
    static let reading = LoadStep("reading", file: file, fieldPath: nil, path: file)

    static func resolving(_ path: String) -> LoadStep {
        LoadStep("resolving", file: file, fieldPath: "sync.jobs[0].destination", path: path)
    }

    /// What `stuck` reports, in order.
    final class Events: Sendable {
        private let events = Locked<[StuckThreads.Event]>([])
        var all: [StuckThreads.Event] { events.withLock { $0 } }
        func add(_ event: StuckThreads.Event) { events.withLock { $0.append(event) } }

        /// Waits up to 30 s for a `returned` event (sent just after the count drops); true once there is one.
        func waitForReturned() async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(30)
            func returned() -> Bool { all.contains { if case .returned = $0 { true } else { false } } }
            while !returned(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            return returned()
        }
    }

    /// A load with `limit` from step `first`, counted in `stuck`: its value, or its error with
    /// the durations in it written `N`.
    func load(
        _ stuck: StuckThreads, limit: Duration = .seconds(5), first: LoadStep = reading,
        _ work: @escaping StepDeadline.Work<LoadStep, Int>
    ) -> Result<Int, ConfigurationError> {
        Result { () throws(ConfigurationError) -> Int in
            try StepDeadline.run(limit: limit, first: first, for: "a configuration load", stuck: stuck, work)
        }.mapError {
            ConfigurationError(file: $0.file, fieldPath: $0.fieldPath, problem: Self.sanitized($0.problem), errno: $0.errno)
        }
    }

    /// A load that blocks on `path` behind `gate` until its deadline (100 ms) leaves it stuck.
    /// Its first step has no deadline (`StepDeadlineTests.untimed`): its thread may start late
    /// on a busy machine, and the step on `path` is the one timed out.
    func leaveStuck(_ stuck: StuckThreads, on path: String, behind gate: Gate) {
        let result = load(stuck, limit: .milliseconds(100), first: StepDeadlineTests.untimed) { note throws(ConfigurationError) in
            try note(Self.resolving(path))
            gate.block()
            return 0
        }
        #expect(result.failureValue?.errno == ETIMEDOUT)
    }

    /// `for 3 s` and `after 3 s` written `for N s`, `after N s`.
    static func sanitized(_ text: String) -> String {
        text.replacing(/(for|after) [0-9]+ s/) { "\($0.output.1) N s" }
    }

    /// Waits up to 30 s for `stuck` to count `count` threads.
    func waitFor(_ stuck: StuckThreads, toCount count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while stuck.count != count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(stuck.count == count)
    }

    @Test func aStepOnAPathAThreadIsStuckOn_isNotTried_untilTheThreadReturns() async throws {
        let events = Events()
        let stuck = StuckThreads(limit: 8, report: events.add)
        let gate = Self.gate()
        defer { gate.open() }
        leaveStuck(stuck, on: "/mnt/nfs/backup", behind: gate)
        #expect(stuck.count == 1)
        #expect(events.all == [.stuck(
            #"a thread is stuck on "/mnt/nfs/backup" (a configuration load) and left behind; 1 stuck in all (at most 8, then nothing more is tried)"#)])
        // The path, and a path below it, fail at once, before their call: no thread waits on them.
        let tried = Locked(0)
        for path in ["/mnt/nfs/backup", "/mnt/nfs/backup/docs"] {
            let result = load(stuck) { note throws(ConfigurationError) in
                try note(Self.resolving(path))
                tried.withLock { $0 += 1 }
                return 1
            }
            #expect(result.failureValue?.description == "/etc/weavedi/weavedid.json: sync.jobs[0].destination: resolving \"\(path)\" "
                + #"was not tried: an earlier thread (a configuration load) has been stuck on "/mnt/nfs/backup" for N s "#
                + "(is its file system responding?)")
            #expect(result.failureValue?.errno == ETIMEDOUT)
        }
        #expect(tried.withLock { $0 } == 0)
        // Another path, even one that starts alike, is tried.
        #expect(load(stuck) { note throws(ConfigurationError) in
            try note(Self.resolving("/mnt/nfs/backup2"))
            return 2
        }.successValue == 2)
        #expect(stuck.count == 1)
        // The stuck call returns: the thread is reported and forgotten, and the path tried again.
        gate.open()
        try await waitFor(stuck, toCount: 0)
        #expect(try await events.waitForReturned())
        #expect(events.all.last.map { Self.sanitized("\($0)") }
            == #"returned("a thread stuck on \"/mnt/nfs/backup\" (a configuration load) returned after N s; 0 still stuck")"#)
        #expect(load(stuck) { note throws(ConfigurationError) in
            try note(Self.resolving("/mnt/nfs/backup"))
            return 3
        }.successValue == 3)
    }

    @Test func atTheLimit_nothingNewStarts_andTheErrorNamesThePaths() async throws {
        let stuck = StuckThreads(limit: 3)
        let gates = ["/mnt/a", "/mnt/b", "/mnt/c"].map { ($0, Self.gate()) }
        defer { for (_, gate) in gates { gate.open() } }
        for (path, gate) in gates { leaveStuck(stuck, on: path, behind: gate) }
        #expect(stuck.count == 3)
        let started = Locked(false)
        let refused = load(stuck) { _ throws(ConfigurationError) in
            started.withLock { $0 = true }
            return 1
        }
        #expect(refused.failureValue?.description == "/etc/weavedi/weavedid.json: reading the file was not tried: 3 threads are stuck "
            + #"on file systems that do not answer, the most there may be ("/mnt/a" for N s, "/mnt/b" for N s, "/mnt/c" for N s); "#
            + "nothing more is tried until one of them returns")
        #expect(refused.failureValue?.errno == EAGAIN)
        // The async form refuses alike.
        do throws(ConfigurationError) {
            _ = try await StepDeadline.run(limit: .seconds(5), first: Self.reading, for: "a configuration load", stuck: stuck) {
                _ throws(ConfigurationError) in
                started.withLock { $0 = true }
                return 1
            }
            Issue.record("the async load started")
        } catch {
            #expect(error.errno == EAGAIN)
        }
        #expect(started.withLock { $0 } == false)
        // Once one returns, work starts again.
        gates[1].1.open()
        try await waitFor(stuck, toCount: 2)
        #expect(load(stuck) { _ throws(ConfigurationError) in 4 }.successValue == 4)
    }

    @Test func aStuckThreadWhoseCallReturns_goesNoFurther() async throws {
        let events = Events()
        let stuck = StuckThreads(limit: 8, report: events.add)
        let gate = Self.gate()
        defer { gate.open() }
        let further = Locked(false)
        let result = load(stuck, limit: .milliseconds(100), first: StepDeadlineTests.untimed) { note throws(ConfigurationError) in
            try note(Self.resolving("/mnt/one"))
            gate.block()
            try note(Self.resolving("/mnt/two"))
            further.withLock { $0 = true }
            return 0
        }
        #expect(result.failureValue?.errno == ETIMEDOUT)
        // The call answers at last: nobody waits for the work, which stops before its next step.
        gate.open()
        try await waitFor(stuck, toCount: 0)
        #expect(further.withLock { $0 } == false)
        #expect(try await events.waitForReturned())
        #expect(events.all.last.map { Self.sanitized("\($0)") }
            == #"returned("a thread stuck on \"/mnt/one\" (a configuration load) returned after N s; 0 still stuck")"#)
    }
}

extension Result {
    var successValue: Success? {
        if case let .success(value) = self { return value }
        return nil
    }

    var failureValue: Failure? {
        if case let .failure(error) = self { return error }
        return nil
    }
}
