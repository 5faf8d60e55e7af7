#if canImport(Glibc)
import Glibc
#endif
import WeaveDI

// The DI read path: `@Injected`, `Container.resolve`/`require`, `@Factory`, from one and two
// threads. Every figure is nanoseconds per read, including the loop and the sink
// (`harness: loop + sink` shows what those two cost on their own).

// MARK: Fixtures

protocol ServiceA: AnyObject, Sendable { func value() -> Int }
protocol ServiceB: AnyObject, Sendable { func value() -> Int }
protocol ServiceC: AnyObject, Sendable { func value() -> Int }
protocol ServiceD: AnyObject, Sendable { func value() -> Int }

final class LiveService: ServiceA, ServiceB, ServiceC, ServiceD {
    let number: Int
    init(_ number: Int) { self.number = number }
    func value() -> Int { number }
}

/// Read through its default (`liveValue`): nothing registered, nothing overridden.
struct DefaultKey: InjectedKey {
    static var liveValue: any ServiceA { LiveService(1) }
}

/// Its value type is registered in `Container.live`.
struct RegisteredKey: InjectedKey {
    static var liveValue: any ServiceB { LiveService(2) }
}

/// Overridden with `withInjectedValues`.
struct OverriddenKey: InjectedKey {
    static var liveValue: any ServiceC { LiveService(3) }
}

/// Named in `InjectedKeys`, so that `@Injected` reads the keys themselves (a property declared on
/// `InjectedValues` is applied as a key path on every read).
extension InjectedKeys {
    var benchDefault: DefaultKey.Type { DefaultKey.self }
    var benchRegistered: RegisteredKey.Type { RegisteredKey.self }
    var benchOverridden: OverriddenKey.Type { OverriddenKey.self }
}

/// The same key named the documentation's way, as a property of `InjectedValues`: `@Injected`
/// applies such a key path on every read (its getter could compute anything from the key).
extension InjectedValues {
    var benchDefaultProperty: any ServiceA {
        get { self[DefaultKey.self] }
        set { self[DefaultKey.self] = newValue }
    }
}

final class Singleton: Sendable {
    let number = 1
}

final class Transient: Sendable {
    let number: Int
    init() { number = 2 }
}

final class FactoryMade: Sendable {
    let number: Int
    init() { number = 3 }
}

final class G5: Sendable { init() {} }
final class G4: Sendable { let next: G5; init(_ next: G5) { self.next = next } }
final class G3: Sendable { let next: G4; init(_ next: G4) { self.next = next } }
final class G2: Sendable { let next: G3; init(_ next: G3) { self.next = next } }
final class G1: Sendable { let next: G2; init(_ next: G2) { self.next = next } }

/// What code without DI reads: a `static let`.
enum Globals {
    static let serviceA: any ServiceA = LiveService(7)
}

/// `figure` measured against the read of a `static let`, the baseline of every `@Injected` row.
func againstStaticLet(_ settings: Settings, _ figure: (Int) -> Void) -> (figure: Stats, baseline: Stats) {
    measurePair(settings, figure: figure, baseline: { n in
        for _ in 0..<n { blackHole(Globals.serviceA) }
    })
}

/// The other hand-written baseline: a call through an existential returning a stored instance.
protocol Locator: Sendable {
    func singleton() -> Singleton
}

final class HandLocator: Locator {
    let instance = Singleton()
    /// Not inlined. (The optimizer still devirtualizes the call and, seeing every caller, makes
    /// it return `instance` borrowed: the loop retains and releases nothing. `RetainingLocator`
    /// is the same call returning an owned reference, as `resolve` does.)
    @inline(never)
    func singleton() -> Singleton { instance }
}

/// `Locator` returning an owned reference, as `resolve` does: the caller gets the instance
/// retained and releases it, so two threads reading it write its reference count alternately.
/// (A protocol of its own: a second `Locator` conformer would change how `HandLocator` is
/// called, and with it the singleton figure's baseline.)
protocol RetainedLocator: Sendable {
    func singleton() -> Singleton
}

final class RetainingLocator: RetainedLocator {
    let instance = Singleton()
    @inline(never) @_semantics("optimize.sil.specialize.owned2guarantee.never")
    func singleton() -> Singleton { instance }
}

/// A class holding the property wrappers, as user code does.
final class Readers: @unchecked Sendable {
    @Injected(\.benchDefault) var byDefault
    @Injected(\.benchDefaultProperty) var byProperty
    @Injected(\.benchRegistered) var byRegistration
    @Injected(\.benchOverridden) var byOverride
    @Injected var byType: (any ServiceD)?
    @Injected var missing: (any ServiceC)?
    @Factory var fresh: FactoryMade
}

// MARK: @Injected

/// `@Injected` reads. The figures without an override must run before the first
/// `withInjectedValues` in this process (the library skips the task-local lookup until then),
/// so this group runs first and measures them first.
func benchInjected(_ settings: Settings, _ report: Report) {
    print("injected: @Injected reads (no override measured before the first withInjectedValues in this process)")
    WeaveDI.Container.live.register((any ServiceB).self) { LiveService(20) }
    WeaveDI.Container.live.register((any ServiceD).self) { LiveService(40) }
    let readers = opaque(Readers())
    // Defaults are computed and singletons built on the first read, not in the samples.
    blackHole(readers.byDefault)
    blackHole(readers.byRegistration)
    blackHole(readers.byType)

    let loop = againstStaticLet(settings) { n in
        for i in 0..<n { blackHole(i) }
    }
    report.add(Figure(
        group: "injected", name: "harness: loop + sink (no work)", unit: .time, stats: loop.figure,
        baselineName: "static let", baseline: loop.baseline,
        note: "what every read-path figure includes besides the read itself"))

    // What any read that hands out a shared instance retained pays (the `@Injected` figures do).
    let retaining: any RetainedLocator = opaque(RetainingLocator())
    let owned = againstStaticLet(settings) { n in
        for _ in 0..<n { blackHole(retaining.singleton()) }
    }
    report.add(Figure(
        group: "injected", name: "existential call returning +1, for reference", unit: .time, stats: owned.figure,
        baselineName: "static let", baseline: owned.baseline,
        note: "a stored instance returned retained and released by the caller: the floor of every read below"))

    let byDefault = againstStaticLet(settings) { n in
        for _ in 0..<n { blackHole(readers.byDefault) }
    }
    report.add(Figure(
        group: "injected", name: "@Injected(\\.key) read, key default, no override", unit: .time, stats: byDefault.figure,
        baselineName: "static let", baseline: byDefault.baseline, target: .atMost(10)))

    blackHole(readers.byProperty)
    let byProperty = againstStaticLet(settings) { n in
        for _ in 0..<n { blackHole(readers.byProperty) }
    }
    report.add(Figure(
        group: "injected", name: "@Injected(\\.key) read, key a property of InjectedValues", unit: .time,
        stats: byProperty.figure, baselineName: "static let", baseline: byProperty.baseline,
        note: "the documentation's get/set property: read through its getter every time"))

    let byRegistration = againstStaticLet(settings) { n in
        for _ in 0..<n { blackHole(readers.byRegistration) }
    }
    report.add(Figure(
        group: "injected", name: "@Injected(\\.key) read, type registered in Container.live", unit: .time,
        stats: byRegistration.figure, baselineName: "static let", baseline: byRegistration.baseline, target: .atMost(10)))

    let byType = againstStaticLet(settings) { n in
        for _ in 0..<n { blackHole(readers.byType) }
    }
    report.add(Figure(
        group: "injected", name: "@Injected var x: T? read (by type)", unit: .time, stats: byType.figure,
        baselineName: "static let", baseline: byType.baseline, target: .atMost(10)))

    // ServiceC is never registered in the container: an optional dependency left out.
    blackHole(readers.missing)
    let missing = againstStaticLet(settings) { n in
        for _ in 0..<n { blackHole(readers.missing) }
    }
    report.add(Figure(
        group: "injected", name: "@Injected var x: T? read, T not registered", unit: .time, stats: missing.figure,
        baselineName: "static let", baseline: missing.baseline, note: "an optional dependency left out: nil"))

    // From here on the process has used an override.
    let underOverride = withInjectedValues { $0.benchOverridden = LiveService(30) } operation: {
        blackHole(readers.byOverride)
        return againstStaticLet(settings) { n in
            for _ in 0..<n { blackHole(readers.byOverride) }
        }
    }
    report.add(Figure(
        group: "injected", name: "@Injected(\\.key) read under withInjectedValues", unit: .time,
        stats: underOverride.figure, baselineName: "static let", baseline: underOverride.baseline, target: .atMost(60)))

    let afterOverride = againstStaticLet(settings) { n in
        for _ in 0..<n { blackHole(readers.byDefault) }
    }
    report.add(Figure(
        group: "injected", name: "@Injected(\\.key) read, no override active, after one was used", unit: .time,
        stats: afterOverride.figure, baselineName: "static let", baseline: afterOverride.baseline,
        note: "once any withInjectedValues ran, every read looks at the task-local"))
}

// MARK: Container

/// The container figures' graph: a singleton, a transient, and five transients each
/// requiring the next (the profile mode builds the same one).
func registerContainerGraph(in container: WeaveDI.Container) {
    container.register(Singleton.self) { Singleton() }
    container.register(Transient.self, scope: .transient) { Transient() }
    container.register(G5.self, scope: .transient) { G5() }
    container.register(G4.self, scope: .transient) { r in G4(try r.require(G5.self)) }
    container.register(G3.self, scope: .transient) { r in G3(try r.require(G4.self)) }
    container.register(G2.self, scope: .transient) { r in G2(try r.require(G3.self)) }
    container.register(G1.self, scope: .transient) { r in G1(try r.require(G2.self)) }
}

func benchContainer(_ settings: Settings, _ report: Report) {
    print("container: resolve, require, @Factory")
    let container = WeaveDI.Container()
    registerContainerGraph(in: container)
    WeaveDI.Container.live.register(FactoryMade.self, scope: .transient) { FactoryMade() }
    let c = opaque(container)
    let locator: any Locator = opaque(HandLocator())
    let readers = opaque(Readers())
    // Past the first builds, which record the dependency graph.
    for _ in 0..<8 {
        blackHole(c.resolve(Singleton.self))
        blackHole(c.resolve(Transient.self))
        blackHole(try? c.require(G1.self))
        blackHole(readers.fresh)
    }

    let singleton = measurePair(settings, figure: { n in
        for _ in 0..<n { blackHole(c.resolve(Singleton.self)) }
    }, baseline: { n in
        for _ in 0..<n { blackHole(locator.singleton()) }
    })
    report.add(Figure(
        group: "container", name: "Container.resolve, singleton", unit: .time, stats: singleton.figure,
        baselineName: "existential call", baseline: singleton.baseline, target: .atMost(25)))

    let transient = measurePair(settings, figure: { n in
        for _ in 0..<n { blackHole(c.resolve(Transient.self)) }
    }, baseline: { n in
        for _ in 0..<n { blackHole(Transient()) }
    })
    report.add(Figure(
        group: "container", name: "Container.resolve, transient", unit: .time, stats: transient.figure,
        baselineName: "plain init", baseline: transient.baseline, target: .baselinePlus(30)))

    let factory = measurePair(settings, figure: { n in
        for _ in 0..<n { blackHole(readers.fresh) }
    }, baseline: { n in
        for _ in 0..<n { blackHole(FactoryMade()) }
    })
    report.add(Figure(
        group: "container", name: "@Factory read", unit: .time, stats: factory.figure,
        baselineName: "plain init", baseline: factory.baseline, target: .baselinePlus(30)))

    let graph = measurePair(settings, figure: { n in
        for _ in 0..<n {
            do { blackHole(try c.require(G1.self)) } catch { fatalError("\(error)") }
        }
    }, baseline: { n in
        for _ in 0..<n { blackHole(G1(G2(G3(G4(G5()))))) }
    })
    report.add(Figure(
        group: "container", name: "require, 5-level graph of transients", unit: .time, stats: graph.figure,
        baselineName: "5 plain inits", baseline: graph.baseline, target: .baselinePlus(150)))

    benchTwoThreads(settings, report, container: c)
}

/// The same singleton resolved from two threads at once, per operation, against one thread
/// alone (sampled alternately). The sink writes nothing, so the threads share only what the
/// resolve itself shares: the tables it reads, and the instance's reference count, which every
/// returned reference increments. The same measurement of the hand-written locator shows what
/// that reference count alone costs.
func benchTwoThreads(_ settings: Settings, _ report: Report, container: WeaveDI.Container) {
    let locator: any Locator = opaque(HandLocator())
    let resolve = measureTwoThreads(settings) { n in
        for _ in 0..<n { blackHole(container.resolve(Singleton.self)) }
    }
    report.add(resolve.figure(
        name: "Container.resolve, singleton, 2 threads at once (per op)", target: .ratioAtMost(2),
        note: "wall time of the slower thread / operations per thread"), notingSkip: true)
    let hand = measureTwoThreads(settings) { n in
        for _ in 0..<n { blackHole(locator.singleton()) }
    }
    report.add(hand.figure(
        name: "existential call, 2 threads at once (per op), for reference", target: .none,
        note: "hand-written code handing out a shared instance borrowed: no reference count written"), notingSkip: true)
    let retaining: any RetainedLocator = opaque(RetainingLocator())
    let owned = measureTwoThreads(settings) { n in
        for _ in 0..<n { blackHole(retaining.singleton()) }
    }
    report.add(owned.figure(
        name: "existential call returning +1, 2 threads at once (per op), for reference", target: .none,
        note: "the same, returning the instance retained as resolve does: the cost of its reference count alone"),
        notingSkip: true)
}

/// What `measureTwoThreads` kept, and how many samples it took to keep them.
struct TwoThreadResult {
    var both: [Double]
    var one: [Double]
    var attempts: Int
    var needed: Int
    /// Every two-thread sample's concurrency (see `minimumConcurrency`), kept or not.
    var concurrency: [Double]

    /// The figure, or "n/a" when too few samples had both threads running at once: a figure
    /// from threads that took turns on one core says nothing about the code.
    func figure(name: String, target: Target, note: String) -> Figure {
        let kept = "\(both.count) of \(attempts) two-thread samples concurrent (median CPU/span \(fixed(Stats(concurrency).median, 2)))"
        let range = both.isEmpty ? "" : "\(Unit.time.format(Stats(both).min)) – \(Unit.time.format(Stats(both).max)); "
        var figure = Figure(
            group: "container", name: name, unit: .time, stats: Stats(both), spread: range + kept,
            baselineName: "1 thread", baseline: Stats(one), target: target,
            note: note + "; a two-thread sample counts only when the threads' CPU time adds up to at least "
                + "\(fixed(TwoThreadResult.minimumConcurrency, 1)) × the span of both runs (both on a CPU at "
                + "once for ≥ \(fixed((TwoThreadResult.minimumConcurrency - 1) * 100, 0)) % of it), a one-thread "
                + "sample only when the thread was on a CPU ≥ \(fixed(TwoThreadResult.minimumOnCPU * 100, 0)) % of it")
        if both.count < needed {
            figure.skipReason = "the two threads did not run at once: \(kept), \(needed) needed"
        } else if one.count < needed {
            figure.skipReason = "the one-thread baseline was preempted: \(one.count) of \(attempts) samples on a CPU, \(needed) needed"
        }
        return figure
    }

    /// (CPU time of thread A + CPU time of thread B) / span from the first start to the last end.
    /// With two threads, the fraction of the span during which both ran is at least this - 1.
    static let minimumConcurrency = 1.8
    /// CPU time / wall time of a one-thread sample (a preempted baseline would flatter the ratio).
    static let minimumOnCPU = 0.9
}

/// CLOCK_THREAD_CPUTIME_ID in nanoseconds: the CPU time of the calling thread.
@inline(__always)
func threadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Two threads running `loop(n)` at once, against one thread alone (sampled alternately). Each
/// thread records its wall-clock run window and its own CPU time; a two-thread sample is kept
/// only when the CPU times show both threads ran at the same time for most of the span (on a
/// busy machine they may take turns on one core, and then the per-op time is about twice the
/// one-thread time whatever the code does), a one-thread sample only when its thread was not
/// preempted for long. Samples are taken until `settings.samples` of each are kept, or three
/// times that many were tried.
func measureTwoThreads(_ settings: Settings, _ loop: @escaping @Sendable (Int) -> Void) -> TwoThreadResult {
    // Per thread: start, end (monotonic), CPU time; each thread writes its own cache line.
    let slots = UnsafeMutablePointer<UInt64>.allocate(capacity: 16)
    defer { slots.deallocate() }
    nonisolated(unsafe) let slotPointer = slots
    let n = calibrate(loop, target: settings.sampleNanos)

    /// Per-op wall time of the slower thread, and the concurrency (see `minimumConcurrency`).
    func twoThreads() -> (perOp: Double, concurrency: Double) {
        let line = StartLine(parties: 2)
        let threads = (0..<2).map { index in
            System.startThread {
                line.arrive()
                let cpu = threadCPUNanos()
                let start = System.now()
                loop(n)
                let end = System.now()
                slotPointer[index * 8 + 2] = threadCPUNanos() - cpu
                slotPointer[index * 8] = start
                slotPointer[index * 8 + 1] = end
            }
        }
        for thread in threads { System.join(thread) }
        let a = (start: slotPointer[0], end: slotPointer[1], cpu: slotPointer[2])
        let b = (start: slotPointer[8], end: slotPointer[9], cpu: slotPointer[10])
        let slower = max(a.end - a.start, b.end - b.start)
        let span = max(a.end, b.end) - min(a.start, b.start)
        return (Double(slower) / Double(n), Double(a.cpu + b.cpu) / Double(max(span, 1)))
    }

    /// Per-op time of one thread, and its CPU time / wall time.
    func oneThread() -> (perOp: Double, onCPU: Double) {
        let cpu = threadCPUNanos()
        let wall = time(n, loop)
        let used = threadCPUNanos() - cpu
        return (Double(wall) / Double(n), Double(used) / Double(max(wall, 1)))
    }

    _ = twoThreads()
    var both: [Double] = [], one: [Double] = []
    var attempts = 0
    var concurrency: [Double] = []
    while attempts < 3 * settings.samples && (both.count < settings.samples || one.count < settings.samples) {
        attempts += 1
        let two = twoThreads()
        concurrency.append(two.concurrency)
        if two.concurrency >= TwoThreadResult.minimumConcurrency && both.count < settings.samples { both.append(two.perOp) }
        let single = oneThread()
        if single.onCPU >= TwoThreadResult.minimumOnCPU && one.count < settings.samples { one.append(single.perOp) }
    }
    return TwoThreadResult(both: both, one: one, attempts: attempts, needed: (settings.samples + 1) / 2, concurrency: concurrency)
}

// MARK: Sessions

final class SessionService1: Sendable { init() {} }
final class SessionService2: Sendable { init() {} }
final class SessionService3: Sendable { init() {} }

/// What a hand-written scope does: three instances kept by key in a fresh object.
final class HandScope {
    var values: [Int: AnyObject] = [:]
}

func benchSession(_ settings: Settings, _ report: Report) async {
    print("session: open, resolve three session-scoped services, close")
    let container = WeaveDI.Container()
    container.register(SessionService1.self, scope: .session) { SessionService1() }
    container.register(SessionService2.self, scope: .session) { SessionService2() }
    container.register(SessionService3.self, scope: .session) { SessionService3() }
    let c = opaque(container)

    // Measured on the cooperative pool, where the daemon opens and closes its sessions: from
    // the main actor every `await session.close()` would add two thread hops.
    let quiet = await Task.detached { await measureSessionCycle(settings, container: c) }.value
    report.add(Figure(
        group: "session", name: "session: open, resolve 3 session-scoped, close", unit: .time, stats: quiet.figure,
        baselineName: "hand scope", baseline: quiet.baseline, target: .atMost(2_000),
        note: "log level .errors (what a service runs with); run on the cooperative pool"))

    // The library's default level (.all) builds a message per open and close; the lines go
    // to a sink that drops them, so this is the cost of building them.
    let level = UnifiedDI.logLevel
    UnifiedDI.setLogSink { _ in }
    UnifiedDI.setLogLevel(.all)
    let chatty = await Task.detached { await measureSessionCycle(settings, container: c) }.value
    UnifiedDI.setLogLevel(level)
    UnifiedDI.setLogSink(WeaveDILog.standardError)
    report.add(Figure(
        group: "session", name: "session cycle at the default log level .all (lines dropped)", unit: .time,
        stats: chatty.figure, baselineName: "hand scope", baseline: chatty.baseline,
        note: "for reference: the cost of the diagnostic messages the default level builds"))
}

func measureSessionCycle(_ settings: Settings, container c: WeaveDI.Container) async -> (figure: Stats, baseline: Stats) {
    func cycle(_ n: Int) async {
        for _ in 0..<n {
            let session = c.openSession(id: "bench")
            do {
                blackHole(try session.require(SessionService1.self))
                blackHole(try session.require(SessionService2.self))
                blackHole(try session.require(SessionService3.self))
            } catch {
                fatalError("\(error)")
            }
            await session.close()
        }
    }
    func hand(_ n: Int) async {
        for _ in 0..<n {
            let scope = HandScope()
            scope.values[0] = SessionService1()
            scope.values[1] = SessionService2()
            scope.values[2] = SessionService3()
            blackHole(scope)
        }
    }
    await cycle(8)
    return await measurePairAsync(settings, figure: cycle, baseline: hand)
}
