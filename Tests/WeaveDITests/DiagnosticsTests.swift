import Testing
@testable import WeaveDI

final class NodeA: Sendable {}
final class NodeB: Sendable {}
final class NodeC: Sendable {}
final class NodeD: Sendable {}
final class NodeE: Sendable {}
final class NodeF: Sendable {}
final class NodeG: Sendable {}
final class NodeH: Sendable {}

struct TestModule: WeaveDI.Module {
    let name: String
    let body: @Sendable (WeaveDI.Container) -> Void
    func register(in container: WeaveDI.Container) async { body(container) }
}

/// A singleton that says how it feels, and counts its disposals.
final class Moody: HealthReporting, Disposable {
    let healthy: Bool
    let ledger: Ledger
    init(healthy: Bool, _ ledger: Ledger) {
        self.healthy = healthy
        self.ledger = ledger
        ledger.built()
    }
    func health() async -> HealthCheckResult { healthy ? .healthy() : .unhealthy("moody") }
    func dispose() async { ledger.disposed("moody") }
}

@Suite struct DiagnosticsTests {
    @Test func duplicateProviders_andScopeDrift_areReported_inOrder() async {
        let container = WeaveDI.Container()
        await container.bootstrap(modules: [
            TestModule(name: "core") { c in
                c.register(NodeB.self) { NodeB() }
                c.register(NodeA.self) { NodeA() }
            },
            TestModule(name: "testing") { c in
                c.register(NodeB.self, scope: .transient) { NodeB() }
                c.register(NodeA.self) { NodeA() }
            },
            TestModule(name: "other") { c in c.register(NodeC.self) { NodeC() } },
        ])
        let issues = container.diagnoseComponents().issues
        #expect(issues.map(\.type) == ["NodeA", "NodeB", "NodeB"])
        #expect(issues.map(\.kind) == [.duplicateProvider, .duplicateProvider, .scopeDrift])
        #expect(issues[0].providers == ["core", "testing"])
        #expect(issues[2].providers == ["core(singleton)", "testing(transient)"])
        #expect(container.diagnoseComponents().json.serialized.hasPrefix(
            #"{"issues":[{"type":"NodeA","providers":["core","testing"],"detail":"provided by 2 modules (core, testing); the registration by testing wins""#))
    }

    @Test func cleanGraph_hasNoIssues() {
        let container = WeaveDI.Container()
        container.register(NodeA.self) { NodeA() }
        container.register(NodeA.self) { NodeA() }  // same module, same scope: a plain replacement
        #expect(container.diagnoseComponents().issues.isEmpty)
        #expect(container.diagnoseComponents().json.serialized == #"{"issues":[]}"#)
    }

    @Test func aRegistrationRemovedAndMadeAgainByAnotherModule_isADuplicate() {
        let container = WeaveDI.Container()
        ModuleContext.$current.withValue("core") { container.register(NodeA.self) { NodeA() } }
        #expect(container.unregister(NodeA.self))
        ModuleContext.$current.withValue("testing") {
            container.register(NodeA.self, scope: .transient) { NodeA() }
        }
        let issues = container.diagnoseComponents().issues
        #expect(issues.map(\.kind) == [.duplicateProvider, .scopeDrift])
        #expect(issues.first?.providers == ["core", "testing"])
        #expect(issues.last?.providers == ["core(singleton)", "testing(transient)"])
        // Removed for good, it stays on record: the issues stand.
        #expect(container.unregister(NodeA.self))
        #expect(container.diagnoseComponents().issues.map(\.type) == ["NodeA", "NodeA"])
    }

    @Test func singletonNeedingASessionScopedService_isAScopeMismatch_onceBuilt() async {
        let container = WeaveDI.Container()
        await container.bootstrap(modules: [
            TestModule(name: "core") { c in
                c.register(NodeB.self, scope: .session) { NodeB() }
                c.register(NodeA.self) { r in _ = try r.require(NodeB.self); return NodeA() }
            },
        ])
        // Never built: no edge is known yet, so nothing can be seen.
        #expect(container.diagnoseComponents().issues.isEmpty)
        let report = await container.validate()
        #expect(report.failures.map(\.isScopeMismatch) == [true])
        let issues = container.diagnoseComponents().issues
        #expect(issues.map(\.kind) == [.scopeMismatch])
        #expect(report.componentIssues == issues)
        #expect(container.diagnoseComponents().json.serialized == #"{"issues":[{"type":"NodeA","providers":["core(singleton)"],"#
            + #""detail":"singleton NodeA needs NodeB (session), which it would keep beyond its session; register NodeA "#
            + #"with scope .session or shorter, or NodeB with a longer one","kind":"scopeMismatch"}]}"#)
    }

    @Test func scopeMismatches_throughTransients_andNoOthers() async {
        let container = WeaveDI.Container()
        await container.bootstrap(modules: [
            TestModule(name: "core") { c in
                // A singleton may hold a transient; not what the transient needs of a shorter scope.
                c.register(NodeA.self) { r in _ = r.resolve(NodeB.self); return NodeA() }
                c.register(NodeB.self, scope: .transient) { r in _ = r.resolve(NodeC.self); return NodeB() }
                c.register(NodeC.self, scope: .request) { NodeC() }
                // Shorter-lived needing longer-lived, and a singleton holding a transient: no mismatch.
                c.register(NodeD.self, scope: .request) { r in _ = r.resolve(NodeE.self); return NodeD() }
                c.register(NodeE.self, scope: .session) { r in _ = r.resolve(NodeF.self); return NodeE() }
                c.register(NodeF.self) { r in _ = r.resolve(NodeG.self); return NodeF() }
                c.register(NodeG.self, scope: .transient) { NodeG() }
                // Session needing request.
                c.register(NodeH.self, scope: .session) { r in _ = r.resolve(NodeC.self); return NodeH() }
            },
        ])
        // `resolve` gives nil on the mismatch: every build succeeds, and only the graph shows it.
        #expect(await container.validate().isValid)
        let issues = container.diagnoseComponents().issues
        #expect(issues.map(\.type) == ["NodeA", "NodeH"])
        #expect(issues.map(\.kind) == [.scopeMismatch, .scopeMismatch])
        #expect(issues.map(\.providers) == [["core(singleton)"], ["core(session)"]])
        #expect(issues.first?.detail.hasPrefix("singleton NodeA needs NodeC (request) through NodeB, ") == true)
        #expect(issues.last?.detail.hasPrefix("session NodeH needs NodeC (request), ") == true)
    }

    @Test func scopeMismatch_comesAfterDuplicatesAndDrift_ofItsType() async {
        let container = WeaveDI.Container()
        await container.bootstrap(modules: [
            TestModule(name: "core") { c in
                c.register(NodeA.self, scope: .session) { NodeA() }
                c.register(NodeB.self, scope: .request) { NodeB() }
            },
            TestModule(name: "testing") { c in
                c.register(NodeA.self) { r in _ = r.resolve(NodeC.self); _ = r.resolve(NodeB.self); return NodeA() }
                c.register(NodeC.self, scope: .session) { NodeC() }
            },
        ])
        await container.validate()
        let issues = container.diagnoseComponents().issues
        #expect(issues.map(\.kind) == [.duplicateProvider, .scopeDrift, .scopeMismatch, .scopeMismatch])
        #expect(issues.filter { $0.kind == .scopeMismatch }.map { String($0.detail.prefix(40)) }
            == ["singleton NodeA needs NodeB (request), w", "singleton NodeA needs NodeC (session), w"])
    }

    @Test func registeringAgainAndAgain_keepsOneRecordPerModuleAndScope_latestLast() {
        let container = WeaveDI.Container()
        for round in 0..<1_000 {
            ModuleContext.$current.withValue(round.isMultiple(of: 2) ? "core" : "testing") {
                container.register(NodeA.self) { NodeA() }
            }
        }
        ModuleContext.$current.withValue("core") { container.register(NodeA.self) { NodeA() } }
        let slot = TypeSlots.shared.slot(for: NodeA.self)
        let records = container.state.withLock { $0.history[slot] ?? [] }
        #expect(records.map(\.module) == ["testing", "core"])
        let issues = container.diagnoseComponents().issues
        #expect(issues.map(\.providers) == [["core", "testing"]])
        #expect(issues.first?.detail.hasSuffix("the registration by core wins") == true)
    }

    @Test func threeNodeCycle_isFound_inCanonicalRotation() async {
        let container = WeaveDI.Container()
        container.register(NodeB.self) { r in _ = r.resolve(NodeC.self); return NodeB() }
        container.register(NodeC.self) { r in _ = r.resolve(NodeA.self); return NodeC() }
        container.register(NodeA.self) { r in _ = r.resolve(NodeB.self); return NodeA() }
        let validation = await container.validate()
        let report = container.checkCycles()
        #expect(report.cycles == [["NodeA", "NodeB", "NodeC"]])
        #expect(report.componentCount == 3 && report.edgeCount == 3)
        #expect(report.json.serialized == #"{"componentCount":3,"edgeCount":3,"cycles":[["NodeA","NodeB","NodeC"]],"notBuilt":[]}"#)
        #expect(validation.cycles == [["NodeA", "NodeB", "NodeC"]])
        #expect(!validation.isValid)
    }

    @Test func validation_buildsEachRegistrationInItsScope_andReportsFailures() async {
        let ledger = Ledger()
        let container = WeaveDI.Container()
        container.register(Tracked.self, scope: .session) { Tracked("probe", ledger) }
        container.register(CallScope.self, scope: .request) { CallScope() }
        container.register(NodeA.self) { NodeA() }
        container.register(NodeB.self) { r in _ = try r.require(SessionCache.self); return NodeB() }
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        let report = await container.validate()
        #expect(report.built.sorted() == ["CallScope", "NodeA", "SessionCache", "Tracked"])
        #expect(report.failures.map(\.type) == ["NodeB"])
        #expect(report.failures[0].isScopeMismatch)
        #expect(ledger.disposals == ["probe"])  // the probe session was closed
        #expect(container.openSessions.isEmpty)
        #expect(container.registrations.first { $0.type == "NodeA" }?.isBuilt == true)
    }

    /// A failure prints as the bootstrap's log says it, alone or in a list, not as a dump.
    @Test func validationFailure_printsReadably() async throws {
        struct Refused: Error, CustomStringConvertible { var description: String { "refused" } }
        let container = WeaveDI.Container()
        container.register(NodeB.self, scope: .session) { () throws -> NodeB in throw Refused() }
        let failure = try #require(await container.validate().failures.first)
        #expect("\(failure)" == "NodeB (session) failed to build: the factory of NodeB failed: refused")
        #expect("\([failure])" == "[NodeB (session) failed to build: the factory of NodeB failed: refused]")
    }

    @Test func containerGraphCheck_reflectsTheGraph() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = WeaveDI.Container()
        container.register(NodeA.self) { NodeA() }
        registry.registerContainerChecks(for: container)
        #expect(await registry.runChecks().checks[0].status == .healthy)
        container.register(NodeB.self) { () throws -> NodeB in throw ScriptedFix.FixError() }
        let broken = await registry.runChecks().checks[0]
        #expect(broken.status == .unhealthy)
        #expect(broken.message.contains("NodeB"))
    }

    /// Its healthy message counts the registrations in plain English: one builds, several build.
    @Test func containerGraphCheck_healthyMessage_isGrammatical() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = WeaveDI.Container()
        container.register(NodeA.self) { NodeA() }
        registry.registerContainerChecks(for: container)
        #expect(await registry.runChecks().checks[0].message == "the 1 registration builds")
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        #expect(await registry.runChecks().checks[0].message == "all 2 registrations build")
    }

    /// The container.graph check validates (on its first round and after a registration
    /// changes): without WEAVEDI_REGISTRY_HEALTH_LOGGING that logs nothing (no probe session
    /// opened and closed, no summary), and neither do the factories it runs (a resolve that
    /// finds nothing) nor the fix that evicts an unhealthy singleton; with it, all of them do.
    /// A task such a factory starts is no part of it, and logs as any other.
    @Test func containerChecks_areQuiet_unlessHealthLoggingIsOn() throws {
        let result = try ChildProcess.run("weavedi-probe", ["graph-check-logs"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("quiet: 0 line(s)"), "\(result.stdout)")
        #expect(lines.contains(#"fixes: ["evicted Sick"]"#), "\(result.stdout)")
        // Quiet is the validation's own builds: a task one of them started logs as any other.
        #expect(lines.contains("started work logged: true"), "\(result.stdout)")
        let logged = lines.drop { !$0.hasPrefix("fixes: ") }
        #expect(logged.contains { $0.contains("session 'weavedi-validation' opened") }, "\(result.stdout)")
        #expect(logged.contains { $0.contains("validated 6 registration(s)") }, "\(result.stdout)")
        // The probe session's disposals, as it closes, are the check's too.
        #expect(logged.contains { $0.contains("resolve(Unsettled) returned nil") }, "\(result.stdout)")
        #expect(logged.contains { $0.contains("resolve(Unregistered) returned nil") }, "\(result.stdout)")
        #expect(logged.contains { $0.contains("evicted the singleton Sick") }, "\(result.stdout)")
        #expect(lines.last?.hasPrefix("logged: ") == true, "\(result.stdout)")
    }

    /// The container.sessions fix logs each session it closes, health logging off or on: the
    /// program may still hold it.
    @Test func sessionsFix_logsEachClosing_whateverHealthLoggingSays() throws {
        let result = try ChildProcess.run("weavedi-probe", ["sessions-fix-logs"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("forgotten-1: open 0, lines [") && $0.contains("session \\'forgotten-1\\' closed by the container.sessions fix: idle for ") },
                "\(result.stdout)")
        #expect(lines.contains { $0.hasPrefix("forgotten-2: open 0, lines [") && $0.contains("session \\'forgotten-2\\' closed by the container.sessions fix: idle for ") },
                "\(result.stdout)")
    }

    @Test func unhealthySingleton_isEvicted_disposed_andRebuilt() async throws {
        let ledger = Ledger()
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = WeaveDI.Container()
        let healthyNext = Locked(false)
        container.register(Moody.self) { Moody(healthy: healthyNext.withLock { $0 }, ledger) }
        registry.registerContainerChecks(for: container)
        let first = try container.require(Moody.self)
        healthyNext.withLock { $0 = true }
        let report = await registry.runChecks()
        let singletons = report.checks.first { $0.name == "container.singletons" }!
        #expect(singletons.lastFix?.message == "evicted Moody")
        #expect(singletons.status == .healthy)  // re-run after the fix
        #expect(ledger.disposals == ["moody"])
        let second = try container.require(Moody.self)
        #expect(second !== first && second.healthy)
    }

    @Test func idleSessions_areClosedByTheFix() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = WeaveDI.Container()
        registry.registerContainerChecks(for: container, sessionIdleLimit: .zero)
        let session = container.openSession(id: "sleepy")
        let report = await registry.runChecks()
        let sessions = report.checks.first { $0.name == "container.sessions" }!
        #expect(sessions.lastFix?.message.hasPrefix("closed 1 idle session(s): 'sleepy' (idle ") == true)
        #expect(session.isClosed)
    }

    /// The built-in container fixes asked for by hand with nothing to do (no unhealthy
    /// singleton, no idle session) say so as `notApplicable`, not `succeeded`.
    @Test func containerFixes_withNothingToDo_areNotApplicable() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = WeaveDI.Container()
        registry.registerContainerChecks(for: container, sessionIdleLimit: .seconds(3600))
        _ = container.openSession(id: "busy")
        await registry.runChecks()
        let singletons = await registry.fix("container.singletons")
        #expect(singletons.outcome == .notApplicable, "\(singletons)")
        #expect(singletons.message == "no self-reporting singleton is unhealthy: nothing to evict")
        let sessions = await registry.fix("container.sessions")
        #expect(sessions.outcome == .notApplicable, "\(sessions)")
        #expect(sessions.message.hasPrefix("no session idle for more than "), "\(sessions.message)")
        #expect(sessions.message.hasSuffix(": nothing to close"), "\(sessions.message)")
        #expect(registry.fixHistory().map(\.outcome) == [.notApplicable, .notApplicable])
    }

    @Test func sessionsInUse_areNotIdle_howeverLongSinceTheyResolvedAnything() async throws {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = WeaveDI.Container()
        registry.registerContainerChecks(for: container, sessionIdleLimit: .zero)
        let running = container.openSession(id: "a-long-run")
        let calling = container.openSession(id: "a-long-call")
        let request = calling.openRequest(id: "call-1")
        let (entered, enter) = AsyncStream<Void>.makeStream()
        let (finished, finish) = AsyncStream<Void>.makeStream()
        let run = Task {
            await running.withCurrent {
                enter.yield()
                for await _ in finished { break }
            }
        }
        for await _ in entered { break }
        try await Task.sleep(for: .milliseconds(2))
        await registry.runChecks()
        #expect(!running.isClosed && !calling.isClosed)
        #expect(container.idleSessions(longerThan: .zero).isEmpty)
        finish.yield()
        await run.value
        await request.close()
        try await Task.sleep(for: .milliseconds(2))
        #expect(Set(container.idleSessions(longerThan: .zero).map(\.id)) == ["a-long-run", "a-long-call"])
        #expect(container.idleSessions(longerThan: .seconds(60)).isEmpty)  // idle from the end of their use
    }

    @Test func closeIfIdle_leavesASessionThatCameIntoUse_open() async throws {
        let container = WeaveDI.Container()
        let session = container.openSession(id: "listed-idle-then-used")
        try await Task.sleep(for: .milliseconds(2))
        let cutoff = ContinuousClock.now
        #expect(container.idleSessions(longerThan: .zero).map(\.id) == ["listed-idle-then-used"])
        let request = session.openRequest(id: "call-1")  // in use now
        #expect(await session.closeIfIdle(since: cutoff) == false)
        #expect(!session.isClosed && !request.isClosed)
        await request.close()
        #expect(await session.closeIfIdle(since: cutoff) == false)  // active since the cutoff
        #expect(await session.closeIfIdle(since: ContinuousClock.now))
        #expect(session.isClosed)
    }

    @Test func enableOptimization_warmsSingletons_recordsEdges_andFreezes() async {
        let container = WeaveDI.Container()
        container.register(NodeA.self) { NodeA() }
        container.register(NodeB.self) { r in _ = try r.require(NodeA.self); return NodeB() }
        container.register(NodeC.self, scope: .transient) { NodeC() }
        let report = await UnifiedRegistry(clock: ManualHealthClock()).enableOptimization(container: container)
        #expect(report.registrations == 3 && report.singletonsBuilt == 2 && report.edges == 1)
        #expect(report.validation.isValid)
        #expect(container.registrations.first { $0.type == "NodeB" }?.dependencies == ["NodeA"])
        #expect(container.isOptimized)
    }

    /// The documentation enables optimization first, synchronously, then registers: every
    /// bootstrap after that is warmed when it finishes.
    @Test func enableOptimization_beforeRegistering_warmsEveryLaterBootstrap() async {
        let container = WeaveDI.Container()
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        func enable() -> OptimizationReport { registry.enableOptimization(container: container) }  // the synchronous one
        #expect(enable().registrations == 0)
        await container.bootstrap { c in
            c.register(NodeB.self) { r in _ = try r.require(NodeA.self); return NodeB() }  // before its dependency
            c.register(NodeA.self) { NodeA() }
        }
        #expect(container.registrations.map(\.isBuilt) == [true, true])
        #expect(container.registrations.first { $0.type == "NodeB" }?.dependencies == ["NodeA"])
        await container.bootstrap(modules: [TestModule(name: "late") { $0.register(NodeC.self, scope: .session) { NodeC() } }])
        #expect(container.registrations.first { $0.type == "NodeC" }?.dependencies == [])
        #expect(container.openSessions.isEmpty)  // the probe session is closed
    }
}

@Suite struct ConfigurationChildProcessTests {
    func settings(_ environment: [String: String]) throws -> (lines: [String], stderr: String) {
        let result = try ChildProcess.run("weavedi-probe", ["env"], environment: environment)
        #expect(result.status == 0)
        return (result.stdout.split(separator: "\n").map(String.init), result.stderr)
    }

    @Test func defaults() throws {
        let (lines, _) = try settings([:])
        #expect(lines == [
            "healthLogging=false", "autoHealth=true", "autoFix=true", "context=live", "logLevel=all",
            "registry=false,true,true", "level=all", "loop=true",
        ])
    }

    @Test(arguments: ["1", "true", "YES", "On"])
    func truthyValues_areAccepted_inAnyCase(value: String) throws {
        let (lines, stderr) = try settings([
            "WEAVEDI_REGISTRY_HEALTH_LOGGING": value, "WEAVEDI_REGISTRY_AUTO_HEALTH": value, "WEAVEDI_REGISTRY_AUTO_FIX": value,
        ])
        #expect(lines.contains("registry=true,true,true"))
        #expect(lines.contains("loop=true"))
        #expect(!stderr.contains("not valid"))
    }

    @Test(arguments: ["0", "false", "No", "OFF"])
    func falsyValues_areAccepted_inAnyCase(value: String) throws {
        let (lines, _) = try settings([
            "WEAVEDI_REGISTRY_HEALTH_LOGGING": value, "WEAVEDI_REGISTRY_AUTO_HEALTH": value, "WEAVEDI_REGISTRY_AUTO_FIX": value,
        ])
        #expect(lines.contains("registry=false,false,false"))
        #expect(lines.contains("loop=false"))
    }

    /// Spaces, tabs and line ends around a value are ignored (a value pasted into a unit's
    /// `Environment=` or an env file with its line end), for the flags, the level and the context.
    @Test func spacesAroundAValue_areIgnored() throws {
        let (on, onErrors) = try settings([
            "WEAVEDI_REGISTRY_HEALTH_LOGGING": " On\n", "WEAVEDI_REGISTRY_AUTO_HEALTH": "\tyes ", "WEAVEDI_REGISTRY_AUTO_FIX": "1\r\n",
            "WEAVEDI_LOG_LEVEL": " errors\t", "WEAVEDI_INJECTED_ENV": "\npreview ",
        ])
        #expect(on.contains("registry=true,true,true"), "\(on)")
        #expect(on.contains("logLevel=errors") && on.contains("context=preview"), "\(on)")
        #expect(onErrors.isEmpty, "\(onErrors)")
        let (off, offErrors) = try settings([
            "WEAVEDI_REGISTRY_HEALTH_LOGGING": "\toff", "WEAVEDI_REGISTRY_AUTO_HEALTH": "NO  ", "WEAVEDI_REGISTRY_AUTO_FIX": " 0 ",
        ])
        #expect(off.contains("registry=false,false,false"), "\(off)")
        #expect(offErrors.isEmpty, "\(offErrors)")
    }

    /// Settings the program made before: an unset variable leaves each as it is.
    @Test func unsetVariables_leaveEarlierSettingsAsTheyAre() throws {
        let result = try ChildProcess.run("weavedi-probe", ["env-preset"])
        #expect(result.status == 0)
        #expect(result.stdout.split(separator: "\n") == [
            "healthLogging=true", "autoHealth=false", "autoFix=false", "context=preview", "logLevel=errors",
            "registry=true,false,false", "level=errors", "loop=false",
        ])
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }

    /// An empty variable counts as unset (`Environment=WEAVEDI_LOG_LEVEL=` in a systemd
    /// drop-in): each earlier setting stays, and nothing is said. Spaces only are no empty value.
    @Test func emptyVariables_countAsUnset() throws {
        let empty = Dictionary(uniqueKeysWithValues: WeaveDIConfiguration.variableNames.map { ($0, "") })
        let result = try ChildProcess.run("weavedi-probe", ["env-preset"], environment: empty)
        #expect(result.status == 0)
        #expect(result.stdout.split(separator: "\n") == [
            "healthLogging=true", "autoHealth=false", "autoFix=false", "context=preview", "logLevel=errors",
            "registry=true,false,false", "level=errors", "loop=false",
        ])
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        let spaces = try ChildProcess.run("weavedi-probe", ["env-preset"], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": " ", "WEAVEDI_INJECTED_ENV": " "])
        #expect(spaces.stderr.contains(#"WEAVEDI_REGISTRY_AUTO_FIX=" " is not valid"#), "\(spaces.stderr)")
        #expect(spaces.stderr.contains(#"WEAVEDI_INJECTED_ENV=" " is not valid"#), "\(spaces.stderr)")
    }

    /// A value that is not valid leaves the earlier setting as it is too, and says so; a valid
    /// one replaces it, `automatic` with the detected context.
    @Test func badValues_leaveEarlierSettingsAsTheyAre_validOnesReplaceThem() throws {
        let bad = try ChildProcess.run("weavedi-probe", ["env-preset"], environment: [
            "WEAVEDI_REGISTRY_HEALTH_LOGGING": "maybe", "WEAVEDI_REGISTRY_AUTO_HEALTH": "maybe",
            "WEAVEDI_REGISTRY_AUTO_FIX": "maybe", "WEAVEDI_INJECTED_ENV": "staging", "WEAVEDI_LOG_LEVEL": "loud",
        ])
        #expect(bad.stdout.split(separator: "\n").prefix(5) == [
            "healthLogging=true", "autoHealth=false", "autoFix=false", "context=preview", "logLevel=errors",
        ])
        #expect(bad.stderr.contains(#"WEAVEDI_REGISTRY_AUTO_FIX="maybe" is not valid (accepted: 1, true, yes, on, 0, false, no or off (any case)); using the current setting (off)"#), "\(bad.stderr)")
        #expect(bad.stderr.contains(#"WEAVEDI_INJECTED_ENV="staging" is not valid (accepted: live, test, preview or automatic); using the current context (preview)"#), "\(bad.stderr)")
        #expect(bad.stderr.contains(#"WEAVEDI_LOG_LEVEL="loud" is not valid (accepted: all, registration, optimization, errors, off); using the current level (errors)"#), "\(bad.stderr)")
        let good = try ChildProcess.run("weavedi-probe", ["env-preset"], environment: [
            "WEAVEDI_REGISTRY_HEALTH_LOGGING": "off", "WEAVEDI_REGISTRY_AUTO_HEALTH": "on",
            "WEAVEDI_REGISTRY_AUTO_FIX": "on", "WEAVEDI_INJECTED_ENV": "automatic", "WEAVEDI_LOG_LEVEL": "all",
        ])
        #expect(good.stdout.split(separator: "\n") == [
            "healthLogging=false", "autoHealth=true", "autoFix=true", "context=live", "logLevel=all",
            "registry=false,true,true", "level=all", "loop=true",
        ])
    }

    @Test(arguments: ["WEAVEDI_REGISTRY_HEALTH_LOGGING", "WEAVEDI_REGISTRY_AUTO_HEALTH", "WEAVEDI_REGISTRY_AUTO_FIX"])
    func badBoolean_keepsTheDefault_andWarnsOnce(variable: String) throws {
        let (lines, stderr) = try settings([variable: "maybe"])
        #expect(lines.contains("registry=false,true,true"))
        let warnings = stderr.split(separator: "\n").filter { $0.contains(variable) }
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains(#"="maybe" is not valid (accepted: 1, true, yes, on, 0, false, no or off"#) == true)
    }

    /// A value with control characters, or of any length, is quoted escaped and cut: it cannot
    /// forge a log line of its own, nor make one of a megabyte.
    @Test func hostileValue_isQuotedEscaped_andCut() throws {
        let value = "on\n[WeaveDI] error: forged line " + String(repeating: "x", count: 10_000)
        let (lines, stderr) = try settings(["WEAVEDI_REGISTRY_AUTO_FIX": value, "WEAVEDI_LOG_LEVEL": "\u{1B}[2J"])
        #expect(lines.contains("registry=false,true,true"))
        let warnings = stderr.split(separator: "\n")
        #expect(!warnings.contains { $0.hasPrefix("[WeaveDI] error: forged") })
        let warning = warnings.first { $0.contains("WEAVEDI_REGISTRY_AUTO_FIX") }
        // Cut as the daemon cuts what it quotes: past 60 scalars, the first 57 and `...` inside
        // the quotes, the length after them.
        #expect(warning?.contains(#"WEAVEDI_REGISTRY_AUTO_FIX="on\n[WeaveDI] error: forged line \#(String(repeating: "x", count: 25))..." (10032 characters) is not valid"#) == true, "\(warning ?? "")")
        #expect(stderr.contains(#"WEAVEDI_LOG_LEVEL="\u001b[2J" is not valid"#))
        #expect(stderr.utf8.count < 2_000)
        // Bidirectional controls, line separators and C1 controls are escaped too; a character
        // of many scalars is cut by its scalars.
        let (_, other) = try settings(["WEAVEDI_INJECTED_ENV": "a\u{202E}b\u{2028}c\u{9B}d", "WEAVEDI_LOG_LEVEL": "e" + String(repeating: "\u{301}", count: 5_000)])
        #expect(other.contains(#"WEAVEDI_INJECTED_ENV="a\u202eb\u2028c\u009bd" is not valid"#), "\(other)")
        #expect(other.contains(#"WEAVEDI_LOG_LEVEL="e\#(String(repeating: "\u{301}", count: 56))..." (5001 characters) is not valid"#), "\(other)")
        #expect(other.utf8.count < 2_000)
    }

    @Test func logLevel_andContext_fromTheEnvironment() throws {
        let (lines, _) = try settings(["WEAVEDI_LOG_LEVEL": "Errors", "WEAVEDI_INJECTED_ENV": "preview"])
        #expect(lines.contains("logLevel=errors") && lines.contains("level=errors") && lines.contains("context=preview"))
    }

    @Test func badLogLevel_keepsAll_andWarns() throws {
        let (lines, stderr) = try settings(["WEAVEDI_LOG_LEVEL": "loud"])
        #expect(lines.contains("logLevel=all"))
        #expect(stderr.contains(#"WEAVEDI_LOG_LEVEL="loud" is not valid (accepted: all, registration, optimization, errors, off)"#))
    }

    @Test func eachLogLevel_emitsExactlyItsCategories_andBuildsNothingItFilters() throws {
        let result = try ChildProcess.run("weavedi-probe", ["levels"])
        #expect(result.stdout.split(separator: "\n") == [
            "all: registration,overwrite,optimization,health,diagnostic,error built=6 read=all",
            "registration: registration,overwrite,error built=3 read=registration",
            "optimization: optimization,error built=2 read=optimization",
            "errors: overwrite,error built=2 read=errors",
            "off:  built=0 read=off",
        ])
    }

    @Test(arguments: [("clean", 0), ("duplicates", 1), ("scope-mismatch", 1)])
    func diagnoseComponentsCommand_exitsOneOnIssues(scenario: String, status: Int32) throws {
        let result = try ChildProcess.run("weavedi-probe", ["diagnose-components", "--scenario", scenario])
        #expect(result.status == status)
        #expect(result.stdout.hasPrefix(#"{"issues":["#))
    }

    @Test(arguments: [("clean", 0, "[]"), ("cycle", 1, #"[["Mailer","Queue","Store"]]"#)])
    func checkCyclesCommand_exitsOneOnCycles(scenario: String, status: Int32, cycles: String) throws {
        let result = try ChildProcess.run("weavedi-probe", ["check-cycles", "--scenario", scenario])
        #expect(result.status == status)
        #expect(result.stdout.hasSuffix(#""cycles":\#(cycles),"notBuilt":[]}"# + "\n"))
    }
}

// MARK: Dependencies asked for outside the factory's resolver

/// (`@unchecked`: property wrappers are `var`s; nothing sets them after `init`.)
final class EdgeRoot: @unchecked Sendable {
    @Factory var made: EdgeMade
    @Injected var leaf: EdgeLeaf?

    /// Made by its factory, which reads both properties (as an initializer that used them would).
    static func built() -> EdgeRoot {
        let root = EdgeRoot()
        precondition(root.leaf != nil && root.made.number == 1)
        return root
    }
}
final class EdgeMade: Sendable { let number = 1 }
final class EdgeLeaf: Sendable {}
final class EdgeByKey: Sendable {
    init() { _ = InjectedValues.current[EdgeKey.self] }
}
final class EdgeKeyTarget: Sendable {}
final class EdgeCircleA: Sendable {}
final class EdgeCircleB: Sendable {}

/// A key whose default is built by the container of `EdgeKey.container`.
struct EdgeKey: InjectedKey {
    static let container = WeaveDI.Container()
    static var liveValue: EdgeKeyTarget? { container.resolve(EdgeKeyTarget.self) }
}

@Suite struct DependencyEdgeTests {
    func dependencies(of type: String, in container: WeaveDI.Container) -> [String]? {
        container.registrations.first { $0.type == type }?.dependencies
    }

    @Test func injectedAndFactoryReads_inAFactory_areEdgesOfItsRegistration() {
        WeaveDI.Container.live.register(EdgeMade.self, scope: .transient) { EdgeMade() }
        WeaveDI.Container.live.register(EdgeLeaf.self) { EdgeLeaf() }
        WeaveDI.Container.live.register(EdgeRoot.self, scope: .transient) { EdgeRoot.built() }
        #expect(WeaveDI.Container.live.resolve(EdgeRoot.self) != nil)
        #expect(dependencies(of: "EdgeRoot", in: .live) == ["EdgeLeaf", "EdgeMade"])
    }

    @Test func aKeyDefaultBuiltFromTheContainer_isAnEdgeOfTheFactoryThatReadIt() {
        EdgeKey.container.register(EdgeKeyTarget.self) { EdgeKeyTarget() }
        EdgeKey.container.register(EdgeByKey.self) { EdgeByKey() }
        #expect(EdgeKey.container.resolve(EdgeByKey.self) != nil)
        #expect(dependencies(of: "EdgeByKey", in: EdgeKey.container) == ["EdgeKeyTarget"])
    }

    @Test func aCycleThroughCallsOnTheContainer_isFoundByCheckCycles() async {
        // Neither factory asks its resolver: each calls the container itself. At run time the
        // inner call fails with the cycle (logged, nil); the graph still has both edges.
        let container = WeaveDI.Container()
        container.register(EdgeCircleA.self, scope: .transient) { _ = container.resolve(EdgeCircleB.self); return EdgeCircleA() }
        container.register(EdgeCircleB.self) { _ = container.resolve(EdgeCircleA.self); return EdgeCircleB() }
        _ = await container.validate()
        #expect(container.checkCycles().cycles == [["EdgeCircleA", "EdgeCircleB"]])
    }

    @Test func aSingletonBuiltBeforeTheRead_isNotAnEdge_butOneBuiltByItIs() {
        // What is already built is read without a build: only builds are seen (documented).
        let container = WeaveDI.Container()
        container.register(NodeA.self) { NodeA() }
        container.register(NodeB.self) { NodeB() }
        container.register(NodeC.self, scope: .transient) {
            _ = container.resolve(NodeA.self)
            _ = container.resolve(NodeB.self)
            return NodeC()
        }
        _ = container.resolve(NodeA.self)
        _ = container.resolve(NodeC.self)
        #expect(dependencies(of: "NodeC", in: container) == ["NodeB"])
    }
}

// Waits for an optimization line: among `InjectedTests`, which run one at a time, because one of
// them sets the process's log level to `errors` for a while, which would keep the line out.
extension InjectedTests {
    /// A registration outside any bootstrap is said to wait, and is warmed by the next bootstrap.
    @Test func enableOptimization_registrationOutsideBootstrap_isWarmedByTheNextOne() async {
        final class Loose: Sendable {}
        let log = LogCapture()
        let container = WeaveDI.Container()
        await log.during {
            await UnifiedRegistry(clock: ManualHealthClock()).enableOptimization(container: container)
            container.register(Loose.self) { Loose() }
        }
        #expect(container.registrations.first?.isBuilt == false)
        #expect(log.messages.contains { $0.contains("Loose registered outside bootstrap after enableOptimization()") })
        await container.bootstrap { _ in }
        #expect(container.registrations.first?.isBuilt == true)
    }
}
