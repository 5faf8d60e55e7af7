import Synchronization
import Testing
import WeaveDI
import WeaveDIControl
@testable import WeaveDIDaemon

/// GetHealth's cached reply: the same bytes as encoding the report, follows every change.
@Suite struct HealthReplyCacheTests {
    final class Runs: Sendable {
        let count = Atomic<Int>(0)
    }

    /// The cached reply and the reply encoded from scratch, for the registry's report now.
    func replies(_ registry: UnifiedRegistry, _ cache: HealthReplyCache, tags: Set<String>? = nil) -> (cached: String, expected: String) {
        var out: [UInt8] = []
        cache.write(registry, tags: tags, into: &out)
        let expected = VarlinkReply(parameters: [("health", ReportEncoding.health(registry.report(tags: tags)))]).encoded()
        return (String(decoding: out, as: UTF8.self), String(decoding: expected, as: UTF8.self))
    }

    @Test func reply_isTheEncodedReport_andFollowsItsChanges() async {
        let clock = ManualHealthClock()
        let registry = UnifiedRegistry(clock: clock)
        let runs = Runs()
        registry.register(HealthCheck(name: "counting", tags: [HealthCheck.liveness]) {
            .healthy("run \(runs.count.add(1, ordering: .relaxed).newValue)", data: ["quote": "\"", "n": "1"])
        })
        registry.register(HealthCheck(name: "slow", tags: [HealthCheck.readiness]) { .degraded("slow\ndisk") })
        let cache = HealthReplyCache()

        let before = replies(registry, cache)  // checks not run yet
        #expect(before.cached == before.expected)
        #expect(before.cached.contains(#""message":"not run yet""#))

        await registry.runChecks()
        let first = replies(registry, cache)
        #expect(first.cached == first.expected)
        #expect(first.cached.contains(#""message":"run 1""#) && first.cached.contains(#""status":"degraded""#))

        clock.advance(by: .seconds(5))  // only takenAt changes: the cached checks, a fresh takenAt
        let later = replies(registry, cache)
        #expect(later.cached == later.expected)
        #expect(later.cached != first.cached)
        #expect(later.cached.contains(#""takenAt":1700000005"#))

        await registry.runChecks()  // a changed report
        let changed = replies(registry, cache)
        #expect(changed.cached == changed.expected)
        #expect(changed.cached.contains(#""message":"run 2""#))

        let tagged = replies(registry, cache, tags: [HealthCheck.readiness])
        #expect(tagged.cached == tagged.expected)
        #expect(!tagged.cached.contains("counting") && tagged.cached.contains("slow"))
        let untagged = replies(registry, cache)
        #expect(untagged.cached == untagged.expected && untagged.cached.contains("counting"))

        // Another registry with as many changes: its own reply.
        let other = UnifiedRegistry(clock: clock)
        while other.reportChanges < registry.reportChanges { other.register(HealthCheck(name: "other") { .healthy() }) }
        #expect(other.reportChanges == registry.reportChanges)
        let fromOther = replies(other, cache)
        #expect(fromOther.cached == fromOther.expected && fromOther.cached.contains(#""name":"other""#))

        registry.register(HealthCheck(name: "added") { .healthy() })  // a check more, not run
        let added = replies(registry, cache)
        #expect(added.cached == added.expected && added.cached.contains(#""name":"added""#))
        _ = registry.unregister("added")
        let removed = replies(registry, cache)
        #expect(removed.cached == removed.expected && !removed.cached.contains("added"))
    }

    @Test func reportChanges_movesWithEveryChangeToTheReport_andOnlyThen() async throws {
        let clock = ManualHealthClock()
        let registry = UnifiedRegistry(clock: clock)
        var seen = registry.reportChanges
        func moved() -> Bool {
            defer { seen = registry.reportChanges }
            return registry.reportChanges != seen
        }
        _ = registry.report()
        clock.advance(by: .seconds(5))
        #expect(!moved(), "reading the report, or time passing, changes nothing in it")
        let sick = Atomic(true)
        registry.register(HealthCheck(name: "disk") { sick.load(ordering: .relaxed) ? .unhealthy("full") : .healthy() } fix: {
            sick.store(false, ordering: .relaxed)
            return "emptied"
        })
        #expect(moved(), "registered")
        await registry.runChecks()
        #expect(moved(), "run")
        let before = registry.report()
        _ = await registry.fix("disk")
        #expect(moved(), "fixed")
        #expect(registry.report().checks != before.checks)
        _ = registry.unregister("disk")
        #expect(moved(), "removed")
    }
}
