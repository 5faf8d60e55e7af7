import WeaveDI

// Bootstrap of 10,000 registrations and validation of a 1,000-node graph.
//
// Registrations are per type, so the harness makes as many distinct types as it needs: the
// number n becomes a nest of generic structs, one per hexadecimal digit, most significant digit
// innermost (n = 0x2A7 is `H7<HA<H2<Leaf>>>` below five digits). The types are made (their
// metadata instantiated) before the clock starts; only the registration calls are timed.

protocol Node: Sendable { init() }

struct BootLeaf: Node {}
struct GraphLeaf: Node {}
struct MissLeaf: Node {}
struct H0<I: Node>: Node {}
struct H1<I: Node>: Node {}
struct H2<I: Node>: Node {}
struct H3<I: Node>: Node {}
struct H4<I: Node>: Node {}
struct H5<I: Node>: Node {}
struct H6<I: Node>: Node {}
struct H7<I: Node>: Node {}
struct H8<I: Node>: Node {}
struct H9<I: Node>: Node {}
struct HA<I: Node>: Node {}
struct HB<I: Node>: Node {}
struct HC<I: Node>: Node {}
struct HD<I: Node>: Node {}
struct HE<I: Node>: Node {}
struct HF<I: Node>: Node {}

/// Does things with one generated type `T`.
protocol Registrar: Sendable {
    /// `container.register(T.self, scope:) { T() }`, the factory first requiring `dependencies`.
    func register(in container: WeaveDI.Container, scope: WeaveDI.Scope, dependencies: [any Registrar])
    /// What a hand-written registry does instead: a factory stored under the type's identity.
    func registerByHand(in table: inout [ObjectIdentifier: @Sendable () -> Any])
    /// `resolver.require(T.self)`.
    func require(from resolver: any Resolver) throws -> Any
    /// `container.resolve(T.self)`.
    func resolve(from container: WeaveDI.Container) -> Any?
    /// `T()`.
    func make() -> Any
}

struct TypeRegistrar<T: Node>: Registrar {
    func register(in container: WeaveDI.Container, scope: WeaveDI.Scope, dependencies: [any Registrar]) {
        if dependencies.isEmpty {
            container.register(T.self, scope: scope) { T() }
        } else {
            container.register(T.self, scope: scope) { r in
                for dependency in dependencies { _ = try dependency.require(from: r) }
                return T()
            }
        }
    }

    func registerByHand(in table: inout [ObjectIdentifier: @Sendable () -> Any]) {
        table[ObjectIdentifier(T.self)] = { T() }
    }

    func require(from resolver: any Resolver) throws -> Any {
        try resolver.require(T.self)
    }

    func resolve(from container: WeaveDI.Container) -> Any? {
        container.resolve(T.self)
    }

    func make() -> Any { T() }
}

/// The registrar of the type that stands for `number` (`digits` hexadecimal digits deep).
func registrar<Leaf: Node>(for number: Int, digits: Int, leaf: Leaf.Type) -> any Registrar {
    func wrap<T: Node>(_ type: T.Type, _ level: Int) -> any Registrar {
        if level < 0 { return TypeRegistrar<T>() }
        switch (number >> (4 * level)) & 0xF {
        case 0x0: return wrap(H0<T>.self, level - 1)
        case 0x1: return wrap(H1<T>.self, level - 1)
        case 0x2: return wrap(H2<T>.self, level - 1)
        case 0x3: return wrap(H3<T>.self, level - 1)
        case 0x4: return wrap(H4<T>.self, level - 1)
        case 0x5: return wrap(H5<T>.self, level - 1)
        case 0x6: return wrap(H6<T>.self, level - 1)
        case 0x7: return wrap(H7<T>.self, level - 1)
        case 0x8: return wrap(H8<T>.self, level - 1)
        case 0x9: return wrap(H9<T>.self, level - 1)
        case 0xA: return wrap(HA<T>.self, level - 1)
        case 0xB: return wrap(HB<T>.self, level - 1)
        case 0xC: return wrap(HC<T>.self, level - 1)
        case 0xD: return wrap(HD<T>.self, level - 1)
        case 0xE: return wrap(HE<T>.self, level - 1)
        default: return wrap(HF<T>.self, level - 1)
        }
    }
    return wrap(leaf, digits - 1)
}

func benchBootstrap(_ settings: Settings, _ report: Report, isolation: isolated (any Actor)? = #isolation) async {
    print("bootstrap: 10,000 registrations; validate() of a 1,000-node graph")
    let count = 10_000
    // Every sample registers types never seen before in this process, as a real bootstrap
    // does (the first sight of a type gives it a slot and a name): one batch per sample.
    let batches = settings.slowSamples + 1
    var registration: [Double] = [], byHand: [Double] = []
    for batch in 0..<batches {
        let registrars = (0..<count).map { registrar(for: batch * count + $0, digits: 5, leaf: BootLeaf.self) }
        let container = WeaveDI.Container()
        var start = System.now()
        for r in registrars { r.register(in: container, scope: .singleton, dependencies: []) }
        let took = System.now() - start
        blackHole(container)
        var table: [ObjectIdentifier: @Sendable () -> Any] = [:]
        start = System.now()
        for r in registrars { r.registerByHand(in: &table) }
        let tookByHand = System.now() - start
        blackHole(table)
        if batch > 0 {  // the first batch warms up
            registration.append(Double(took))
            byHand.append(Double(tookByHand))
        }
    }
    report.add(Figure(
        group: "bootstrap", name: "bootstrap: 10,000 registrations (new types)", unit: .time, stats: Stats(registration),
        baselineName: "dictionary", baseline: Stats(byHand), target: .atMost(10_000_000),
        note: "registration calls only; each sample registers 10,000 types never seen before"))

    benchMissingLookup(settings, report)
    await benchValidate(settings, report)
}

/// `resolve` of a type that is not registered, among 10,000 registrations whose names resemble
/// its own (nests of the same generic structs): nil, "a normal answer". Logged (the harness's
/// level, `.errors`, admits the line, which a sink drops), the error's "did you mean"
/// suggestions compare the name with every registered type's; at `.off`, nothing reads the
/// error. Against a dictionary lookup that misses, among as many entries.
func benchMissingLookup(_ settings: Settings, _ report: Report) {
    let count = 10_000
    let container = WeaveDI.Container()
    var table: [ObjectIdentifier: @Sendable () -> Any] = [:]
    for i in 0..<count {
        let r = registrar(for: i, digits: 5, leaf: MissLeaf.self)
        r.register(in: container, scope: .singleton, dependencies: [])
        r.registerByHand(in: &table)
    }
    // Named as the registered ones are (five digits deep), one past the last.
    let missing = registrar(for: count, digits: 5, leaf: MissLeaf.self)
    let c = opaque(container)
    let key = opaque(ObjectIdentifier(BootLeaf.self))
    let level = UnifiedDI.logLevel
    UnifiedDI.setLogSink { _ in }
    defer {
        UnifiedDI.setLogSink(WeaveDILog.standardError)
        UnifiedDI.setLogLevel(level)
    }
    for (name, logLevel) in [("logged (lines dropped)", LogLevel.errors), ("log level .off", LogLevel.off)] {
        UnifiedDI.setLogLevel(logLevel)
        blackHole(missing.resolve(from: c))
        let pair = measurePair(settings, figure: { n in
            for _ in 0..<n { blackHole(missing.resolve(from: c)) }
        }, baseline: { n in
            for _ in 0..<n { blackHole(table[key]) }
        })
        report.add(Figure(
            group: "bootstrap", name: "resolve of an unregistered type, 10,000 registrations, \(name)", unit: .time,
            stats: pair.figure, baselineName: "dictionary miss", baseline: pair.baseline))
    }
}

/// `validate()` of 1,000 registrations: mostly singletons, each requiring two earlier
/// singletons; every tenth a transient and every tenth (offset by five) session-scoped, which
/// nothing depends on (so the graph is valid). A fresh container per sample.
func benchValidate(_ settings: Settings, _ report: Report, isolation: isolated (any Actor)? = #isolation) async {
    let count = 1_000
    let registrars = (0..<count).map { registrar(for: $0, digits: 3, leaf: GraphLeaf.self) }
    func scope(_ i: Int) -> WeaveDI.Scope {
        switch i % 10 {
        case 0: .transient
        case 5: .session
        default: .singleton
        }
    }
    func singletonAtOrBefore(_ i: Int) -> Int? {
        var j = i
        while j >= 0, scope(j) != .singleton { j -= 1 }
        return j >= 0 ? j : nil
    }
    let dependencies: [[any Registrar]] = (0..<count).map { i in
        guard i > 0 else { return [] }
        let picks = Set([singletonAtOrBefore(i - 1), singletonAtOrBefore(i / 2)].compactMap { $0 }).filter { $0 < i }
        return picks.sorted().map { registrars[$0] }
    }
    var validation: [Double] = [], byHand: [Double] = []
    for sample in 0...settings.slowSamples {
        let container = WeaveDI.Container()
        for i in 0..<count { registrars[i].register(in: container, scope: scope(i), dependencies: dependencies[i]) }
        var start = System.now()
        let result = await container.validate()
        let took = System.now() - start
        guard result.isValid else { fatalError("the benchmark graph did not validate: \(result.failures.prefix(3))") }
        blackHole(result)
        start = System.now()
        var built: [Any] = []
        built.reserveCapacity(count)
        for r in registrars { built.append(r.make()) }
        let tookByHand = System.now() - start
        blackHole(built)
        if sample > 0 {
            validation.append(Double(took))
            byHand.append(Double(tookByHand))
        }
    }
    report.add(Figure(
        group: "bootstrap", name: "validate(): 1,000-node graph", unit: .time, stats: Stats(validation),
        baselineName: "1,000 plain inits", baseline: Stats(byHand), target: .atMost(20_000_000),
        note: "builds every registration once, records the graph, checks cycles and components"))
}
