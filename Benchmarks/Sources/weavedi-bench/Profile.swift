#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import WeaveDI

/// `--profile NAME [ITERATIONS]`: sets up one read-path figure as its group does and runs its
/// loop, untimed, for a profiler:
///
///     valgrind --tool=callgrind Benchmarks/.build/release/weavedi-bench --profile resolve-transient 100000
///
/// Setup costs are paid before the loop, so the loop dominates the profile.
enum Profile {
    static let names = [
        "injected-default", "injected-registered", "injected-type", "injected-override", "resolve-singleton",
        "resolve-transient", "factory", "graph", "session", "session-logged", "bootstrap",
        "unregistered",
    ]

    static func run(_ name: String, iterations: Int, isolation: isolated (any Actor)? = #isolation) async -> Bool {
        UnifiedDI.setLogLevel(.errors)
        WeaveDI.Container.live.register((any ServiceB).self) { LiveService(20) }
        WeaveDI.Container.live.register((any ServiceD).self) { LiveService(40) }
        WeaveDI.Container.live.register(FactoryMade.self, scope: .transient) { FactoryMade() }
        let container = WeaveDI.Container()
        registerContainerGraph(in: container)
        container.register(SessionService1.self, scope: .session) { SessionService1() }
        container.register(SessionService2.self, scope: .session) { SessionService2() }
        container.register(SessionService3.self, scope: .session) { SessionService3() }
        let c = opaque(container)
        let readers = opaque(Readers())
        for _ in 0..<8 {
            blackHole(readers.byDefault)
            blackHole(readers.byRegistration)
            blackHole(readers.byType)
            blackHole(readers.fresh)
            blackHole(c.resolve(Singleton.self))
            blackHole(c.resolve(Transient.self))
            blackHole(try? c.require(G1.self))
        }
        let n = iterations
        switch name {
        case "injected-default":
            // The read inlined into the loop, as the benchmark's loop has it; the function below is
            // kept (called once) for reading the read's code alone.
            blackHole(disassemblyInjectedDefault(readers))
            for _ in 0..<n { blackHole(readers.byDefault) }
        case "injected-registered": for _ in 0..<n { blackHole(readers.byRegistration) }
        case "injected-type": for _ in 0..<n { blackHole(readers.byType) }
        case "injected-override":
            withInjectedValues { $0.benchOverridden = LiveService(30) } operation: {
                for _ in 0..<n { blackHole(readers.byOverride) }
            }
        case "resolve-singleton": for _ in 0..<n { blackHole(c.resolve(Singleton.self)) }
        case "resolve-transient": for _ in 0..<n { blackHole(c.resolve(Transient.self)) }
        case "factory": for _ in 0..<n { blackHole(readers.fresh) }
        case "graph": for _ in 0..<n { blackHole(try? c.require(G1.self)) }
        case "session", "session-logged":
            if name == "session-logged" {
                UnifiedDI.setLogSink { _ in }
                UnifiedDI.setLogLevel(.all)
            }
            // On a thread of our own running the task's jobs itself: valgrind 3.19 does not
            // survive the cooperative pool's threads. Nothing in the loop suspends, so this runs
            // the same code as the benchmark's detached task.
            ThreadExecutor.run {
                for _ in 0..<n {
                    let session = c.openSession(id: "bench")
                    blackHole(try? session.require(SessionService1.self))
                    blackHole(try? session.require(SessionService2.self))
                    blackHole(try? session.require(SessionService3.self))
                    await session.close()
                }
            }
        case "bootstrap":  // ITERATIONS new types registered once each
            let registrars = (0..<n).map { registrar(for: $0, digits: 5, leaf: BootLeaf.self) }
            let container = WeaveDI.Container()
            for r in registrars { r.register(in: container, scope: .singleton, dependencies: []) }
            blackHole(container)
        case "unregistered":  // a logged nil resolve among 10,000 registrations (lines dropped)
            let container = WeaveDI.Container()
            for i in 0..<10_000 {
                registrar(for: i, digits: 5, leaf: MissLeaf.self).register(in: container, scope: .singleton, dependencies: [])
            }
            let missing = registrar(for: 10_000, digits: 5, leaf: MissLeaf.self)
            let c = opaque(container)
            UnifiedDI.setLogSink { _ in }
            blackHole(missing.resolve(from: c))  // names spelled once, as the benchmark's warm-up does
            for _ in 0..<n { blackHole(missing.resolve(from: c)) }
        default: return false
        }
        return true
    }
}

/// One read each, not inlined, for reading the generated code (`objdump -d`).
@inline(never) func disassemblyInjectedDefault(_ readers: Readers) -> any ServiceA { readers.byDefault }

/// A task executor that is one plain thread running its jobs in turn, for profiling async code
/// without the cooperative pool.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let jobs = Mutex<[UnownedJob]>([])

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    /// Runs `body` in a task whose jobs run on a new thread, and returns when it has finished.
    static func run(_ body: @escaping @Sendable () async -> Void) {
        let executor = ThreadExecutor()
        let thread = System.startThread {
            let done = Atomic<Bool>(false)
            Task(executorPreference: executor) {
                await body()
                done.store(true, ordering: .releasing)
            }
            while !done.load(ordering: .acquiring) {
                let next: UnownedJob? = executor.jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                if let next { next.runSynchronously(on: executor.asUnownedTaskExecutor()) } else { sched_yield() }
            }
        }
        System.join(thread)
    }
}
