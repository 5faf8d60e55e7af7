import Synchronization
import WeaveDI
#if canImport(Glibc)
import Glibc
#endif

// A child process for the tests: each command checks one piece of process-wide behaviour
// (environment variables, log levels, fatal errors, exit codes) where it cannot disturb other
// tests. `diagnose-components` and `check-cycles` are the CI hook for component diagnostics.

struct ProbeKey: InjectedKey {
    static var liveValue: String { "live-default" }
    static var testValue: String { "test-default" }
    static var previewValue: String { "preview-default" }
}

extension InjectedKeys {
    var probeValue: ProbeKey.Type { ProbeKey.self }
}

/// No `testValue` of its own (`live-fallback-filtered`).
struct ProbeLiveOnlyKey: InjectedKey {
    static var liveValue: String { "live-only" }
}

final class Unregistered: Sendable {}

/// Its disposal resolves `ReleasedLedger`, built after it and so disposed before it.
final class ReleasedPool: Disposable {
    let container: WeaveDI.Container
    init(container: WeaveDI.Container) { self.container = container }
    func dispose() async { _ = container.resolve(ReleasedLedger.self) }
}

/// Session-scoped: its disposal, when releaseAll closes its session, resolves `ReleasedClock`.
final class ReleasedCart: Disposable {
    let container: WeaveDI.Container
    init(container: WeaveDI.Container) { self.container = container }
    func dispose() async { _ = container.resolve(ReleasedClock.self) }
}

final class ReleasedClock: Sendable {}

/// Its disposal resolves `DetachedLedger` in a detached task (which the task-local marking the
/// release's own disposals does not follow), then `ReleasedClock` in its own task.
final class DetachedPool: Disposable {
    let container: WeaveDI.Container
    init(container: WeaveDI.Container) { self.container = container }
    func dispose() async {
        let container = container
        _ = await Task.detached { container.resolve(DetachedLedger.self) }.value
        _ = container.resolve(ReleasedClock.self)
    }
}

final class DetachedLedger: Sendable {}

final class ReleasedLedger: Disposable {
    func dispose() async { print("ledger disposed") }
}

/// Two keys whose defaults need each other; each, once started, waits up to 2 s for the other
/// to start, so that two threads compute them at once.
enum ProbeCycle {
    static let started = Atomic(0)

    static func arrive() {
        started.add(1, ordering: .relaxed)
        for _ in 0..<200 where started.load(ordering: .relaxed) < 2 { usleep(10_000) }
    }

    /// Reads key A on one thread and key B on another, and waits for both.
    static func readOnTwoThreads() {
        var threads = [pthread_t(), pthread_t()]
        pthread_create(&threads[0], nil, { _ in _ = InjectedValues.current[ProbeCycleKeyA.self]; return nil }, nil)
        pthread_create(&threads[1], nil, { _ in _ = InjectedValues.current[ProbeCycleKeyB.self]; return nil }, nil)
        for thread in threads { pthread_join(thread, nil) }
    }
}

/// Two keys whose defaults need each other through a service: A's default resolves
/// `ProbeViaService` (transient, in `Container.live`), whose factory reads B, whose default
/// reads A. Each default, once started, waits up to 2 s for the other to start.
enum ProbeViaCycle {
    /// As `ProbeCycle.arrive()` (each probe mode runs in a process of its own).
    static func arrive() { ProbeCycle.arrive() }

    /// Reads key A on one thread and key B on another, and waits for both.
    static func readOnTwoThreads() {
        WeaveDI.Container.live.register(ProbeViaService.self, scope: .transient) {
            ProbeViaService(value: InjectedValues.current[ProbeViaKeyB.self])
        }
        var threads = [pthread_t(), pthread_t()]
        pthread_create(&threads[0], nil, { _ in _ = InjectedValues.current[ProbeViaKeyA.self]; return nil }, nil)
        pthread_create(&threads[1], nil, { _ in _ = InjectedValues.current[ProbeViaKeyB.self]; return nil }, nil)
        for thread in threads { pthread_join(thread, nil) }
    }
}

struct ProbeViaService: Sendable {
    let value: Int
}

struct ProbeViaKeyA: InjectedKey {
    static var liveValue: Int {
        ProbeViaCycle.arrive()
        return (WeaveDI.Container.live.resolve(ProbeViaService.self)?.value ?? 0) + 1
    }
}

struct ProbeViaKeyB: InjectedKey {
    static var liveValue: Int {
        ProbeViaCycle.arrive()
        return InjectedValues.current[ProbeViaKeyA.self] + 1
    }
}

/// A key whose default reads the next key's default, without end: a chain of defaults that
/// only the depth limit stops.
struct ProbeEndlessKey<T>: InjectedKey {
    static var liveValue: Int { InjectedValues.current[ProbeEndlessKey<ProbeEndlessKey<T>>.self] + 1 }
}

struct ProbeCycleKeyA: InjectedKey {
    static var liveValue: Int {
        ProbeCycle.arrive()
        return InjectedValues.current[ProbeCycleKeyB.self] + 1
    }
}

struct ProbeCycleKeyB: InjectedKey {
    static var liveValue: Int {
        ProbeCycle.arrive()
        return InjectedValues.current[ProbeCycleKeyA.self] + 1
    }
}

/// A singleton whose instances are numbered, to tell which build a read returned.
final class Token: Sendable {
    let number: Int
    init(_ number: Int) { self.number = number }
}

struct TokenKey: InjectedKey {
    static var liveValue: Token { Token(-1) }
}

extension InjectedKeys {
    var token: TokenKey.Type { TokenKey.self }
}

/// A key path computed from a key: read through its getter, never as the key.
struct CountKey: InjectedKey {
    static var liveValue: Int { 21 }
}

extension InjectedValues {
    var doubled: Int { self[CountKey.self] * 2 }
}

struct DoubledReader {
    @Injected(\.doubled) var value: Int
}

struct TokenReader {
    @Injected(\.token) var byKey
    @Injected var byType: Token?
}

/// Numbers the tokens built so far.
enum Tokens {
    static let count = Atomic<Int>(0)
    static let done = Atomic<Bool>(false)
    static let bad = Atomic<Int>(0)
}

func registerToken(in container: WeaveDI.Container) {
    container.register(Token.self) { Token(Tokens.count.add(1, ordering: .relaxed).newValue) }
}

/// What `@Injected` reads, by key and by type, as "key/type" numbers (type "nil" when missing).
func tokens(_ reader: TokenReader) -> String {
    "\(reader.byKey.number)/\(reader.byType.map { "\($0.number)" } ?? "nil")"
}

struct Reader {
    @Injected(\.probeValue) var value
    @Factory var unregistered: Unregistered
}

/// Two services whose initializers read each other through `@Factory`: a cycle that a
/// `@Factory` read cannot throw.
struct FactoryCycleA: Sendable {
    @Factory var b: FactoryCycleB
    init() { _ = b }
}

struct FactoryCycleB: Sendable {
    @Factory var a: FactoryCycleA
    init() { _ = a }
}

/// `@Injected var x: T` (not optional): a read that cannot resolve `T` stops the program.
final class InjectedReader {
    @Injected var unregistered: Unregistered
}

/// Registered (request-scoped) in a container of its own, not in `Container.live`.
final class ForeignContext: Sendable {}

final class ForeignReader {
    @Injected var context: ForeignContext
    @Factory var fresh: ForeignContext
}

/// Reads `ForeignContext` through `wrapper`'s property inside a request of another container
/// than `Container.live`: a stop that says the wrappers read `Container.live`.
func readInForeignRequest(_ wrapper: String) {
    let container = WeaveDI.Container()
    container.register(ForeignContext.self, scope: .request) { ForeignContext() }
    let request = container.openSession(id: "x").openRequest(id: "y")
    request.withCurrent {
        _ = wrapper == "factory" ? ForeignReader().fresh : ForeignReader().context
    }
}

/// `@Provide`, read before its component is registered: the stop names `@Provide`.
struct UnregisteredProviders: WeaveDI.Component {
    @Provide var unregistered: Unregistered = Unregistered()
}

/// Two wrappers on one line: the stop names the one read.
struct MixedOnOneLine: WeaveDI.Component {
    @Provide var provided: Unregistered = Unregistered(); @Injected var injected: Unregistered
}

final class Clock: Sendable {}

/// Two services that need each other: a dependency cycle.
final class CycleA: Sendable {
    let b: CycleB
    init(b: CycleB) { self.b = b }
}

final class CycleB: Sendable {
    let a: CycleA
    init(a: CycleA) { self.a = a }
}
final class Store: Sendable {}
/// Built by a factory that looks for a type nobody registered (a line the resolve logs).
final class NeedsMissing: Sendable {}
/// Never registered: what the task `StartsWork`'s factory starts looks for.
final class Unscheduled: Sendable {}
/// Never registered: what `DisposesLoudly.dispose()` looks for.
final class Unsettled: Sendable {}
/// Session-scoped: the graph check's probe session builds it and, closing, disposes it, which
/// resolves a type nobody registered (a line the resolve logs).
final class DisposesLoudly: Disposable {
    let container: WeaveDI.Container
    init(container: WeaveDI.Container) { self.container = container }
    func dispose() async { _ = container.resolve(Unsettled.self) }
}
/// A singleton whose factory starts a task, which resolves a type nobody registered.
final class StartsWork: Sendable {
    let work: Task<Void, Never>
    init(container: WeaveDI.Container) { work = Task { _ = container.resolve(Unscheduled.self) } }
}
/// A singleton that says it is unhealthy, which `container.singletons`' fix evicts.
final class Sick: HealthReporting {
    func health() async -> HealthCheckResult { .unhealthy("sick") }
}
final class Mailer: Sendable {}
final class Queue: Sendable {}

/// Fixture modules whose graphs have known problems.
struct Scenario: WeaveDI.Module {
    let name: String
    let body: @Sendable (WeaveDI.Container) -> Void
    func register(in container: WeaveDI.Container) async { body(container) }

    static func modules(_ scenario: String) -> [Scenario]? {
        switch scenario {
        case "clean":
            return [
                Scenario(name: "core") { $0.register(Clock.self) { Clock() } },
                Scenario(name: "storage") { c in c.register(Store.self) { r in _ = r.resolve(Clock.self); return Store() } },
            ]
        case "duplicates":
            return [
                Scenario(name: "core") { $0.register(Clock.self) { Clock() } },
                Scenario(name: "testing") { $0.register(Clock.self, scope: .transient) { Clock() } },
                Scenario(name: "storage") { $0.register(Store.self) { Store() } },
            ]
        case "cycle":
            return [
                Scenario(name: "mail") { c in
                    c.register(Mailer.self) { r in _ = r.resolve(Queue.self); return Mailer() }
                    c.register(Queue.self) { r in _ = r.resolve(Store.self); return Queue() }
                    c.register(Store.self) { r in _ = r.resolve(Mailer.self); return Store() }
                },
            ]
        case "scope-mismatch":
            // A singleton that needs a session-scoped service.
            return [
                Scenario(name: "core") { c in
                    c.register(Clock.self, scope: .session) { Clock() }
                    c.register(Store.self) { r in _ = r.resolve(Clock.self); return Store() }
                },
            ]
        default:
            return nil
        }
    }
}

func scenarioArgument() -> String {
    if let index = CommandLine.arguments.firstIndex(of: "--scenario"), index + 1 < CommandLine.arguments.count {
        return CommandLine.arguments[index + 1]
    }
    return "clean"
}

func bootstrapScenario() async -> WeaveDI.Container {
    guard let modules = Scenario.modules(scenarioArgument()) else {
        print("unknown scenario '\(scenarioArgument())' (clean, duplicates, cycle, scope-mismatch)")
        exit(64)
    }
    UnifiedDI.setLogLevel(.off)
    let container = WeaveDI.Container()
    await container.bootstrap(modules: modules)
    return container
}

/// `cached-reads`: `@Injected` caches what it read until something changes; no override is
/// ever made in this process, so every read below may come from the cache. Each line must show
/// the change at once.
func cachedReads() async {
    UnifiedDI.setLogLevel(.off)
    let reader = TokenReader()
    InjectedContext.current = .live
    print("default: \(Reader().value) \(tokens(reader))")
    print("again: \(Reader().value) \(Reader().value) \(tokens(reader))")  // now from the cache
    print("computed: \(DoubledReader().value) \(DoubledReader().value) \(DoubledReader().value)")
    InjectedContext.current = .preview
    print("context changed: \(Reader().value)")
    InjectedContext.redetect()  // outside a test run: live again
    print("context detected again: \(Reader().value)")
    InjectedContext.current = .preview
    _ = Reader().value
    registerToken(in: WeaveDI.Container.live)
    print("registered: \(tokens(reader)) again \(tokens(reader))")
    await WeaveDI.Container.releaseAll()
    print("released: \(tokens(reader))")
    registerToken(in: WeaveDI.Container.live)
    print("registered again: \(tokens(reader))")
    let other = WeaveDI.Container()
    registerToken(in: other)
    WeaveDI.Container.live = other
    print("swapped: \(tokens(reader))")
    WeaveDI.Container.live = WeaveDI.Container()
    print("swapped to empty: \(tokens(reader))")
    // The first override ever made is seen at once, though the cache held an answer.
    registerToken(in: WeaveDI.Container.live)
    let before = tokens(reader)
    let overridden = withInjectedValues { $0.token = Token(99) } operation: { tokens(reader) }
    print("first override: \(before) then \(overridden) then \(tokens(reader))")
    // Since then a read looks for an override first, then takes the cached answer: every change
    // still shows at once.
    await WeaveDI.Container.releaseAll()
    let released = tokens(reader)
    registerToken(in: WeaveDI.Container.live)
    let registered = tokens(reader)
    WeaveDI.Container.live = WeaveDI.Container()
    let emptied = tokens(reader)
    InjectedContext.current = .preview
    let preview = Reader().value
    InjectedContext.current = .live
    print("after the override: \(released) \(registered) \(emptied) \(preview) \(Reader().value)")
    // The readers below count a read of no token (the key's default, -1) as bad: one is registered.
    registerToken(in: WeaveDI.Container.live)
    // Readers on four threads while the main thread releases and re-registers: every read
    // returns a token built by then, never a freed one.
    let readers = (0..<4).map { _ in
        Task.detached {
            let reader = TokenReader()
            var reads = 0
            while !Tokens.done.load(ordering: .relaxed) || reads < 1000 {
                let seen = (reader.byKey.number, reader.byType?.number ?? -2)
                let built = Tokens.count.load(ordering: .relaxed)
                if seen.0 < 1 || seen.0 > built || seen.1 < 1 || seen.1 > built { Tokens.bad.add(1, ordering: .relaxed) }
                reads += 1
            }
            return reads
        }
    }
    for round in 0..<2000 {
        if round % 2 == 0 { await WeaveDI.Container.releaseAll() } else { registerToken(in: WeaveDI.Container.live) }
    }
    Tokens.done.store(true, ordering: .relaxed)
    var reads = 0
    for task in readers { reads += await task.value }
    print("concurrent: \(reads >= 4000 ? "read" : "too few reads") bad=\(Tokens.bad.load(ordering: .relaxed))")
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "context":
    print(InjectedContext.current.rawValue)
    print(Reader().value)
case "cached-reads":
    await cachedReads()
case "factory-missing":
    _ = Reader().unregistered
    print("unreachable")
case "factory-cycle":
    WeaveDI.Container.live.register(FactoryCycleA.self, scope: .transient) { FactoryCycleA() }
    WeaveDI.Container.live.register(FactoryCycleB.self, scope: .transient) { FactoryCycleB() }
    _ = try? WeaveDI.Container.live.require(FactoryCycleA.self)
    print("unreachable")
case "release-rebuild":
    // A dispose() that releaseAll runs resolves a singleton released (and disposed) already.
    let container = WeaveDI.Container()
    container.register(ReleasedPool.self) { ReleasedPool(container: container) }
    container.register(ReleasedLedger.self) { ReleasedLedger() }
    container.register(ReleasedClock.self) { ReleasedClock() }
    _ = try container.require(ReleasedPool.self)
    _ = try container.require(ReleasedLedger.self)
    container.register(ReleasedCart.self, scope: .session) { ReleasedCart(container: container) }
    _ = try container.openSession(id: "s").require(ReleasedCart.self)
    await container.releaseAll()
    print("ledger built after releaseAll: \(container.registrations.first { $0.type == "ReleasedLedger" }?.isBuilt == true)")
case "release-rebuild-detached":
    // A dispose() that releaseAll runs resolves released singletons: one in a detached task,
    // one in its own task.
    let container = WeaveDI.Container()
    container.register(DetachedPool.self) { DetachedPool(container: container) }
    container.register(DetachedLedger.self) { DetachedLedger() }
    container.register(ReleasedClock.self) { ReleasedClock() }
    _ = try container.require(DetachedPool.self)
    _ = try container.require(DetachedLedger.self)
    _ = try container.require(ReleasedClock.self)
    await container.releaseAll()
    for name in ["DetachedLedger", "ReleasedClock"] {
        print("\(name) built after releaseAll: \(container.registrations.first { $0.type == name }?.isBuilt == true)")
    }
case "key-cycle-threads":
    ProbeCycle.readOnTwoThreads()
    print("unreachable")
case "key-cycle-threads-via-service":
    ProbeViaCycle.readOnTwoThreads()
    print("unreachable")
case "key-too-deep":
    print(InjectedValues.current[ProbeEndlessKey<Int>.self])
    print("unreachable")
case "injected-missing":
    _ = InjectedReader().unregistered
    print("unreachable")
case "injected-foreign-request":
    readInForeignRequest("injected")
    print("unreachable")
case "factory-foreign-request":
    readInForeignRequest("factory")
    print("unreachable")
case "provide-missing":
    _ = UnregisteredProviders().unregistered
    print("unreachable")
case "mixed-missing":
    _ = MixedOnOneLine().injected
    print("unreachable")
case "env", "env-preset":
    if arguments.first == "env-preset" {
        // Settings made by the program before it reads the environment, none of them the default.
        UnifiedDI.setLogLevel(.errors)
        UnifiedRegistry.shared.healthLoggingEnabled = true
        UnifiedRegistry.shared.autoHealthEnabled = false
        UnifiedRegistry.shared.autoFixEnabled = false
        InjectedContext.current = .preview
    }
    let settings = WeaveDIConfiguration.applyFromEnvironment()
    print("healthLogging=\(settings.healthLogging)")
    print("autoHealth=\(settings.autoHealth)")
    print("autoFix=\(settings.autoFix)")
    print("context=\(settings.injectedContext.rawValue)")
    print("logLevel=\(settings.logLevel)")
    print("registry=\(UnifiedRegistry.shared.healthLoggingEnabled),\(UnifiedRegistry.shared.autoHealthEnabled),\(UnifiedRegistry.shared.autoFixEnabled)")
    print("level=\(UnifiedDI.logLevel)")
    print("loop=\(UnifiedRegistry.shared.isRunning)")
case "graph-check-logs":
    // Two rounds of the container checks with health logging off (a factory the validation
    // runs logs a failed resolve; the automatic fix evicts an unhealthy singleton), then one
    // with it on and a manual fix: how many lines each phase logged.
    // The task a factory built by the validation starts logs as any other, whenever it runs:
    // its line is not counted, only looked for.
    let lines = Atomic<Int>(0)
    let workLogged = Atomic<Bool>(false)
    UnifiedDI.setLogSink { record in
        if record.message.contains("Unscheduled") { workLogged.store(true, ordering: .relaxed) } else {
            lines.add(1, ordering: .relaxed)
        }
        print("  \(record.category): \(record.message)")
    }
    let container = WeaveDI.Container()
    container.register(Clock.self) { Clock() }
    container.register(Store.self, scope: .session) { Store() }
    container.register(StartsWork.self) { StartsWork(container: container) }
    container.register(DisposesLoudly.self, scope: .session) { DisposesLoudly(container: container) }
    container.register(NeedsMissing.self, scope: .transient) { r in
        _ = r.resolve(Unregistered.self)
        return NeedsMissing()
    }
    container.register(Sick.self) { Sick() }
    let registry = UnifiedRegistry(clock: ManualHealthClock())
    registry.registerContainerChecks(for: container)
    _ = container.resolve(Sick.self)
    lines.store(0, ordering: .relaxed)
    for _ in 0..<2 { await registry.runChecks() }
    print("quiet: \(lines.load(ordering: .relaxed)) line(s)")
    await container.resolve(StartsWork.self)?.work.value
    print("started work logged: \(workLogged.load(ordering: .relaxed))")
    print("fixes: \(registry.fixHistory().map(\.message))")
    registry.healthLoggingEnabled = true
    // A registration replaced: the next round builds everything again.
    container.register(Clock.self) { Clock() }
    lines.store(0, ordering: .relaxed)
    await registry.runChecks(fixing: false)
    _ = container.resolve(Sick.self)
    _ = await registry.fix("container.singletons")
    print("logged: \(lines.load(ordering: .relaxed)) line(s)")
case "sessions-fix-logs":
    // The container.sessions fix closes an idle session with health logging off, then another
    // with it on: which closing lines each phase logged (the fix logs each closing either way).
    let closings = Locked<[String]>([])
    UnifiedDI.setLogSink { record in
        if record.message.contains("closed") { closings.withLock { $0.append(record.message) } }
    }
    let container = WeaveDI.Container()
    let registry = UnifiedRegistry(clock: ManualHealthClock())
    registry.registerContainerChecks(for: container, sessionIdleLimit: .milliseconds(1))
    for (name, logged) in [("forgotten-1", false), ("forgotten-2", true)] {
        registry.healthLoggingEnabled = logged
        _ = container.openSession(id: name)
        try? await Task.sleep(for: .milliseconds(20))
        await registry.runChecks()
        print("\(name): open \(container.openSessions.count), lines \(closings.withLock { $0 })")
    }
case "live-container-checks", "live-container-checks-own":
    // What a program gets from `applyFromEnvironment()` alone: the shared registry's passive
    // checks of the live container, which build nothing (no factory runs, no session opens,
    // none closes, a registration that cannot be built outside a real request is left alone),
    // then, once another container is assigned to `live` and the program met its cycle, that
    // cycle; the active checks asked for explicitly; its lines logged as the environment says.
    // With checks of its own container registered before the call ("-own"): those, kept.
    let lines = Locked<[String]>([])
    UnifiedDI.setLogSink { record in lines.withLock { $0.append("\(record.category): \(record.message)") } }
    let factoriesRun = Locked<[String]>([])
    final class LiveBroken: Sendable {}
    final class LiveDatabase: Sendable {}
    final class LiveSessionState: Sendable {}
    final class LiveRequestState: Sendable {}
    final class LiveTransient: Sendable {}
    struct LiveFailure: Error {}
    await WeaveDI.Container.bootstrap { container in
        container.register(LiveBroken.self) { () throws -> LiveBroken in
            factoriesRun.withLock { $0.append("LiveBroken") }
            throw LiveFailure()
        }
        container.register(LiveDatabase.self) {
            factoriesRun.withLock { $0.append("LiveDatabase") }
            return LiveDatabase()
        }
        container.register(LiveSessionState.self, scope: .session) {
            factoriesRun.withLock { $0.append("LiveSessionState") }
            return LiveSessionState()
        }
        // Needs what only a real request has (the HTTP layer's task-local): throws elsewhere.
        container.register(LiveRequestState.self, scope: .request) { () throws -> LiveRequestState in
            factoriesRun.withLock { $0.append("LiveRequestState") }
            throw LiveFailure()
        }
        container.register(LiveTransient.self, scope: .transient) {
            factoriesRun.withLock { $0.append("LiveTransient") }
            return LiveTransient()
        }
    }
    let first = WeaveDI.Container.live
    // A session the program holds (a websocket's), quiet from now on.
    let held = first.openSession(id: "websocket-1")
    let registry = UnifiedRegistry.shared
    if arguments.first == "live-container-checks-own" {
        let own = WeaveDI.Container()
        own.register(Clock.self) { Clock() }
        registry.registerContainerChecks(for: own)
    }
    let settings = WeaveDIConfiguration.applyFromEnvironment()
    print("loop=\(registry.isRunning) autoFix=\(settings.autoFix)")
    print("checks=\(registry.checkNames)")
    func graph(_ report: HealthReport) -> String {
        report.checks.first { $0.name == "container.graph" }.map { "\($0.status?.rawValue ?? "nil"): \($0.message)" } ?? "none"
    }
    func sessions(_ container: WeaveDI.Container) -> [String] { container.openSessions.map(\.id).sorted() }
    // Well past any idle limit the active checks would use below.
    try? await Task.sleep(for: .milliseconds(20))
    print("graph=\(graph(await registry.runChecks()))")
    print("graph=\(graph(await registry.runChecks()))")
    if arguments.first == "live-container-checks" {
        print("factories run=\(factoriesRun.withLock { $0 })")
        print("open sessions=\(sessions(first))")
        // Another container made live, whose cycle the program met: the checks follow it.
        let next = WeaveDI.Container()
        next.register(CycleA.self) { r in CycleA(b: try r.require(CycleB.self)) }
        next.register(CycleB.self) { r in CycleB(a: try r.require(CycleA.self)) }
        WeaveDI.Container.live = next
        _ = try? next.require(CycleA.self)
        print("graph after swap=\(graph(await registry.runChecks()))")
        print("transition logged=\(lines.withLock { $0.contains { $0.contains(#""container.graph": healthy -> unhealthy"#) } })")
        // The active checks, asked for: they build the live container's registrations and
        // close its idle sessions.
        WeaveDI.Container.live = first
        registry.registerLiveContainerChecks(.active(sessionIdleLimit: .milliseconds(1)))
        print("checks after active=\(registry.checkNames)")
        print("graph after active=\(graph(await registry.runChecks()))")
        print("factories run after active=\(Set(factoriesRun.withLock { $0 }).sorted())")
        print("open sessions after active=\(sessions(first)) held closed=\(held.isClosed)")
        // Another container made live, with as many registrations (as many changes) as `first`:
        // the active graph check validates it, not what it remembers of `first`.
        let third = WeaveDI.Container()
        third.register(CycleA.self) { r in CycleA(b: try r.require(CycleB.self)) }
        third.register(CycleB.self) { r in CycleB(a: try r.require(CycleA.self)) }
        third.register(Clock.self) { Clock() }
        third.register(LiveDatabase.self) { LiveDatabase() }
        third.register(LiveTransient.self, scope: .transient) { LiveTransient() }
        WeaveDI.Container.live = third
        print("graph after active swap=\(graph(await registry.runChecks()))")
        WeaveDI.Container.live = first
        // Passive again: the sessions check goes.
        registry.registerLiveContainerChecks()
        print("checks after passive=\(registry.checkNames)")
        // weavedid registers the checks of its own container over them: replaced, not doubled.
        lines.withLock { $0.removeAll() }
        registry.registerContainerChecks(for: next)
        print("checks after own=\(registry.checkNames) overwrite logged=\(lines.withLock { $0.contains { $0.contains("registered again") } })")
        // Removed, they stay removed.
        for name in UnifiedRegistry.containerCheckNames { registry.unregister(name) }
        WeaveDIConfiguration.applyFromEnvironment()
        print("checks after removal=\(registry.checkNames)")
    }
    registry.stop()
case "health-misuse":
    // A check and a loop interval the registry cannot use: logged errors, not a crash.
    let registry = UnifiedRegistry(clock: ManualHealthClock())
    registry.register(HealthCheck(name: "", timeout: .zero, failureThreshold: 0, successThreshold: -3) { .healthy() })
    // Names the report shows blank or garbled, that fix(name) can hardly be given.
    registry.register(HealthCheck(name: " \t ") { .healthy() })
    registry.register(HealthCheck(name: "db\u{1B}[2J\nforged") { .healthy() })
    registry.start(interval: .seconds(-5))
    registry.stop()
    print("registered \(registry.checkNames.count)")
case "health-names-logged":
    // With health logging on, a check whose name holds a newline and an escape sequence turns
    // unhealthy and its fix fails, the check's message and the fix's error holding them too
    // (text from outside: a path, a server's answer): the default sink's lines on standard error.
    let registry = UnifiedRegistry(clock: ManualHealthClock())
    registry.healthLoggingEnabled = true
    struct Broken: Error, CustomStringConvertible { var description: String { "server said: busy\r\nforged fix" } }
    registry.register(HealthCheck(
        name: "db\u{1B}[2J\nforged", run: { .unhealthy("cannot read /srv/a\nforged check: \u{1B}[2Jgone") }, fix: { throw Broken() }))
    await registry.runChecks()
    _ = await registry.fix("db\u{1B}[2J\nforged")
    print("done")
case "forged-lines":
    // Text from outside in the default sink's lines: a factory's error, a session's and a
    // request's ids, each holding a newline, a forged line and an escape sequence.
    struct Evil: Error, CustomStringConvertible {
        var description: String { "bad\n[WeaveDI] error: FORGED LINE\u{1B}[2J" }
    }
    final class ForgedTarget: Sendable {}
    let container = WeaveDI.Container()
    container.register(ForgedTarget.self) { () throws -> ForgedTarget in throw Evil() }
    _ = container.resolve(ForgedTarget.self)
    let session = container.openSession(id: "id\n[WeaveDI] diagnostic: FORGED SESSION\u{1B}[2J")
    let request = session.openRequest(id: "rq\r\n[WeaveDI] error: FORGED REQUEST")
    _ = request.resolve(ForgedTarget.self)
    await request.close()
    _ = request.resolve(ForgedTarget.self)
    await session.close()
    _ = session.resolve(ForgedTarget.self)
    print("done")
case "forged-record":
    // A program's sink that forwards to the default one a record of its own making.
    UnifiedDI.setLogSink { record in
        WeaveDILog.standardError(LogRecord(category: record.category, message: "app: a\nb\u{1B}[2J", subsystem: record.subsystem))
    }
    WeaveDILog.log(.error, "anything")
    print("done")
case "stderr-flood":
    // More on standard error than a pipe holds (64 KiB), before standard output ends.
    let line = String(repeating: "x", count: 1_023) + "\n"
    for _ in 0..<256 {
        var line = line
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if n <= 0 { break }
                offset += n
            }
        }
    }
    print("done")
case "live-fallback-filtered":
    // In the test context, a key without a testValue read first at a level that filters its
    // diagnostic, then again at every level: what liveValueFallbacks lists.
    InjectedContext.current = .test
    UnifiedDI.setLogLevel(.errors)
    print(InjectedValues.current[ProbeLiveOnlyKey.self])
    UnifiedDI.setLogLevel(.all)
    print(InjectedValues.current[ProbeLiveOnlyKey.self])
    for fallback in InjectedValues.liveValueFallbacks {
        print("\(fallback.key) \(fallback.context): \(fallback.message)")
    }
case "levels":
    // For each level, which categories get through; and whether a filtered message was built.
    nonisolated(unsafe) var emitted: [LogCategory] = []
    nonisolated(unsafe) var built = 0
    UnifiedDI.setLogSink { record in emitted.append(record.category) }
    func message(_ text: String) -> String {
        built += 1
        return text
    }
    for level in LogLevel.allCases {
        UnifiedDI.setLogLevel(level)
        emitted = []
        built = 0
        for category in LogCategory.allCases { WeaveDILog.log(category, message("x")) }
        print("\(level): \(emitted.map(\.rawValue).joined(separator: ",")) built=\(built) read=\(UnifiedDI.logLevel)")
    }
case "diagnose-components":
    let container = await bootstrapScenario()
    _ = await container.validate()  // records the graph, in which scope mismatches are seen
    let diagnostics = container.diagnoseComponents()
    print(diagnostics.json.serialized)
    exit(diagnostics.issues.isEmpty ? 0 : 1)
case "check-cycles":
    let container = await bootstrapScenario()
    _ = await container.validate()
    let report = container.checkCycles()
    print(report.json.serialized)
    exit(report.cycles.isEmpty && report.notBuilt.isEmpty ? 0 : 1)
default:
    print("usage: weavedi-probe context|cached-reads|factory-missing|factory-cycle|key-cycle-threads|key-cycle-threads-via-service|key-too-deep|injected-missing|injected-foreign-request|factory-foreign-request|graph-check-logs|release-rebuild|health-misuse|stderr-flood|env|levels|diagnose-components|check-cycles [--scenario NAME]")
    exit(64)
}
