import Synchronization
import TestSupport
import Testing
@testable import WeaveDI

/// Two checks whose fixes ask for each other, fixed by hand in two tasks at once: each fix
/// waits until the other runs, then asks for it. The first to ask waits for the other; the
/// second would wait for the first, which waits for it: it is refused at once, and both ends
/// come without the clock moving. Before, both waited until their attempt timeouts (on this
/// manual clock, for ever: the test failed by its bounded wait).
@Suite struct HealthFixCycleTests {
    static func refusal(inside: String, running: String) -> String {
        #"asked for inside the fix of "\#(inside)", while the fix of "\#(running)" running waits for that fix to end: "#
            + "the two would wait for each other"
    }

    /// `x` and `y`, both failing; each one's fix, once the other's runs, asks for it and keeps
    /// the answer in `inner`.
    func registry(inner: Locked<[FixRecord]>, started: Locked<Set<String>>) -> UnifiedRegistry {
        let registry = UnifiedRegistry(clock: ManualHealthClock(), jitter: { $0 })
        for (name, other) in [("x", "y"), ("y", "x")] {
            registry.register(HealthCheck(name: name, run: { .unhealthy("down") }, fix: {
                started.withLock { _ = $0.insert(name) }
                // Bounded: the other's fix runs at once, as both are asked together.
                _ = await eventually { started.withLock { $0.contains(other) } }
                let record = await registry.fix(other)
                inner.withLock { $0.append(record) }
                return "asked for \(other)"
            }))
        }
        return registry
    }

    @Test func fixesThatAskForEachOther_inTwoTasks_endWithoutWaitingForEachOther() async throws {
        let inner = Locked<[FixRecord]>([])
        let started = Locked<Set<String>>([])
        let registry = registry(inner: inner, started: started)
        let answered = Locked<[FixRecord]>([])
        for name in ["x", "y"] {
            Task {
                let record = await registry.fix(name)
                answered.withLock { $0.append(record) }
            }
        }
        try #require(await eventually { answered.withLock { $0.count } == 2 }, "\(inner.withLock { $0 })")
        #expect(started.withLock { $0 } == ["x", "y"])
        // One of the two fixes asked inside the other's was refused as a cycle: which one is
        // the order the two asked in.
        let refused = inner.withLock { $0 }.filter { $0.outcome == .refused }
        let cycle = refused.filter { $0.message.contains("the two would wait for each other") }
        try #require(cycle.count == 1, "\(inner.withLock { $0 })")
        let running = cycle[0].check
        let other = running == "x" ? "y" : "x"
        #expect(cycle[0].message == Self.refusal(inside: other, running: running), "\(cycle[0])")
        #expect(cycle[0].trigger == .manual)
        // The refusal is recorded, as one of a fix asked inside its own check's.
        #expect(registry.fixHistory().contains(cycle[0]))
        // The outer fixes both ran to their ends (their checks still failing).
        #expect(answered.withLock { $0 }.allSatisfy { $0.outcome == .failed }, "\(answered.withLock { $0 })")
    }

    /// A fix by hand asked inside another that waits for nothing is not refused: only a cycle is.
    @Test func aFixAskedInsideAnother_whoseRunningFixWaitsForNothing_waits() async throws {
        let inner = Locked<[FixRecord]>([])
        let registry = UnifiedRegistry(clock: ManualHealthClock(), jitter: { $0 })
        let yStarted = Locked(false)
        let yGoesOn = Locked(false)
        registry.register(HealthCheck(name: "y", run: { .unhealthy("down") }, fix: {
            yStarted.withLock { $0 = true }
            _ = await eventually { yGoesOn.withLock { $0 } }
            return "y done"
        }))
        registry.register(HealthCheck(name: "x", run: { .unhealthy("down") }, fix: {
            let record = await registry.fix("y")
            inner.withLock { $0.append(record) }
            return "asked for y"
        }))
        let ended = Locked(0)
        Task {
            await registry.fix("y")
            ended.withLock { $0 += 1 }
        }
        try #require(await eventually { yStarted.withLock { $0 } })
        Task {
            await registry.fix("x")
            ended.withLock { $0 += 1 }
        }
        // x's fix waits for y's (one waiter), not refused.
        try #require(await eventually { registry.state.withLock { $0.fixWaiters.values.map(\.count).reduce(0, +) } == 1 })
        yGoesOn.withLock { $0 = true }
        try #require(await eventually { ended.withLock { $0 } == 2 })
        let asked = try #require(inner.withLock { $0 }.first)
        #expect(!asked.message.contains("would wait for each other"), "\(asked)")
        #expect(asked.check == "y" && asked.outcome == .failed, "\(asked)")
    }
}
