import Testing
@testable import WeaveDI

final class MutualLeft: Sendable {}
final class MutualRight: Sendable {}
final class GivenClock: Sendable {}

/// Two components, each providing a type whose factory requires the other's.
struct MutualLeftComponent: WeaveDI.Component {
    @Provide(scope: .singleton, { r in _ = try r.require(MutualRight.self); return MutualLeft() })
    var left: MutualLeft
}
struct MutualRightComponent: WeaveDI.Component {
    @Provide(scope: .singleton, { r in _ = try r.require(MutualLeft.self); return MutualRight() })
    var right: MutualRight
}

/// `CycleReport.notBuilt`: the registrations whose dependencies `checkCycles()` cannot know,
/// so that an empty `cycles` is never taken for a graph without cycles when nothing was built.
@Suite struct NotBuiltTests {
    @Test func twoComponentsRequiringEachOther_neverBuilt_areListed_notPassedAsNoCycle() async {
        let container = WeaveDI.Container()
        await container.bootstrap(modules: [MutualLeftComponent(), MutualRightComponent()])
        let before = container.checkCycles()
        #expect(before.cycles.isEmpty && before.edgeCount == 0)
        #expect(before.notBuilt == ["MutualLeft", "MutualRight"])
        #expect(before.json.serialized
            == #"{"componentCount":2,"edgeCount":0,"cycles":[],"notBuilt":["MutualLeft","MutualRight"]}"#)

        _ = await container.validate()
        let after = container.checkCycles()
        #expect(after.cycles == [["MutualLeft", "MutualRight"]])
        // Both builds failed (the cycle), but each ran its factory and recorded what it asked for.
        #expect(after.notBuilt.isEmpty)
        #expect(after.json.serialized
            == #"{"componentCount":2,"edgeCount":2,"cycles":[["MutualLeft","MutualRight"]],"notBuilt":[]}"#)
    }

    @Test func anInstanceRegistration_hasNoFactory_andIsNeverListed() {
        let container = WeaveDI.Container()
        container.register(GivenClock.self, instance: GivenClock())
        container.register(NodeA.self) { NodeA() }
        #expect(container.checkCycles().notBuilt == ["NodeA"])
        #expect(container.resolve(NodeA.self) != nil)
        #expect(container.checkCycles().notBuilt.isEmpty)
    }

    @Test func aRegistrationReplacedAfterItWasBuilt_isListedUntilItsNewFactoryRuns() {
        let container = WeaveDI.Container()
        container.register(NodeA.self) { NodeA() }
        #expect(container.resolve(NodeA.self) != nil)
        #expect(container.checkCycles().notBuilt.isEmpty)
        container.register(NodeA.self) { r in _ = r.resolve(NodeB.self); return NodeA() }
        #expect(container.checkCycles().notBuilt == ["NodeA"])
        #expect(container.resolve(NodeA.self) != nil)
        let report = container.checkCycles()
        #expect(report.notBuilt.isEmpty && report.edgeCount == 1)
    }

    @Test func transientAndScopedRegistrations_areListedUntilBuiltInTheirScope() async throws {
        let container = WeaveDI.Container()
        container.register(Generator.self, scope: .transient) { Generator() }
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        #expect(container.checkCycles().notBuilt == ["Generator", "SessionCache"])
        _ = container.resolve(Generator.self)
        #expect(container.checkCycles().notBuilt == ["SessionCache"])
        let session = container.openSession(id: "s")
        _ = try session.require(SessionCache.self)
        await session.close()
        #expect(container.checkCycles().notBuilt.isEmpty)
    }

    @Test func aBuildThatFailedPartWay_recordedWhatItAskedFor_andIsNotListed() async {
        // NodeA's factory asks for NodeB (not registered) and fails there: the edge it asked
        // for is known; validate() reports the failure.
        let container = WeaveDI.Container()
        container.register(NodeA.self) { r in _ = try r.require(NodeB.self); return NodeA() }
        let validation = await container.validate()
        #expect(validation.failures.map(\.type) == ["NodeA"])
        let report = container.checkCycles()
        #expect(report.notBuilt.isEmpty && report.edgeCount == 1)
        #expect(container.registrations.first?.dependencies == ["NodeB"])
    }

    @Test func releasingOrEvictingABuiltSingleton_keepsWhatItsFactoryRecorded() async {
        // The same factory: the registration's edges are still known after its instance goes.
        let container = WeaveDI.Container()
        container.register(NodeA.self) { r in _ = try r.require(NodeB.self); return NodeA() }
        container.register(NodeB.self) { r in _ = r.resolve(NodeA.self); return NodeB() }
        _ = await container.validate()
        let validated = container.checkCycles()
        #expect(validated.cycles == [["NodeA", "NodeB"]] && validated.notBuilt.isEmpty)
        container.register(NodeC.self) { r in _ = try r.require(NodeB.self); return NodeC() }
        #expect(container.resolve(NodeC.self) != nil)
        await container.releaseAll()
        #expect(container.checkCycles().cycles == [["NodeA", "NodeB"]])
        #expect(container.checkCycles().notBuilt.isEmpty)
        #expect(container.registrations.map(\.dependencies) == [["NodeB"], ["NodeA"], ["NodeB"]])
        #expect(container.resolve(NodeC.self) != nil)
        #expect(await container.evict(NodeC.self))
        #expect(container.checkCycles().notBuilt.isEmpty)
        #expect(container.registrations.last?.dependencies == ["NodeB"])
    }

    @Test func namesAreSpelledAsTheOtherReportsSpellThem_qualifiedWhenTwoShareOne() {
        let container = WeaveDI.Container()
        container.register(Left.Node.self) { Left.Node() }
        container.register(Right.Node.self) { Right.Node() }
        #expect(container.checkCycles().notBuilt == ["WeaveDITests.Left.Node", "WeaveDITests.Right.Node"])
        #expect(container.registrations.map(\.type) == ["WeaveDITests.Left.Node", "WeaveDITests.Right.Node"])
    }
}
