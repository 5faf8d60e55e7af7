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

    /// Values of every size come out of a build intact, however deeply builds nest (the
    /// generic build returns them through memory its caller provides).
    @Test func transientStructs_ofAnySize_nested_comeOutIntact() throws {
        let container = WeaveDI.Container()
        container.register(Plate.self, scope: .transient) { Plate(seed: 1) }
        container.register(Stack2.self, scope: .transient) { r in Stack2(plate: try r.require(Plate.self), seed: 2) }
        container.register(Stack3.self, scope: .transient) { r in Stack3(below: try r.require(Stack2.self), seed: 3) }
        container.register(Huge.self, scope: .transient) { r in Huge(below: try r.require(Stack3.self)) }
        for _ in 0..<3 {
            let huge = try container.require(Huge.self)
            #expect(huge.isIntact)
            #expect(try container.require(Stack3.self).isIntact)
        }
        // A failed build closes its frame: later builds still come out whole.
        container.register(Failing.self, scope: .transient) { () throws -> Failing in throw Refusal() }
        for _ in 0..<1000 { #expect(throws: ResolutionError.self) { try container.require(Failing.self) } }
        #expect(try container.require(Huge.self).isIntact)
    }

    /// A factory is stored with its type erased and called as its type again: values of every
    /// shape come back whole (functions, tuples, enums with payloads, optionals, existentials,
    /// structs holding references, empty types), registered and resolved from concrete and from
    /// generic code, through the recording resolver of the first builds and the plain one after.
    /// (This suite runs unoptimized; optimized code, where `register` or `require` may be
    /// specialized, goes through the same erasure in the benchmarks' release build.)
    @Test func factoriesOfEveryShape_registeredAndResolved_fromGenericAndConcreteCode() throws {
        func registerGenerically<T: Sendable>(_ container: WeaveDI.Container, _ make: @escaping @Sendable () -> T) {
            container.register(T.self, scope: .transient, factory: make)
        }
        @Sendable func requireGenerically<T: Sendable>(_ resolver: any Resolver, _ type: T.Type) throws -> T {
            try resolver.require(type)
        }
        func check(_ container: WeaveDI.Container) throws {
            #expect(try container.require(Scale.self)(5) == 15)
            #expect(try requireGenerically(container, Scale.self)(7) == 21)
            #expect(try container.require(Pair.self) == Pair(4, "four"))
            #expect(try requireGenerically(container, Pair.self) == Pair(4, "four"))
            #expect(try container.require(Shape.self) == .rectangle(width: 2, height: 3))
            #expect(try requireGenerically(container, Shape.self) == .rectangle(width: 2, height: 3))
            #expect(try container.require(Token?.self)?.number == 9)
            #expect(try requireGenerically(container, Token?.self)?.number == 9)
            #expect(try container.require((any Net).self).fetch() == "live")
            #expect(try requireGenerically(container, (any Net).self).fetch() == "live")
            let holder = try requireGenerically(container, Holder<Token>.self)
            #expect(holder.value.number == 11)
            #expect(container.resolve(Nothing.self) != nil)
            // Through a factory's resolver, nested: each level unwraps what the one below built.
            let nested = try container.require(Holder<Pair>.self)
            #expect(nested.value == Pair(15, "four five"))
        }
        let concrete = WeaveDI.Container()
        concrete.register(Scale.self, scope: .transient) { { $0 * 3 } }
        concrete.register(Pair.self, scope: .transient) { Pair(4, "four") }
        concrete.register(Shape.self, scope: .transient) { .rectangle(width: 2, height: 3) }
        concrete.register(Token?.self, scope: .transient) { Token(9) }
        concrete.register((any Net).self, scope: .transient) { LiveNet() }
        concrete.register(Holder<Token>.self, scope: .transient) { Holder(Token(11)) }
        concrete.register(Nothing.self, scope: .transient) { Nothing() }
        concrete.register(Holder<Pair>.self, scope: .transient) { r in
            let scale = try r.require(Scale.self), pair = try r.require(Pair.self)
            return Holder(Pair(scale(5), pair.text + " five"))
        }
        for _ in 0...EdgeRecorder.recordedBuilds { try check(concrete) }

        let generic = WeaveDI.Container()
        registerGenerically(generic) { { (x: Int) in x * 3 } as Scale }
        registerGenerically(generic) { Pair(4, "four") }
        registerGenerically(generic) { Shape.rectangle(width: 2, height: 3) }
        registerGenerically(generic) { Token(9) as Token? }
        registerGenerically(generic) { LiveNet() as any Net }
        registerGenerically(generic) { Holder(Token(11)) }
        registerGenerically(generic) { Nothing() }
        generic.register(Holder<Pair>.self, scope: .transient) { r in
            let scale = try requireGenerically(r, Scale.self)
            return Holder(Pair(scale(5), try r.require(Pair.self).text + " five"))
        }
        for _ in 0...EdgeRecorder.recordedBuilds { try check(generic) }
    }

    /// `@Injected var x: T?` reads a cached singleton in place, from inside its box.
    @Test func boxedValues_areFoundInPlace_atEveryAlignment() {
        func check<T: Equatable>(_ value: T) {
            let box = Unmanaged.passRetained(Box(value))
            defer { box.release() }
            #expect(boxedValuePointer(UnsafeRawPointer(box.toOpaque()), as: T.self).pointee == value)
        }
        check(UInt8(0xA5))
        check(UInt16(0xBEEF))
        check(UInt64(0x0123_4567_89AB_CDEF))
        check(SIMD4<Float>(1, 2, 3, 4))  // aligned to 16
        check("a string long enough to live on the heap")
        check([1, 2, 3])
        let object = Token(7)
        let box = Unmanaged.passRetained(Box(object))
        defer { box.release() }
        #expect(boxedValuePointer(UnsafeRawPointer(box.toOpaque()), as: Token?.self).pointee === object)
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
        // (@unchecked: a class with no state, open to its subclass.)
        class UserService: @unchecked Sendable {}
        final class UserServiceImpl: UserService, @unchecked Sendable {}
        let container = WeaveDI.Container()
        container.register(UserServiceImpl.self) { UserServiceImpl() }
        container.register(Generator.self) { Generator() }
        #expect(container.resolve(UserService.self) == nil)
        do {
            _ = try container.require(UserService.self)
            Issue.record("expected notRegistered")
        } catch {
            guard case let .notRegistered(type, suggestions, _) = error else {
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
            guard case let .factoryFailed(type, underlying, _) = error as? ResolutionError else { return false }
            return type == "Generator" && underlying is Boom
        }
    }

    /// A needs B (transient) needs C: whatever goes wrong with C, the error names the path from
    /// A, and is still the case that says what went wrong.
    @Test func errorDeepInAGraph_namesThePathFromWhatWasAskedFor() throws {
        struct Boom: Error {}
        let container = WeaveDI.Container()
        container.register(CycleA.self) { r in _ = try r.require(CycleB.self); return CycleA(b: nil) }
        container.register(CycleB.self, scope: .transient) { r in _ = try r.require(CycleC.self); return CycleB(a: nil) }
        do {
            _ = try container.require(CycleA.self)
            Issue.record("expected notRegistered")
        } catch {
            guard case let .notRegistered(type, _, path) = error else { throw error }
            #expect(type == "CycleC")
            #expect(path == ["CycleA", "CycleB", "CycleC"])
            #expect(error.description.hasPrefix("cannot build CycleA (CycleA -> CycleB -> CycleC): no registration for CycleC"))
        }
        container.register(CycleC.self) { () throws -> CycleC in throw Boom() }
        do {
            _ = try container.require(CycleA.self)
            Issue.record("expected factoryFailed")
        } catch {
            guard case let .factoryFailed(type, underlying, path) = error else { throw error }
            #expect(type == "CycleC" && underlying is Boom)
            #expect(path == ["CycleA", "CycleB", "CycleC"])
            #expect(error.description.hasPrefix("cannot build CycleA (CycleA -> CycleB -> CycleC): the factory of CycleC failed"))
        }
        container.register(CycleC.self, scope: .session) { CycleC(a: nil) }
        do {
            _ = try container.require(CycleA.self)
            Issue.record("expected scopeMismatch")
        } catch {
            guard case let .scopeMismatch(outer, _, inner, _, path) = error else { throw error }
            #expect(outer == "CycleA" && inner == "CycleC")
            #expect(path == ["CycleA", "CycleB", "CycleC"])
        }
        // Through B alone: no session open.
        do {
            _ = try container.require(CycleB.self)
            Issue.record("expected noActiveScope")
        } catch {
            guard case let .noActiveScope(type, _, path) = error else { throw error }
            #expect(type == "CycleC" && path == ["CycleB", "CycleC"])
            #expect(error.description.hasPrefix("cannot build CycleB (CycleB -> CycleC): no active session for CycleC"))
        }
        // What was asked for itself: no path.
        #expect(throws: ResolutionError.self) { try container.require(CycleC.self) }
        do { _ = try container.require(CycleC.self) } catch { #expect(error.path.isEmpty) }
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

    /// A singleton of a value type that adopts `Disposable` is disposed when it is evicted, and
    /// only then: the container keeps its disposables by registration, not by object identity
    /// (a struct is boxed anew each time it is seen as an object).
    @Test func evict_disposesAValueTypeSingleton_once() async throws {
        let container = WeaveDI.Container()
        let ledger = Ledger()
        container.register(DisposableValue.self) { DisposableValue(name: "value", ledger: ledger) }
        for round in 1...3 {
            _ = try container.require(DisposableValue.self)
            #expect(await container.evict(DisposableValue.self))
            #expect(ledger.disposals.count == round)
            #expect(container.state.withLock { $0.disposables.count } == 0)
        }
        #expect(await !container.evict(DisposableValue.self))
        _ = try container.require(DisposableValue.self)
        await container.releaseAll()
        #expect(ledger.disposals == ["value", "value", "value", "value"])
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

/// 6 KB of a pattern that depends on the seed, checked on arrival.
struct Plate {
    var words = InlineArray<768, UInt64>(repeating: 0)
    let seed: UInt64

    init(seed: UInt64) {
        self.seed = seed
        for i in words.indices { words[i] = seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(i) }
    }

    var isIntact: Bool { words.indices.allSatisfy { words[$0] == seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64($0) } }
}

struct Stack2 {
    let plate: Plate
    let own: Plate
    init(plate: Plate, seed: UInt64) { self.plate = plate; own = Plate(seed: seed) }
    var isIntact: Bool { plate.isIntact && own.isIntact && plate.seed == 1 && own.seed == 2 }
}

struct Stack3 {
    let below: Stack2
    let own: Plate
    init(below: Stack2, seed: UInt64) { self.below = below; own = Plate(seed: seed) }
    var isIntact: Bool { below.isIntact && own.isIntact && own.seed == 3 }
}

/// 32 KiB and more: larger than any buffer a build could keep per thread.
struct Huge {
    let below: Stack3
    var tail = InlineArray<4096, UInt64>(repeating: 0xA5A5_A5A5_A5A5_A5A5)
    init(below: Stack3) { self.below = below }
    var isIntact: Bool { below.isIntact && tail.indices.allSatisfy { tail[$0] == 0xA5A5_A5A5_A5A5_A5A5 } }
}

typealias Scale = @Sendable (Int) -> Int

struct Pair: Equatable {
    let number: Int
    let text: String
    init(_ number: Int, _ text: String) { self.number = number; self.text = text }
}

enum Shape: Equatable {
    case point
    case rectangle(width: Int, height: Int)
}

struct Nothing: Equatable {}

struct Failing {}
struct Refusal: Error {}

final class Token: Sendable {
    let number: Int
    init(_ number: Int) { self.number = number }
}

/// A singleton that is a value and adopts `Disposable`.
struct DisposableValue: Disposable {
    let name: String
    let ledger: Ledger
    func dispose() async { ledger.disposed(name) }
}

/// An older documentation page writes `await Container.bootstrap { container in … }` inside
/// `extension WeaveDI`: there the bare `Container` is `WeaveDI.Container`.
extension WeaveDI {
    static func bareContainerSpelling() async -> Container {
        let made = Container()
        await made.bootstrap { container in container.register(NodeA.self) { NodeA() } }
        return made
    }
}

@Suite struct BareContainerSpellingTests {
    @Test func bareContainer_insideExtensionWeaveDI_isWeaveDIContainer() async throws {
        let container: WeaveDI.Container = await WeaveDI.bareContainerSpelling()
        #expect(container.resolve(NodeA.self) != nil)
    }
}
