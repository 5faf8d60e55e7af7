import Synchronization
import Testing
@testable import WeaveDI

@Suite struct ContainerTests {
    @Test func singleton_isBuiltLazilyAndOnce_under100ConcurrentFirstResolves() {
        let container = WeaveDI.Container()
        let ledger = Ledger()
        container.register(Tracked.self) { Tracked("s", ledger) }
        #expect(ledger.buildCount == 0)
        let seen = Locked<Set<ObjectIdentifier>>([])
        onThreads(100) { _ in
            let instance = container.resolve(Tracked.self)!
            seen.withLock { _ = $0.insert(ObjectIdentifier(instance)) }
        }
        #expect(ledger.buildCount == 1)
        #expect(seen.withLock { $0.count } == 1)
    }

    @Test func singleton_isTheDefaultScope_andPerContainer() throws {
        let first = WeaveDI.Container(), second = WeaveDI.Container()
        for container in [first, second] { container.register(Generator.self) { Generator() } }
        let a = try first.require(Generator.self), b = try first.require(Generator.self)
        #expect(a === b)
        #expect(try second.require(Generator.self) !== a)
    }

    @Test func transient_givesANewInstanceOnEveryResolve() throws {
        let container = WeaveDI.Container()
        container.register(Generator.self, scope: .transient) { Generator() }
        let a = try container.require(Generator.self)
        let b = try container.require(Generator.self)
        #expect(a !== b)
    }

    @Test func registeredInstance_isReturnedAsIs() throws {
        let container = WeaveDI.Container()
        let mock = MockNet()
        container.register((any Net).self, instance: mock)
        #expect(try container.require((any Net).self) as AnyObject === mock)
    }

    @Test func constructorInjection_factoryGetsAResolver() throws {
        let container = WeaveDI.Container()
        container.register((any Net).self) { LiveNet() }
        container.register(Holder<any Net>.self, scope: .transient) { r in
            Holder(try r.require((any Net).self))
        }
        let holder = try container.require(Holder<any Net>.self)
        #expect(holder.value.fetch() == "live")
        #expect(holder.value as AnyObject === container.resolve((any Net).self)! as AnyObject)
    }

    @Test func registrationsAndDependencies_nameTypesAsStringDescribingDoes() throws {
        let container = WeaveDI.Container()
        container.register((any NetworkService).self) { LiveNetwork() }
        container.register(Holder<any NetworkService>.self, scope: .transient) { r in
            Holder(try r.require((any NetworkService).self))
        }
        container.register(Holder<[String: Int?]>.self) { Holder([:]) }
        container.register(Optional<PDFGenerator>.self) { nil }
        _ = try container.require(Holder<any NetworkService>.self)
        let registrations = container.registrations
        #expect(registrations.map(\.type) == [
            String(describing: (any NetworkService).self), String(describing: Holder<any NetworkService>.self),
            String(describing: Holder<[String: Int?]>.self), String(describing: Optional<PDFGenerator>.self),
        ])
        #expect(registrations[1].dependencies == [String(describing: (any NetworkService).self)])
    }

    @Test func distinctTypes_getDistinctSlots_andTheSameTypeAlwaysTheSameSlot() {
        let slots = TypeSlots.shared
        let types: [Any.Type] = [
            Int.self, Int?.self, [Int].self, Holder<Int>.self, Holder<Int?>.self, (any NetworkService).self,
            Holder<any NetworkService>.self, PDFGenerator.self,
        ]
        func slot(_ type: Any.Type) -> Int {
            func open<T>(_ t: T.Type) -> Int { slots.slot(for: t) }
            return _openExistential(type, do: open)
        }
        let first = types.map(slot)
        #expect(Set(first).count == types.count)
        #expect(types.map(slot) == first)
        #expect(first.map { slots.name(ofSlot: $0) } == types.map { String(describing: $0) })
    }

    @Test func registeringAgain_replaces_andDropsTheCachedSingleton() throws {
        let container = WeaveDI.Container()
        container.register((any Net).self) { LiveNet() }
        #expect(try container.require((any Net).self).fetch() == "live")
        container.register((any Net).self) { MockNet() }
        #expect(try container.require((any Net).self).fetch() == "mock")
    }

    @Test func missingRegistration_throwsNotRegistered_withSimilarNames() {
        final class UserServiceImpl {}
        final class UserService {}
        let container = WeaveDI.Container()
        container.register(UserServiceImpl.self) { UserServiceImpl() }
        container.register(Generator.self) { Generator() }
        #expect(container.resolve(UserService.self) == nil)
        do {
            _ = try container.require(UserService.self)
            Issue.record("expected notRegistered")
        } catch {
            guard case let .notRegistered(type, suggestions) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(type == "UserService")
            #expect(suggestions == ["UserServiceImpl"])
            #expect(error.description.contains("did you mean UserServiceImpl?"))
            #expect(error.description.contains("register"))
        }
    }

    @Test func factoryError_isWrapped_withTheTypeName() {
        struct Boom: Error {}
        let container = WeaveDI.Container()
        container.register(Generator.self) { () throws -> Generator in throw Boom() }
        #expect {
            try container.require(Generator.self)
        } throws: { error in
            guard case let .factoryFailed(type, underlying) = error as? ResolutionError else { return false }
            return type == "Generator" && underlying is Boom
        }
    }

    @Test func factory_thatResolvesAndRegisters_doesNotDeadlock() throws {
        let container = WeaveDI.Container()
        container.register(SessionCache.self) { SessionCache() }
        container.register(Generator.self) { r in
            _ = try r.require(SessionCache.self)
            container.register(CallScope.self) { CallScope() }
            _ = try container.require(CallScope.self)
            return Generator()
        }
        _ = try container.require(Generator.self)
        #expect(container.isRegistered(CallScope.self))
    }

    @Test func registrationConcurrentWithResolution_isSafe() {
        let container = WeaveDI.Container()
        container.register(Generator.self) { Generator() }
        let failures = Atomic<Int>(0)
        onThreads(8) { i in
            for round in 0..<500 {
                if i % 2 == 0 {
                    if round % 2 == 0 {
                        container.register(Generator.self) { Generator() }
                    } else {
                        container.register(Generator.self, scope: .transient) { Generator() }
                    }
                } else if container.resolve(Generator.self) == nil {
                    failures.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }

    @Test func unregister_removesTheRegistration() {
        let container = WeaveDI.Container()
        container.register(Generator.self) { Generator() }
        #expect(container.unregister(Generator.self))
        #expect(!container.isRegistered(Generator.self))
        #expect(container.resolve(Generator.self) == nil)
        #expect(!container.unregister(Generator.self))
    }

    @Test func releaseAll_disposesSingletonsInReverseOrder_andRebuildsOnNextResolve() async throws {
        struct First {}
        struct Second {}
        let container = WeaveDI.Container()
        let ledger = Ledger()
        container.register(Holder<First>.self) { Holder(First()) }
        container.register(Tracked.self) { Tracked("one", ledger) }
        container.register(Holder<Tracked>.self) { Holder(Tracked("two", ledger)) }
        let one = try container.require(Tracked.self)
        _ = try container.require(Holder<Tracked>.self)
        // Holder<Tracked> is not itself Disposable: only "one" is disposed.
        await container.releaseAll()
        #expect(ledger.disposals == ["one"])
        let again = try container.require(Tracked.self)
        #expect(again !== one)
        #expect(ledger.buildCount == 3)
    }

    @Test func modules_labelTheirRegistrations() async {
        struct Network: WeaveDI.Module {
            func register(in container: WeaveDI.Container) async {
                container.register((any Net).self) { LiveNet() }
            }
        }
        struct Documents: WeaveDI.Module {
            var name: String { "documents" }
            func register(in container: WeaveDI.Container) async {
                container.register(Generator.self, scope: .transient) { Generator() }
            }
        }
        let container = WeaveDI.Container()
        await container.bootstrap(modules: [Network(), Documents()])
        container.register(SessionCache.self) { SessionCache() }
        let modules = Dictionary(uniqueKeysWithValues: container.registrations.map { ($0.type, $0.module) })
        #expect(modules["Net"] == "Network")
        #expect(modules["Generator"] == "documents")
        #expect(modules["SessionCache"] == "main")
    }
}
