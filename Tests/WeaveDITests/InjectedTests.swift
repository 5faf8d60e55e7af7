import Dispatch
import Glibc
import Synchronization
import Testing
@testable import WeaveDI

protocol Greeter: Sendable { func greet() -> String }
struct LiveGreeter: Greeter { func greet() -> String { "live" } }
struct TestGreeter: Greeter { func greet() -> String { "test" } }
struct MockGreeter: Greeter { func greet() -> String { "mock" } }
final class RegisteredGreeter: Greeter { func greet() -> String { "registered" } }

struct GreeterKey: InjectedKey {
    static var liveValue: any Greeter { LiveGreeter() }
    static var testValue: any Greeter { TestGreeter() }
}

let defaultComputations = Atomic<Int>(0)

final class ExpensiveThing: Sendable {}
struct ExpensiveKey: InjectedKey {
    static var liveValue: ExpensiveThing {
        defaultComputations.add(1, ordering: .relaxed)
        return ExpensiveThing()
    }
}

struct NameKey: InjectedKey {
    static var liveValue: String { "default-name" }
}

extension InjectedValues {
    var greeter: any Greeter {
        get { self[GreeterKey.self] }
        set { self[GreeterKey.self] = newValue }
    }
    var expensive: ExpensiveThing {
        get { self[ExpensiveKey.self] }
        set { self[ExpensiveKey.self] = newValue }
    }
    var name: String {
        get { self[NameKey.self] }
        set { self[NameKey.self] = newValue }
    }
}

/// A key read by a computed key path (`doubledTally`) as well as by its own accessor.
struct TallyKey: InjectedKey {
    static var liveValue: Int { 21 }
}

extension InjectedValues {
    /// Computed from a key, not the key's accessor: never to be read as the key itself.
    var doubledTally: Int { self[TallyKey.self] * 2 }
    /// The same over a key declared in `InjectedKeys`.
    var tripled: Int { self.tally * 3 }
    /// Returns the key's value on its first read only.
    var tallyOnce: Int {
        tallyOnceReads.add(1, ordering: .relaxed).newValue == 1 ? self[TallyKey.self] : -1
    }
}

let tallyOnceReads = Atomic<Int>(0)

extension InjectedKeys {
    var tally: TallyKey.Type { TallyKey.self }
}

/// A key, and a key whose default reads it.
struct LinkNetKey: InjectedKey {
    static var liveValue: any Net { LiveNet() }
}

struct LinkedKey: InjectedKey {
    static var liveValue: String { "linked to " + InjectedValues.current[LinkNetKey.self].fetch() }
}

/// A singleton whose initializer reads `LinkNetKey`.
final class LinkedSingleton: Sendable {
    let net = InjectedValues.current[LinkNetKey.self].fetch()
}

// The wrappers are immutable and thread-safe; Swift still declares their storage `var`.
final class GreeterModel: @unchecked Sendable {
    @Injected(\.greeter) var greeter
    @Injected(\.name) var name
    @Injected var network: (any Net)?
}

final class Worker: Sendable {}
// As above: the wrapper's storage is never reassigned.
final class WorkerService: @unchecked Sendable {
    @Factory var worker: Worker

    func fanOut(_ count: Int) async -> [Worker] {
        await withTaskGroup(of: Worker.self) { group in
            for _ in 0..<count {
                group.addTask { self.worker }
            }
            var workers: [Worker] = []
            for await worker in group { workers.append(worker) }
            return workers
        }
    }
}

@available(*, deprecated, message: "exercises the deprecated wrappers")
final class LegacyViewModel {
    @Inject var network: (any Net)?
    @Inject var requiredNetwork: any Net
    @SafeInject var store: SessionCache?
}

/// The documentation's "Dependency Organization": non-optional by-type properties, in a class
/// with no initializer of its own and in a struct built with no arguments.
final class GroupedDependencies {
    @Injected var network: any Net
    @Injected var cache: SessionCache
    @Injected var optionalNetwork: (any Net)?
}

struct GroupedValues {
    @Injected var network: any Net
}

/// Everything here reads `WeaveDI.Container.live`, so the suite runs serially.
@Suite(.serialized) struct InjectedTests {
    init() {
        WeaveDI.Container.live = WeaveDI.Container()
    }

    @Test func swappingLive_isSeenAtOnce_byThreadsThatCachedTheOldOne() {
        let first = WeaveDI.Container(), second = WeaveDI.Container()
        WeaveDI.Container.live = first
        let cached = DispatchSemaphore(value: 0), swapped = DispatchSemaphore(value: 0)
        let stale = Atomic<Int>(0)
        let threads = (0..<4).map { _ in
            Thread {
                // The same thread reads before the swap (caching `first`) and after it.
                if WeaveDI.Container.live !== first { stale.add(1, ordering: .relaxed) }
                cached.signal()
                swapped.wait()
                if WeaveDI.Container.live !== second { stale.add(1, ordering: .relaxed) }
            }
        }
        threads.forEach { $0.start() }
        for _ in threads { cached.wait() }
        WeaveDI.Container.live = second
        for _ in threads { swapped.signal() }
        threads.forEach { $0.join() }
        #expect(stale.load(ordering: .relaxed) == 0)
    }

    /// Readers take `Container.live` without a lock or a reference, and `@Injected` caches point
    /// into its singleton cells: a container that was live must never be freed.
    @Test func aContainerThatWasLive_isNeverFreed() {
        weak var weakOld: WeaveDI.Container?
        weak var weakNeverLive: WeaveDI.Container?
        do {
            let old = WeaveDI.Container(), neverLive = WeaveDI.Container()
            weakOld = old
            weakNeverLive = neverLive
            WeaveDI.Container.live = old
        }
        WeaveDI.Container.live = WeaveDI.Container()
        #expect(weakOld != nil)
        #expect(weakNeverLive == nil)
    }

    @Test func context_isTestUnderSwiftTest() {
        #expect(InjectedContext.detect() == .test)
        #expect(InjectedContext.current == .test)
    }

    @Test func key_usesTheDefaultForTheContext_thenARegistration_thenAnOverride() async {
        let model = GreeterModel()
        #expect(model.greeter.greet() == "test")
        #expect(InjectedValues.current.greeter.greet() == "test")
        WeaveDI.Container.live.register((any Greeter).self) { RegisteredGreeter() }
        #expect(model.greeter.greet() == "registered")
        withInjectedValues { $0.greeter = MockGreeter() } operation: {
            #expect(model.greeter.greet() == "mock")
            #expect(InjectedValues.current.greeter.greet() == "mock")
        }
        // A test that wants the key's testValue over a registration overrides the key with it.
        withInjectedValues { $0.greeter = GreeterKey.testValue } operation: {
            #expect(model.greeter.greet() == "test")
        }
        #expect(model.greeter.greet() == "registered")
        WeaveDI.Container.live = WeaveDI.Container()
        #expect(model.greeter.greet() == "test")
    }

    /// A key path computed from a key is read through its getter on every read: only a key's
    /// own accessor, declared in `InjectedKeys`, is read as the key.
    @Test func computedKeyPath_isReadThroughItsGetter_onEveryRead() {
        struct Reader {
            @Injected(\.doubledTally) var doubledTally: Int
            @Injected(\.tripled) var tripled: Int
            @Injected(\.tallyOnce) var tallyOnce: Int
            @Injected(\.tally) var tally: Int
        }
        let reader = Reader()
        #expect([reader.doubledTally, reader.doubledTally, reader.doubledTally] == [42, 42, 42])
        #expect([reader.tripled, reader.tripled] == [63, 63])
        #expect([reader.tallyOnce, reader.tallyOnce] == [21, -1])
        #expect([reader.tally, reader.tally] == [21, 21])
        withInjectedValues { $0.tally = 5 } operation: {
            #expect([reader.doubledTally, reader.tripled, reader.tally] == [10, 15, 5])
            #expect(InjectedValues.current.tally == 5)
        }
        WeaveDI.Container.live.register(Int.self, instance: 7)
        #expect([reader.doubledTally, reader.tripled, reader.tally] == [14, 21, 7])
    }

    /// Which key paths take the shortcut to the key's reader: exactly the accessors declared in
    /// `InjectedKeys`.
    @Test func onlyAKeysOwnAccessor_isReadAsTheKey() {
        func shortcut<V>(_ keyPath: KeyPath<InjectedValues, V> & Sendable) -> Bool {
            let cache = InjectedCache.shared(for: keyPath)
            _ = cache.read()
            return cache.reader.load(ordering: .relaxed) != nil
        }
        #expect(shortcut(\.tally))
        #expect(!shortcut(\.doubledTally))
        #expect(!shortcut(\.tripled))
        #expect(!shortcut(\.name))          // declared the documentation's way: read through it
    }

    /// A key's default is the same wherever it is first read: an override in effect there is not
    /// seen by the default, which is cached for the process, while reads of the overridden key
    /// itself see the override.
    @Test func keyDefault_firstReadInsideAnOverride_doesNotKeepTheOverride() {
        withInjectedValues { $0[LinkNetKey.self] = MockNet() } operation: {
            #expect(InjectedValues.current[LinkNetKey.self].fetch() == "mock")
            #expect(InjectedValues.current[LinkedKey.self] == "linked to live")
            withInjectedValues { $0[LinkedKey.self] = "overridden" } operation: {
                #expect(InjectedValues.current[LinkedKey.self] == "overridden")
            }
        }
        #expect(InjectedValues.current[LinkedKey.self] == "linked to live")
    }

    /// A singleton built inside an override is built once, with what its factory read there,
    /// and kept by its container until released (as documented in the README's "Overrides").
    @Test func singleton_builtInsideAnOverride_keepsWhatItRead_untilReleased() async {
        WeaveDI.Container.live.register(LinkedSingleton.self) { LinkedSingleton() }
        withInjectedValues { $0[LinkNetKey.self] = MockNet() } operation: {
            #expect(WeaveDI.Container.live.resolve(LinkedSingleton.self)?.net == "mock")
        }
        #expect(WeaveDI.Container.live.resolve(LinkedSingleton.self)?.net == "mock")
        await WeaveDI.Container.releaseAll()
        #expect(WeaveDI.Container.live.resolve(LinkedSingleton.self)?.net == "live")
    }

    @Test func keyDefault_isComputedOncePerContext() {
        struct Reader { @Injected(\.expensive) var expensive }
        let before = defaultComputations.load(ordering: .relaxed)
        let a = Reader().expensive, b = Reader().expensive, c = InjectedValues.current.expensive
        #expect(a === b && b === c)
        #expect(defaultComputations.load(ordering: .relaxed) - before <= 1)
        _ = Reader().expensive
        #expect(defaultComputations.load(ordering: .relaxed) - before <= 1)
    }

    @Test func overrides_reachChildTasks_nest_andRestore() async {
        let model = GreeterModel()
        await withInjectedValues { $0.name = "outer" } operation: {
            #expect(model.name == "outer")
            #expect(await Task { model.name }.value == "outer")
            let fromGroup = await withTaskGroup(of: String.self) { group in
                group.addTask { model.name }
                return await group.next()!
            }
            #expect(fromGroup == "outer")
            await withInjectedValues {
                $0.name = "inner"
                $0.greeter = MockGreeter()
            } operation: {
                #expect(await Task { model.name }.value == "inner")
                #expect(model.name == "inner")
                #expect(model.greeter.greet() == "mock")
            }
            #expect(model.name == "outer")
            #expect(model.greeter.greet() == "test")
        }
        #expect(model.name == "default-name")
    }

    @Test func pinnedValue_isAlwaysReturned() {
        let pinned = Injected(wrappedValue: MockGreeter() as any Greeter)
        withInjectedValues { $0.greeter = LiveGreeter() } operation: {
            #expect(pinned.wrappedValue.greet() == "mock")
        }
    }

    /// The FAQ's "pattern 2" with no service to pin: nil is pinned, the registration ignored;
    /// only a property without an initial value looks its type up.
    @Test func pinnedNil_readsNil_evenWhenTheTypeIsRegistered() {
        final class Model {
            @Injected var network: (any Net)?
            init(network: (any Net)?) { _network = Injected(wrappedValue: network) }
            init() {}
        }
        WeaveDI.Container.live.register((any Net).self) { LiveNet() }
        #expect(Model(network: nil).network == nil)
        #expect(Model(network: MockNet()).network?.fetch() == "mock")
        #expect(Model().network?.fetch() == "live")
    }

    @Test func typeBasedInjected_isNilUntilRegistered() {
        let model = GreeterModel()
        #expect(model.network == nil)
        WeaveDI.Container.live.register((any Net).self) { LiveNet() }
        #expect(model.network?.fetch() == "live")
    }

    @Test func nonOptionalByType_resolvesOnEveryRead() {
        WeaveDI.Container.live.register((any Net).self) { LiveNet() }
        WeaveDI.Container.live.register(SessionCache.self) { SessionCache() }
        let dependencies = GroupedDependencies()
        #expect(dependencies.network.fetch() == "live")
        #expect(GroupedValues().network.fetch() == "live")
        #expect(dependencies.cache === WeaveDI.Container.live.resolve(SessionCache.self))
        #expect(dependencies.optionalNetwork?.fetch() == "live")
        WeaveDI.Container.live.register((any Net).self) { MockNet() }
        #expect(dependencies.network.fetch() == "mock")
        #expect(Injected<any Net>().wrappedValue.fetch() == "mock")
        #expect(Injected<(any Net)?>().wrappedValue?.fetch() == "mock")
    }

    /// nil is a normal answer for an optional injection: said once per type, as a diagnostic;
    /// a factory that fails is still an error, on every read.
    @Test func optionalByType_logsAbsenceOnce_asADiagnostic() {
        final class Absent: Sendable {}
        final class Failing: Sendable {}
        struct Failure: Error {}
        struct Reader {
            @Injected var absent: Absent?
            @Injected var failing: Failing?
        }
        let log = LogCapture()
        log.during {
            for _ in 0..<3 { #expect(Reader().absent == nil) }
            WeaveDI.Container.live.register(Failing.self) { throw Failure() }
            for _ in 0..<2 { #expect(Reader().failing == nil) }
        }
        let absent = log.records.filter { $0.message.contains("Absent") }
        #expect(absent.map(\.category) == [.diagnostic])
        #expect(absent.first?.message.contains("no registration for Absent") == true)
        let failing = log.records.filter { $0.message.contains("Failing?") }
        #expect(failing.map(\.category) == [.error, .error])
        // Registered since: the next read finds it (the reads after the first miss skip the
        // error's suggestions, not the lookup).
        WeaveDI.Container.live.register(Absent.self) { Absent() }
        #expect(Reader().absent != nil)
    }

    /// The lookup of a non-optional `@Injected var x: T` logs nothing when it finds nothing (the
    /// read then stops the program with the error, naming `T`), whatever the reason; the
    /// optional reads of the same type, which share the lookup, still say why they read nil.
    @Test func nonOptionalByType_lookupThatFindsNothing_logsNothing() {
        final class Nowhere: Sendable {}
        final class Crashing: Sendable {}
        struct Failure: Error {}
        WeaveDI.Container.live.register(Crashing.self) { throw Failure() }
        let log = LogCapture()
        log.during {
            #expect(LiveTypeLookup<Nowhere>.shared().readRequired() == nil)
            #expect(LiveTypeLookup<Crashing>.shared().readRequired() == nil)
        }
        let said = log.records.filter { $0.message.contains("Nowhere") || $0.message.contains("Crashing") }
        #expect(said.isEmpty, "\(said.map(\.message))")
        struct Reader { @Injected var crashing: Crashing? }
        log.during { #expect(Reader().crashing == nil) }
        #expect(log.records.filter { $0.message.contains("Crashing? reads nil") }.map(\.category) == [.error])
    }

    /// A registered type whose dependency is not registered is a broken registration, not an
    /// absence: an error on every read, naming the path, as for a factory that fails.
    @Test func optionalByType_whoseDependencyIsNotRegistered_logsAnErrorOnEveryRead() {
        final class Needy: Sendable {}
        final class Missing: Sendable {}
        struct Reader { @Injected var needy: Needy? }
        WeaveDI.Container.live.register(Needy.self) { r in _ = try r.require(Missing.self); return Needy() }
        let log = LogCapture()
        log.during {
            for _ in 0..<2 { #expect(Reader().needy == nil) }
        }
        let needy = log.records.filter { $0.message.contains("Needy?") }
        #expect(needy.map(\.category) == [.error, .error])
        #expect(needy.first?.message.contains("cannot build Needy (Needy -> Missing): no registration for Missing") == true)
    }

    /// A registration whose factory reads the key of its own value type cannot get the value it
    /// is building: that read gets the key's default, and logs an error naming the key and the
    /// cycle; the cycle is in the graph, so `validate()` reports it.
    @Test func keyRead_insideTheFactoryOfItsOwnValueType_getsTheDefault_andIsACycle() async {
        struct Wrapping: Greeter {
            let inner: any Greeter
            func greet() -> String { "wrapped " + inner.greet() }
        }
        let log = LogCapture()
        log.during {
            WeaveDI.Container.live.register((any Greeter).self) { Wrapping(inner: InjectedValues.current[GreeterKey.self]) }
            #expect(InjectedValues.current[GreeterKey.self].greet() == "wrapped test")
            #expect(InjectedValues.current[GreeterKey.self].greet() == "wrapped test")
        }
        let errors = log.records.filter { $0.category == .error && $0.message.contains("GreeterKey") }
        #expect(errors.count == 1)
        #expect(errors.first?.message == "GreeterKey was read while building Greeter, the registration of its value's "
            + "type, which cannot give the value it is building (Greeter -> GreeterKey -> Greeter); using the key's "
            + "default. To build on the default on purpose, use GreeterKey.liveValue in the factory; otherwise read "
            + "the key at use, not in the factory")
        let report = await WeaveDI.Container.live.validate()
        #expect(report.cycles == [["Greeter"]] && !report.isValid)
    }

    /// The documentation's spelling: no `await`, inside a `Task`, before registering.
    @Test func enableOptimization_asTheDocumentationCallsIt() async {
        final class Warmed: Sendable {}
        await Task {
            UnifiedRegistry.shared.enableOptimization()
            await WeaveDI.Container.bootstrap { $0.register(Warmed.self) { Warmed() } }
        }.value
        #expect(WeaveDI.Container.live.registrations.first { $0.type == "Warmed" }?.isBuilt == true)
    }

    @Test func injected_seesTheActiveSession() async throws {
        struct Reader { @Injected var store: SessionCache? }
        WeaveDI.Container.live.register(SessionCache.self, scope: .session) { SessionCache() }
        let session = WeaveDI.Container.live.openSession(id: "s")
        let store = try session.require(SessionCache.self)
        #expect(Reader().store == nil)
        try await session.withCurrent { () async throws in
            #expect(await Task { Reader().store }.value === store)
            #expect(try WeaveDI.Container.live.require(SessionCache.self) === store)
        }
        await session.close()
    }

    @Test func factory_givesANewInstanceOnEveryRead_evenForSingletons_andInTaskGroups() async {
        WeaveDI.Container.live.register(Worker.self) { Worker() }  // registered as a singleton
        let service = WorkerService()
        let workers = await service.fanOut(20)  // kept alive, so identities cannot be reused
        #expect(Set(workers.map(ObjectIdentifier.init)).count == 20)
        #expect(service.worker !== service.worker)
    }

    @Test func reRegistration_isLogged() {
        final class Relogged: Sendable {}
        let log = LogCapture()
        log.during {
            WeaveDI.Container.live.register(Relogged.self) { Relogged() }
            WeaveDI.Container.live.register(Relogged.self, scope: .transient) { Relogged() }
        }
        let relevant = log.messages.filter { $0.contains("Relogged") }
        #expect(relevant.count == 2)
        #expect(relevant.last?.contains("registered again") == true)
        #expect(relevant.last?.contains("replaces") == true)
    }

    @Test func logSink_isCalledAsDirectly_afterManyLines() {
        // Reading the sink once wrapped it in one more re-abstraction thunk on every line: each
        // line was called through one more frame than the one before, and enough of them
        // overflowed the stack. The stack in the sink (the tests' routing sink, set once, which
        // calls the capture's `each` from it), on the first line and on the last, is as deep.
        let lines = 10_000
        let depths = Locked<(seen: Int, first: UInt?, last: UInt?)>((0, nil, nil))
        let log = LogCapture { _ in
            let seen = depths.withLock { $0.seen += 1; return $0.seen }
            guard seen == 1 || seen == lines else { return }
            // Where a local of the sink is on the stack: lower with each frame called through.
            var local = 0
            let depth = withUnsafeMutablePointer(to: &local) { UInt(bitPattern: $0) }
            depths.withLock { if seen == 1 { $0.first = depth } else { $0.last = depth } }
        }
        log.during {
            for _ in 0..<lines {
                WeaveDILog.emit(LogRecord(category: .diagnostic, message: "line", subsystem: "sink-depth-test"))
            }
        }
        let (seen, first, last) = depths.withLock { $0 }
        #expect(seen == lines)
        #expect(first != nil && first == last, "the sink's stack on the first line: \(String(describing: first)), on the last: \(String(describing: last))")
    }

    @available(*, deprecated, message: "exercises the deprecated wrappers")
    @Test func deprecatedWrappers_stillWork() {
        let legacy = LegacyViewModel()
        #expect(legacy.network == nil)
        #expect(throws: ResolutionError.self) { try legacy.$store.getValue() }
        WeaveDI.Container.live.register((any Net).self) { LiveNet() }
        WeaveDI.Container.live.register(SessionCache.self) { SessionCache() }
        #expect(legacy.network?.fetch() == "live")
        #expect(legacy.requiredNetwork.fetch() == "live")
        #expect(legacy.store === (try? legacy.$store.getValue()))
    }
}

@Suite struct InjectedChildProcessTests {
    @Test(arguments: [
        ("live", "live", "live-default"), ("test", "test", "test-default"),
        ("preview", "preview", "preview-default"), ("PREVIEW", "preview", "preview-default"),
        ("automatic", "live", "live-default"),
    ])
    func environment_overridesTheContext(value: String, context: String, read: String) throws {
        let result = try ChildProcess.run("weavedi-probe", ["context"], environment: ["WEAVEDI_INJECTED_ENV": value])
        #expect(result.status == 0)
        #expect(result.stdout == "\(context)\n\(read)\n")
    }

    /// A key's missing testValue, read first at a level that filters its diagnostic: not said
    /// later at any level, but listed by `liveValueFallbacks`.
    @Test func missingTestValue_filteredByTheLevel_isStillListed() throws {
        let result = try ChildProcess.run("weavedi-probe", ["live-fallback-filtered"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("ProbeLiveOnlyKey"), "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").map(String.init) == [
            "live-only", "live-only",
            "ProbeLiveOnlyKey test: ProbeLiveOnlyKey has no testValue: the test context reads its liveValue (said "
                + "once for this key); to give it one, declare static var testValue: String { ... } in ProbeLiveOnlyKey" + typeNote("testValue"),
        ])
    }

    @Test func contextOutsideTests_isLive() throws {
        let result = try ChildProcess.run("weavedi-probe", ["context"])
        #expect(result.stdout == "live\nlive-default\n")
    }

    @Test func badEnvironmentValue_warnsOnce_andDetects() throws {
        let result = try ChildProcess.run("weavedi-probe", ["context"], environment: ["WEAVEDI_INJECTED_ENV": "staging"])
        #expect(result.stdout == "live\nlive-default\n")
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("WEAVEDI_INJECTED_ENV") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("\"staging\"") == true)
        #expect(warnings.first?.contains("live, test, preview or automatic") == true)
    }

    /// In a process that never made an override, `@Injected` answers from its cache; every
    /// change (context, registration, release, swap) shows in the next read, as it does after
    /// the first override (a read then looks for one before the cache), and reads on other
    /// threads during releases and registrations only ever see tokens that were built.
    @Test func cachedReads_followEveryChange_atOnce() throws {
        let result = try ChildProcess.run("weavedi-probe", ["cached-reads"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "default: live-default -1/nil")
        #expect(lines.contains("again: live-default live-default -1/nil"))
        #expect(lines.contains("computed: 42 42 42"))
        #expect(lines.contains("context changed: preview-default"))
        #expect(lines.contains("context detected again: live-default"))
        #expect(lines.contains("registered: 1/1 again 1/1"))
        #expect(lines.contains("released: 2/2"))
        #expect(lines.contains("registered again: 3/3"))
        #expect(lines.contains("swapped: 4/4"))
        #expect(lines.contains("swapped to empty: -1/nil"))
        #expect(lines.contains("first override: 5/5 then 99/5 then 5/5"))
        #expect(lines.contains("after the override: 6/6 7/7 -1/nil preview-default live-default"), "\(lines)")
        #expect(lines.last == "concurrent: read bad=0")
    }

    @Test func factoryWithoutRegistration_stops_namingTheTypeAndTheFix() throws {
        let result = try ChildProcess.run("weavedi-probe", ["factory-missing"])
        // A trap ends the process by signal (under --sanitize=thread the sanitizer exits 66).
        #expect(result.signaled || result.status != 0)
        #expect(!result.stdout.contains("unreachable"))
        #expect(result.stderr.contains("no registration for Unregistered"))
        #expect(result.stderr.contains("container.register(Unregistered.self)"))
        // Where the property is declared, not where the library stops.
        let line = try probeLine(of: "    @Factory var unregistered: Unregistered")
        #expect(result.stderr.contains("@Factory var ...: Unregistered (declared at weavedi_probe/main.swift:\(line)): "),
            "\(result.stderr)")
    }

    /// A cycle through `@Factory` properties read in initializers is a stop (a `@Factory` read
    /// cannot throw), with the cycle, how to break it, and the call that throws instead.
    @Test func factoryCycle_stops_namingTheCycleAndTheThrowingCall() throws {
        let result = try ChildProcess.run("weavedi-probe", ["factory-cycle"])
        #expect(result.signaled || result.status != 0)
        #expect(!result.stdout.contains("unreachable"))
        // The read that closed the cycle: B's property.
        let line = try probeLine(of: "    @Factory var a: FactoryCycleA")
        #expect(result.stderr.contains(
            "@Factory var ...: FactoryCycleA (declared at weavedi_probe/main.swift:\(line)): "
                + "dependency cycle: FactoryCycleA -> FactoryCycleB -> FactoryCycleA"), "\(result.stderr)")
        #expect(result.stderr.contains("try WeaveDI.Container.live.makeFresh(FactoryCycleA.self)"))
        #expect(result.stderr.contains("(a @Factory read cannot throw; try $x.getValue() throws this error instead"))
    }

    @Test func nonOptionalInjectedWithoutRegistration_stops_namingTheTypeAndTheFix() throws {
        let result = try ChildProcess.run("weavedi-probe", ["injected-missing"])
        #expect(result.signaled || result.status != 0)
        #expect(!result.stdout.contains("unreachable"))
        let line = try probeLine(of: "    @Injected var unregistered: Unregistered")
        #expect(result.stderr.contains("@Injected var ...: Unregistered (declared at weavedi_probe/main.swift:\(line)): "),
            "\(result.stderr)")
        #expect(result.stderr.contains("no registration for Unregistered"))
        #expect(result.stderr.contains("container.register(Unregistered.self)"))
        #expect(result.stderr.contains(
            "(a non-optional @Injected read cannot throw; try $x.getValue() throws this error instead, "
                + "@Injected var x: Unregistered? reads nil)"), "\(result.stderr)")
        // The stop says it all: no line first about `Unregistered?`, which the program never wrote.
        #expect(!result.stderr.contains("Unregistered? reads nil:"), "\(result.stderr)")
        #expect(!result.stderr.contains("diagnostic:"), "\(result.stderr)")
    }

    /// A request of another container than `Container.live`, current: the wrappers read
    /// `Container.live` all the same, and their stop says so, and how to resolve through it.
    @Test(arguments: ["injected", "factory"])
    func wrapperReadInAnotherContainersRequest_stops_sayingWrappersReadLive(wrapper: String) throws {
        let result = try ChildProcess.run("weavedi-probe", ["\(wrapper)-foreign-request"])
        #expect(result.signaled || result.status != 0)
        #expect(!result.stdout.contains("unreachable"))
        #expect(result.stderr.contains(
            "no registration for ForeignContext in WeaveDI.Container.live; the current request 'y' belongs to another "
                + "container, which wrapper reads do not use: resolve through it (request.require(ForeignContext.self))"),
            "\(result.stderr)")
    }

    /// `@Provide` (and the deprecated `@Inject`) read through the same lookup: the stop names the
    /// wrapper the property was declared with.
    @Test func nonOptionalProvideWithoutRegistration_stops_namingItsWrapper() throws {
        let result = try ChildProcess.run("weavedi-probe", ["provide-missing"])
        #expect(result.signaled || result.status != 0)
        #expect(!result.stdout.contains("unreachable"))
        let line = try probeLine(of: "    @Provide var unregistered: Unregistered = Unregistered()")
        #expect(result.stderr.contains("@Provide var ...: Unregistered (declared at weavedi_probe/main.swift:\(line)): "),
            "\(result.stderr)")
        #expect(result.stderr.contains("(a non-optional @Provide read cannot throw; @Injected var x: Unregistered? reads nil instead"),
            "\(result.stderr)")
    }

    /// Two wrappers declared on one line share a site, not a stop message.
    @Test func twoWrappersOnOneLine_stopNamingTheOneRead() throws {
        let result = try ChildProcess.run("weavedi-probe", ["mixed-missing"])
        #expect(result.signaled || result.status != 0)
        #expect(!result.stdout.contains("unreachable"))
        let line = try probeLine(of: "    @Provide var provided: Unregistered = Unregistered(); @Injected var injected: Unregistered")
        #expect(result.stderr.contains("@Injected var ...: Unregistered (declared at weavedi_probe/main.swift:\(line)): "),
            "\(result.stderr)")
    }
}

