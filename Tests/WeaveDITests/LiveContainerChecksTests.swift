import Testing
@testable import WeaveDI

/// `WeaveDIConfiguration.applyFromEnvironment()` gives `UnifiedRegistry.shared` the passive
/// built-in checks of the live container, so that the loop and the `WEAVEDI_REGISTRY_*` flags
/// act on something without another call, and without doing anything the program did not ask
/// for: nothing built, no factory run, no session opened or closed. Each run is a child process:
/// it bootstraps and replaces `WeaveDI.Container.live`.
@Suite struct LiveContainerChecksTests {
    func probe(_ command: String, _ environment: [String: String]) throws -> [String] {
        let result = try ChildProcess.run("weavedi-probe", [command], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    static let names = #"["container.graph", "container.singletons", "container.sessions"]"#
    static let passiveNames = #"["container.graph", "container.singletons"]"#

    @Test func theSharedRegistry_checksTheLiveContainer_passively_andFollowsIt() throws {
        let lines = try probe("live-container-checks", ["WEAVEDI_REGISTRY_HEALTH_LOGGING": "1"])
        #expect(lines.contains("loop=true autoFix=true"), "\(lines)")
        #expect(lines.contains("checks=\(Self.passiveNames)"), "\(lines)")
        // Two rounds (and the loop's): a failing factory and one that needs a real request are
        // not run, nor any other; the session the program holds, idle, stays open.
        #expect(lines.filter { $0.hasPrefix("graph=healthy: no cycle or component issue among 5 registration(s); 5 not built yet") }.count == 2, "\(lines)")
        #expect(lines.contains("factories run=[]"), "\(lines)")
        #expect(lines.contains(#"open sessions=["websocket-1"]"#), "\(lines)")
        // Another container assigned to `live`, whose cycle the program met: that cycle.
        #expect(lines.contains("graph after swap=unhealthy: dependency cycle: CycleA -> CycleB -> CycleA"), "\(lines)")
        #expect(lines.contains("transition logged=true"), "\(lines)")
        // The active checks, asked for: they build everything, and close the idle session.
        #expect(lines.contains("checks after active=\(Self.names)"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("graph after active=unhealthy: 2 registration(s) cannot be built") && $0.contains("LiveBroken") }, "\(lines)")
        // The active check follows a swapped live: the new container's cycle, not the old one's
        // remembered failures (the two have as many registration changes).
        #expect(lines.contains { $0.hasPrefix("graph after active swap=unhealthy") && $0.contains("CycleA") && !$0.contains("LiveBroken") }, "\(lines)")
        #expect(lines.contains(#"factories run after active=["LiveBroken", "LiveDatabase", "LiveRequestState", "LiveSessionState", "LiveTransient"]"#), "\(lines)")
        #expect(lines.contains("open sessions after active=[] held closed=true"), "\(lines)")
        #expect(lines.contains("checks after passive=\(Self.passiveNames)"), "\(lines)")
        // The checks of a container of one's own (weavedid's) replace them, quietly.
        #expect(lines.contains("checks after own=\(Self.names) overwrite logged=false"), "\(lines)")
        #expect(lines.contains("checks after removal=[]"), "\(lines)")
    }

    @Test func healthLines_stayOut_unlessHealthLoggingIsOn() throws {
        let lines = try probe("live-container-checks", [:])
        #expect(lines.contains { $0.hasPrefix("graph after swap=unhealthy: ") }, "\(lines)")
        #expect(lines.contains("transition logged=false"), "\(lines)")
    }

    @Test func autoFixOff_leavesIdleSessionsOpen_evenUnderTheActiveChecks() throws {
        let lines = try probe("live-container-checks", ["WEAVEDI_REGISTRY_AUTO_FIX": "0"])
        #expect(lines.contains("loop=true autoFix=false"), "\(lines)")
        #expect(lines.contains(#"open sessions after active=["websocket-1"] held closed=false"#), "\(lines)")
    }

    /// Off, no loop, but the checks are registered, for a program to run itself. (The probe
    /// keeps the library's lines from its standard error, so whether it says anything about
    /// the loop is not seen here.)
    @Test func autoHealthOff_startsNoLoop_butTheChecksAreThere() throws {
        let result = try ChildProcess.run(
            "weavedi-probe", ["live-container-checks"], environment: ["WEAVEDI_REGISTRY_AUTO_HEALTH": "0"])
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("loop=false autoFix=true"), "\(lines)")
        #expect(lines.contains("checks=\(Self.passiveNames)"), "\(lines)")
    }

    /// Checks of the program's own container, registered before the call, are left as they are.
    @Test func checksOfAContainerOfOnesOwn_areKept() throws {
        let lines = try probe("live-container-checks-own", [:])
        #expect(lines.contains("checks=\(Self.names)"), "\(lines)")
        #expect(lines.contains("graph=healthy: the 1 registration builds"), "\(lines)")
    }

    // MARK: The passive checks, in process

    /// Registrations whose factories say when they run: a singleton, a session-scoped one, one
    /// that throws outside a real request, a transient, and one that always throws.
    static func countedContainer(_ runs: Locked<[String]>) -> WeaveDI.Container {
        struct Outside: Error {}
        let container = WeaveDI.Container()
        container.register(NodeA.self) {
            runs.withLock { $0.append("NodeA") }
            return NodeA()
        }
        container.register(NodeB.self, scope: .session) {
            runs.withLock { $0.append("NodeB") }
            return NodeB()
        }
        container.register(NodeC.self, scope: .request) { () throws -> NodeC in
            runs.withLock { $0.append("NodeC") }
            throw Outside()
        }
        container.register(NodeD.self, scope: .transient) {
            runs.withLock { $0.append("NodeD") }
            return NodeD()
        }
        container.register(NodeE.self) { () throws -> NodeE in
            runs.withLock { $0.append("NodeE") }
            throw Outside()
        }
        return container
    }

    @Test func passiveChecks_buildNothing_andLeaveTheProgramsSessionsAlone() async {
        let runs = Locked<[String]>([])
        let container = Self.countedContainer(runs)
        let held = container.openSession(id: "websocket-1")
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        registry.registerContainerChecks(for: container, .passive)
        #expect(registry.checkNames == ["container.graph", "container.singletons"])
        for _ in 0..<3 {
            let graph = await registry.runChecks().checks[0]
            #expect(graph.status == .healthy)
            #expect(graph.message == "no cycle or component issue among 5 registration(s); 5 not built yet, their dependencies unknown (this check builds nothing)")
        }
        #expect(runs.withLock { $0 } == [])
        #expect(container.registrations.allSatisfy { !$0.isBuilt })
        #expect(container.openSessions.map(\.id) == ["websocket-1"])
        #expect(!held.isClosed)
    }

    @Test func passiveGraph_gradesWhatIsRecorded_asTheActiveOneDoes() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = WeaveDI.Container()
        registry.registerContainerChecks(for: container, .passive)
        #expect(await registry.runChecks().checks[0].message == "no cycle or component issue among 0 registration(s)")
        // Two modules providing one type: degraded.
        await container.bootstrap(modules: [
            TestModule(name: "core") { c in c.register(NodeA.self) { NodeA() } },
            TestModule(name: "testing") { c in c.register(NodeA.self) { NodeA() } },
        ])
        let duplicate = await registry.runChecks().checks[0]
        #expect(duplicate.status == .degraded)
        #expect(duplicate.message.hasPrefix("1 component issue(s); first: NodeA: provided by 2 modules"))
        // A cycle the program met: unhealthy.
        container.register(CycleA.self) { r in CycleA(b: try r.require(CycleB.self)) }
        container.register(CycleB.self) { r in CycleB(a: try r.require(CycleA.self)) }
        _ = try? container.require(CycleA.self)
        let cycle = await registry.runChecks().checks[0]
        #expect(cycle.status == .unhealthy)
        #expect(cycle.message == "dependency cycle: CycleA -> CycleB -> CycleA")
        #expect(cycle.data["cycles"] == "1")
    }

    /// A scope mismatch the program's own build met (a singleton that requires a session-scoped
    /// service, resolved outside any session) is in the recorded graph: the passive check
    /// degrades on it, naming it, without building anything itself.
    @Test func passiveGraph_degradesOnAScopeMismatchTheProgramsBuildRecorded() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = WeaveDI.Container()
        registry.registerContainerChecks(for: container, .passive)
        let builds = Locked(0)
        container.register(NodeB.self, scope: .session) { NodeB() }
        container.register(NodeA.self) { r in
            builds.withLock { $0 += 1 }
            _ = try r.require(NodeB.self)
            return NodeA()
        }
        #expect(await registry.runChecks().checks[0].status == .healthy)
        #expect(builds.withLock { $0 } == 0)
        #expect(container.resolve(NodeA.self) == nil)
        let mismatch = await registry.runChecks().checks[0]
        #expect(mismatch.status == .degraded)
        #expect(mismatch.message.hasPrefix("1 component issue(s); first: NodeA: singleton NodeA needs NodeB (session)"),
            "\(mismatch.message)")
        #expect(builds.withLock { $0 } == 1)
    }

    /// Passive registered over active takes `container.sessions` away; active brings it back.
    @Test func passiveAndActive_replaceEachOther() async {
        let runs = Locked<[String]>([])
        let container = Self.countedContainer(runs)
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        registry.registerContainerChecks(for: container)
        #expect(registry.checkNames == UnifiedRegistry.containerCheckNames)
        registry.registerContainerChecks(for: container, .passive)
        #expect(registry.checkNames == ["container.graph", "container.singletons"])
        _ = await registry.runChecks()
        #expect(runs.withLock { $0 } == [])
        registry.registerContainerChecks(for: container, .active(sessionIdleLimit: .seconds(60)))
        #expect(registry.checkNames == UnifiedRegistry.containerCheckNames)
        #expect(await registry.runChecks().checks[0].status == .unhealthy)
        #expect(Set(runs.withLock { $0 }) == ["NodeA", "NodeB", "NodeC", "NodeD", "NodeE"])
    }

    /// What `applyFromEnvironment()` offers is added check by check only where no check of the
    /// name is (in the same step as the look): a program's own check, even one registered just
    /// before, is kept, and its `container.sessions` is not removed.
    @Test func offeredChecks_leaveAProgramsOwnChecksOfThoseNames() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        registry.register(HealthCheck(name: "container.graph") { .healthy("mine") })
        registry.register(HealthCheck(name: "container.sessions") { .healthy("my sessions") })
        registry.registerContainerChecks(of: { WeaveDI.Container() }, .passive, .addIfAbsent)
        #expect(registry.checkNames == ["container.graph", "container.sessions", "container.singletons"])
        let report = await registry.runChecks()
        #expect(report.checks.first { $0.name == "container.graph" }?.message == "mine")
        #expect(report.checks.first { $0.name == "container.sessions" }?.message == "my sessions")
    }
}
