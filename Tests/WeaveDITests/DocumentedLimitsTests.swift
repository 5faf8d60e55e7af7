import Synchronization
import Testing
@testable import WeaveDI

/// What the README says the library does not do, held to it: a replaced or unregistered
/// singleton is disposed only by the next `releaseAll()`; a failed build is not remembered;
/// `Task.detached` leaves the task-locals behind.
@Suite struct DocumentedLimitsTests {
    /// Registering a type again, or unregistering it, leaves its built `Disposable` singleton
    /// undisposed; the next `releaseAll()` disposes it (and `evict` would at once).
    @Test func aReplacedOrUnregisteredSingleton_isDisposedByTheNextReleaseAll() async throws {
        let container = WeaveDI.Container()
        let ledger = Ledger()
        container.register(Tracked.self) { Tracked("first", ledger) }
        _ = try container.require(Tracked.self)
        container.register(Tracked.self) { Tracked("second", ledger) }
        _ = try container.require(Tracked.self)
        #expect(container.unregister(Tracked.self))
        #expect(ledger.disposals == [])
        await container.releaseAll()
        #expect(ledger.disposals == ["second", "first"])
    }

    /// `makeFresh` (what a `@Factory` read calls) of a type registered with `instance:` gives
    /// that instance every time: there is no factory to build another; a factory's type gets a
    /// new one each time.
    @Test func makeFreshOfAnInstanceRegistration_givesThatInstance() throws {
        final class Held: Sendable {}
        final class Built: Sendable {}
        let container = WeaveDI.Container()
        let held = Held()
        container.register(Held.self, instance: held)
        container.register(Built.self) { Built() }
        #expect(try container.makeFresh(Held.self) === held)
        #expect(try container.makeFresh(Held.self) === container.makeFresh(Held.self))
        #expect(try container.makeFresh(Built.self) !== container.makeFresh(Built.self))
    }

    /// A factory that threw is run again by the next resolve: nothing remembers the failure.
    @Test func aFailedBuild_isTriedAgain_byTheNextResolve() {
        struct Refused: Error {}
        let runs = Atomic<Int>(0)
        let container = WeaveDI.Container()
        container.register(Generator.self) { () throws -> Generator in
            runs.add(1, ordering: .relaxed)
            throw Refused()
        }
        #expect(container.resolve(Generator.self) == nil)
        #expect(container.resolve(Generator.self) == nil)
        #expect(runs.load(ordering: .relaxed) == 2)
    }

    /// An object made inside `withInjectedValues` and read after the call reads the values in
    /// effect at the read (TCA's `@Dependency` would keep the ones where it was made).
    @Test func anObjectMadeUnderAnOverride_readsTheLiveValue_afterTheCall() {
        struct Reader { @Injected(\.name) var name: String }
        let reader = withInjectedValues { $0.name = "overridden" } operation: {
            let made = Reader()
            #expect(made.name == "overridden")
            return made
        }
        #expect(reader.name != "overridden")
        #expect(reader.name == InjectedValues.current.name)
    }

    /// A detached task sees neither the overrides of the `withInjectedValues` it was started in
    /// nor the current session; a child task sees both.
    @Test func aDetachedTask_seesNeitherOverridesNorTheCurrentSession() async throws {
        let inherited = await withInjectedValues { $0.name = "overridden" } operation: {
            (child: await Task { InjectedValues.current.name }.value,
             detached: await Task.detached { InjectedValues.current.name }.value)
        }
        #expect(inherited.child == "overridden")
        #expect(inherited.detached != "overridden")

        let container = WeaveDI.Container()
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        let session = container.openSession(id: "documented-limits")
        let found = await session.withCurrent {
            (child: await Task { container.resolve(SessionCache.self) != nil }.value,
             detached: await Task.detached { container.resolve(SessionCache.self) != nil }.value)
        }
        await session.close()
        #expect(found.child)
        #expect(!found.detached)
    }
}
