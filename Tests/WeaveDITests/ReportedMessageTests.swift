import Testing
@testable import WeaveDI

private final class NotRegisteredThing: Sendable {}
private final class NeedsNotRegisteredThing: Sendable {}

@Suite struct ReportedMessageTests {
    /// `require`, `makeFresh` (what `@Factory` calls) and a factory's dependency read no key: the
    /// fix they name is a registration, never a key that none of them would read.
    @Test func notRegistered_namesTheRegistration_notAKeyNobodyReads() throws {
        let container = WeaveDI.Container()
        container.register(NeedsNotRegisteredThing.self) { r in
            _ = try r.require(NotRegisteredThing.self)
            return NeedsNotRegisteredThing()
        }
        var messages: [String] = []
        do { _ = try container.require(NotRegisteredThing.self) } catch { messages.append(error.description) }
        do { _ = try container.makeFresh(NotRegisteredThing.self) } catch { messages.append(error.description) }
        do { _ = try container.require(NeedsNotRegisteredThing.self) } catch { messages.append(error.description) }
        #expect(messages.count == 3)
        for message in messages {
            #expect(message.contains("no registration for NotRegisteredThing"), "\(message)")
            #expect(message.hasSuffix("register it in a module with container.register(NotRegisteredThing.self) { ... }"), "\(message)")
            #expect(!message.contains("InjectedKey"), "\(message)")
        }
    }
}

private final class ProbedConnection: Sendable {}
private final class ProbedRequestState: Sendable {}
private final class ProbedWorker: Sendable {}
private final class ProbedClock: Sendable {}
private final class ProbedFlaky: Sendable {}
private struct ProbedFailure: Error {}

@Suite struct GraphCheckBuildTests {
    /// The `container.graph` check builds every registration on its first round only: later
    /// rounds run no factory of a registration that built (a session's connection is not opened
    /// and closed every round, no transient is built and left), until a registration changes.
    @Test func graphCheck_buildsEachRegistrationOnce_untilARegistrationChanges() async {
        let calls = Locked<[String: Int]>([:])
        @Sendable func count(_ name: String) { calls.withLock { $0[name, default: 0] += 1 } }
        let container = WeaveDI.Container()
        container.register(ProbedConnection.self, scope: .session) { count("session"); return ProbedConnection() }
        container.register(ProbedRequestState.self, scope: .request) { count("request"); return ProbedRequestState() }
        container.register(ProbedWorker.self, scope: .transient) { count("transient"); return ProbedWorker() }
        container.register(ProbedClock.self) { count("singleton"); return ProbedClock() }
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        registry.registerContainerChecks(for: container)
        for _ in 0..<4 {
            let graph = await registry.runChecks().checks.first { $0.name == "container.graph" }!
            #expect(graph.status == .healthy)
            #expect(graph.message == "all 4 registrations build")
        }
        #expect(calls.withLock { $0 } == ["session": 1, "request": 1, "transient": 1, "singleton": 1])
        // A registration added: everything is built again, once.
        container.register(ProbedFlaky.self, scope: .transient) { count("flaky"); return ProbedFlaky() }
        for _ in 0..<3 { await registry.runChecks() }
        #expect(calls.withLock { $0 } == ["session": 2, "request": 2, "transient": 2, "singleton": 1, "flaky": 1])
    }

    /// A registration that failed is built again each round (and only it), so the check sees it
    /// recover without a registration changing.
    @Test func graphCheck_retriesOnlyWhatFailed() async {
        let calls = Locked<[String: Int]>([:])
        let failing = Locked(true)
        let container = WeaveDI.Container()
        container.register(ProbedConnection.self, scope: .session) {
            calls.withLock { $0["session", default: 0] += 1 }
            return ProbedConnection()
        }
        container.register(ProbedFlaky.self, scope: .transient) { () throws -> ProbedFlaky in
            calls.withLock { $0["flaky", default: 0] += 1 }
            if failing.withLock({ $0 }) { throw ProbedFailure() }
            return ProbedFlaky()
        }
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        registry.registerContainerChecks(for: container)
        for _ in 0..<2 {
            let graph = await registry.runChecks().checks.first { $0.name == "container.graph" }!
            #expect(graph.status == .unhealthy)
            #expect(graph.message.contains("ProbedFlaky"))
        }
        failing.withLock { $0 = false }
        let graph = await registry.runChecks().checks.first { $0.name == "container.graph" }!
        #expect(graph.status == .healthy)
        #expect(graph.message == "all 2 registrations build")
        await registry.runChecks()
        #expect(calls.withLock { $0 } == ["session": 1, "flaky": 3])
    }
}

private final class FreshCart: Sendable {}
private final class FreshCall: Sendable {}

@Suite struct MakeFreshScopeTests {
    /// `makeFresh` (what `@Factory` reads) of a session- or request-scoped type where no such
    /// scope is active throws `noActiveScope`, as `resolve` does, and builds nothing: before,
    /// it built an instance no session owned (a `Disposable` one never disposed), silently.
    @Test func makeFresh_ofAScopedType_outsideItsScope_isNoActiveScope_likeResolve() throws {
        let builds = Locked(0)
        let container = WeaveDI.Container()
        container.register(FreshCart.self, scope: .session) { builds.withLock { $0 += 1 }; return FreshCart() }
        container.register(FreshCall.self, scope: .request) { builds.withLock { $0 += 1 }; return FreshCall() }
        #expect(throws: ResolutionError.self) { try container.require(FreshCart.self) }
        #expect {
            try container.makeFresh(FreshCart.self)
        } throws: { error in
            guard case let .noActiveScope(type, scope, _) = error as? ResolutionError else { return false }
            return type == "FreshCart" && scope == .session
        }
        let session = container.openSession(id: "s")
        #expect {
            try session.withCurrent { try container.makeFresh(FreshCall.self) }
        } throws: { error in
            guard case let .noActiveScope(type, scope, _) = error as? ResolutionError else { return false }
            return type == "FreshCall" && scope == .request
        }
        #expect(builds.withLock { $0 } == 0)
        // Where the scope is active, a fresh one on every call.
        let (a, b) = try session.withCurrent { (try container.makeFresh(FreshCart.self), try container.makeFresh(FreshCart.self)) }
        #expect(a !== b)
        try session.openRequest(id: "r").withCurrent {
            _ = try container.makeFresh(FreshCart.self)
            _ = try container.makeFresh(FreshCall.self)
        }
        #expect(builds.withLock { $0 } == 4)
    }
}

@Suite struct ReleaseAllRebuildTests {
    /// A singleton a dispose() resolves during releaseAll is built again after its disposal, and
    /// stays built: releaseAll says so, naming it, rather than leaving it built in silence.
    @Test func singletonBuiltByADisposeDuringReleaseAll_isLoggedAsStayingBuilt() throws {
        let result = try ChildProcess.run("weavedi-probe", ["release-rebuild"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("ledger disposed"))
        #expect(result.stdout.contains("ledger built after releaseAll: true"))
        #expect(result.stderr.contains(
            "ReleasedLedger was built by a dispose() during releaseAll(), after the singletons were released: "
                + "it stays built and this releaseAll() does not dispose it"), "\(result.stderr)")
        // So is one that a session's instance resolves when releaseAll closes the session.
        #expect(result.stderr.contains("ReleasedClock was built by a dispose() during releaseAll()"), "\(result.stderr)")
        // ReleasedPool was not built again: only what a dispose() built is named.
        #expect(!result.stderr.contains("ReleasedPool was built by"))
    }

    /// One that a dispose() resolves in a detached task is built again too, and stays built, but
    /// is not logged: the task-local that marks the release's own disposals does not follow a
    /// detached task (`ReleaseRaceTests` shows the next releaseAll disposes it). What the same
    /// dispose() then resolves in its own task is logged.
    @Test func singletonBuiltByADisposeInADetachedTask_staysBuilt_unlogged() throws {
        let result = try ChildProcess.run("weavedi-probe", ["release-rebuild-detached"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("DetachedLedger built after releaseAll: true"), "\(result.stdout)")
        #expect(result.stdout.contains("ReleasedClock built after releaseAll: true"), "\(result.stdout)")
        #expect(result.stderr.contains("ReleasedClock was built by a dispose() during releaseAll()"), "\(result.stderr)")
        #expect(!result.stderr.contains("DetachedLedger was built"), "\(result.stderr)")
    }
}

/// A session-scoped service that holds what its factory resolved.
private final class FreshSessionHolder: Sendable {
    let cache: SessionCache
    init(cache: SessionCache) { self.cache = cache }
}

@Suite struct MakeFreshInRequestTests {
    /// `makeFresh` (what `@Factory` reads) of a session-scoped type inside a request of an open
    /// session: a fresh instance, not the session's, built as the session's own would be: its
    /// session-scoped dependencies are the session's, a request-scoped one is the session → request
    /// scope mismatch, and a closed request resolves nothing, as for `require`.
    @Test func makeFresh_ofASessionScopedType_inARequest_buildsAsTheSessionWould() async throws {
        let container = WeaveDI.Container()
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        container.register(CallScope.self, scope: .request) { CallScope() }
        container.register(FreshSessionHolder.self, scope: .session) { r in FreshSessionHolder(cache: try r.require(SessionCache.self)) }
        container.register(Holder<CallScope>.self, scope: .session) { r in Holder(try r.require(CallScope.self)) }
        let ledger = Ledger()
        container.register(Tracked.self, scope: .session) { Tracked("fresh", ledger) }
        let session = container.openSession(id: "s")
        let request = session.openRequest(id: "r")
        let kept = try session.require(FreshSessionHolder.self)
        let (a, b) = try request.withCurrent {
            (try container.makeFresh(FreshSessionHolder.self), try container.makeFresh(FreshSessionHolder.self))
        }
        #expect(a !== b && a !== kept && b !== kept)
        #expect(try session.require(FreshSessionHolder.self) === kept)
        #expect(a.cache === kept.cache && b.cache === kept.cache)
        #expect {
            try request.withCurrent { try container.makeFresh(Holder<CallScope>.self) }
        } throws: { error in
            guard case let .scopeMismatch(outer, outerScope, inner, innerScope, _) = error as? ResolutionError else { return false }
            return outer == "Holder<CallScope>" && outerScope == .session && inner == "CallScope" && innerScope == .request
        }
        // A fresh instance is its reader's: neither the request nor the session disposes it.
        _ = try request.withCurrent { try container.makeFresh(Tracked.self) }
        await request.close()
        #expect {
            try request.withCurrent { try container.makeFresh(FreshSessionHolder.self) }
        } throws: { error in
            guard case let .scopeClosed(type, scope, id, _, _) = error as? ResolutionError else { return false }
            return type == "FreshSessionHolder" && scope == .request && id == "r"
        }
        await session.close()
        #expect(ledger.buildCount == 1)
        #expect(ledger.disposals.isEmpty)
    }
}
