import Testing
@testable import WeaveDI

@Suite struct ScopeTests {
    func container(_ ledger: Ledger) -> WeaveDI.Container {
        let container = WeaveDI.Container()
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        container.register(CallScope.self, scope: .request) { CallScope() }
        container.register(Tracked.self, scope: .session) { Tracked("tracked", ledger) }
        container.register(TrackedPair.self, scope: .session) { r in
            TrackedPair(first: try r.require(Tracked.self), ledger)
        }
        return container
    }

    @Test func session_oneInstancePerSession_differentAcrossSessions() throws {
        let container = container(Ledger())
        let one = container.openSession(id: "one"), two = container.openSession(id: "two")
        let a = try one.require(SessionCache.self)
        #expect(try one.require(SessionCache.self) === a)
        #expect(try two.require(SessionCache.self) !== a)
        #expect(one.instanceCount == 1)
    }

    @Test func request_oneInstancePerRequest_andSessionServicesFromItsSession() throws {
        let container = container(Ledger())
        let session = container.openSession(id: "s")
        let first = session.openRequest(id: "r1"), second = session.openRequest(id: "r2")
        let ctx = try first.require(CallScope.self)
        #expect(try first.require(CallScope.self) === ctx)
        #expect(try second.require(CallScope.self) !== ctx)
        #expect(try first.require(SessionCache.self) === session.require(SessionCache.self))
    }

    @Test func scopedService_withNoActiveScope_throwsNoActiveScope() {
        let container = container(Ledger())
        #expect(container.resolve(SessionCache.self) == nil)
        #expect {
            try container.require(SessionCache.self)
        } throws: { error in
            guard case let .noActiveScope(type, scope, _) = error as? ResolutionError else { return false }
            return type == "SessionCache" && scope == .session
        }
        let session = container.openSession(id: "s")
        #expect {
            try session.require(CallScope.self)
        } throws: { error in
            guard case let .noActiveScope(type, scope, _) = error as? ResolutionError else { return false }
            return type == "CallScope" && scope == .request
        }
    }

    @Test func withCurrent_makesTheSessionVisibleToTheContainer() async throws {
        let container = container(Ledger())
        let session = container.openSession(id: "s")
        let store = try session.require(SessionCache.self)
        let seen = try await session.withCurrent {
            try await Task { try container.require(SessionCache.self) }.value
        }
        #expect(seen === store)
        let request = session.openRequest(id: "r")
        let ctx = try request.withCurrent { try container.require(CallScope.self) }
        #expect(ctx === (try request.require(CallScope.self)))
    }

    @Test func close_disposesEachInstanceOnce_inReverseCreationOrder() async throws {
        let ledger = Ledger()
        let container = container(ledger)
        let session = container.openSession(id: "s")
        _ = try session.require(TrackedPair.self)  // builds "tracked" first, then "pair"
        #expect(ledger.buildCount == 2)
        await session.close()
        await session.close()
        #expect(ledger.disposals == ["pair", "tracked"])
        #expect(container.openSessions.isEmpty)
    }

    @Test func closedScope_throwsOnResolve() async throws {
        let container = container(Ledger())
        let session = container.openSession(id: "gone")
        let request = session.openRequest(id: "r")
        await request.close()
        #expect {
            try request.require(CallScope.self)
        } throws: { error in
            guard case let .scopeClosed(_, scope, id, _, _) = error as? ResolutionError else { return false }
            return scope == .request && id == "r"
        }
        await session.close()
        #expect {
            try session.require(SessionCache.self)
        } throws: { error in
            guard case let .scopeClosed(type, scope, id, _, _) = error as? ResolutionError else { return false }
            return type == "SessionCache" && scope == .session && id == "gone"
        }
        #expect(session.openRequest(id: "late").isClosed)
    }

    /// A closed request made current resolves nothing, its session's services included (as
    /// `request.require` does), while its session stays usable.
    @Test func closedRequest_madeCurrent_throwsScopeClosed_forSessionServicesToo() async throws {
        let container = container(Ledger())
        let session = container.openSession(id: "open")
        let request = session.openRequest(id: "r")
        await request.close()
        for type in [SessionCache.self, CallScope.self] as [Any.Type] {
            #expect {
                try request.withCurrent {
                    if type == SessionCache.self { _ = try container.require(SessionCache.self) } else { _ = try container.require(CallScope.self) }
                }
            } throws: { error in
                guard case let .scopeClosed(_, scope, id, _, _) = error as? ResolutionError else { return false }
                return scope == .request && id == "r"
            }
            #expect(throws: ResolutionError.self) {
                if type == SessionCache.self { _ = try request.require(SessionCache.self) } else { _ = try request.require(CallScope.self) }
            }
        }
        let cache = try session.require(SessionCache.self)
        #expect(try session.withCurrent { try container.require(SessionCache.self) } === cache)
    }

    @Test func sessionClose_closesItsRequests() async throws {
        let ledger = Ledger()
        let container = WeaveDI.Container()
        container.register(Tracked.self, scope: .request) { Tracked("req", ledger) }
        let session = container.openSession(id: "s")
        let request = session.openRequest(id: "r")
        _ = try request.require(Tracked.self)
        await session.close()
        #expect(request.isClosed)
        #expect(ledger.disposals == ["req"])
    }

    @Test func scopedFactory_getsItsScopeAsResolver() throws {
        let container = WeaveDI.Container()
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        container.register(Holder<SessionCache>.self, scope: .transient) { r in Holder(try r.require(SessionCache.self)) }
        let session = container.openSession(id: "s")
        #expect(try session.require(Holder<SessionCache>.self).value === session.require(SessionCache.self))
    }

    @Test func singletonNeedingSessionService_isAScopeMismatch_directlyAndThroughATransient() {
        let container = WeaveDI.Container()
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        container.register(Holder<SessionCache>.self) { r in Holder(try r.require(SessionCache.self)) }
        container.register(Generator.self, scope: .transient) { r in
            _ = try r.require(SessionCache.self)
            return Generator()
        }
        container.register(Holder<Generator>.self) { r in Holder(try r.require(Generator.self)) }
        let session = container.openSession(id: "s")
        for attempt in [
            { _ = try session.require(Holder<SessionCache>.self) },
            { _ = try session.require(Holder<Generator>.self) },
        ] as [() throws -> Void] {
            #expect {
                try attempt()
            } throws: { error in
                guard case let .scopeMismatch(outer, outerScope, inner, innerScope, _) = error as? ResolutionError
                else { return false }
                return outer.hasPrefix("Holder<") && outerScope == .singleton && inner == "SessionCache"
                    && innerScope == .session
            }
        }
        // The transient on its own, in a session, is fine.
        #expect(session.resolve(Generator.self) != nil)
    }

    @Test func sessionNeedingRequestService_isAScopeMismatch() {
        let container = WeaveDI.Container()
        container.register(CallScope.self, scope: .request) { CallScope() }
        container.register(SessionCache.self, scope: .session) { r in
            _ = try r.require(CallScope.self)
            return SessionCache()
        }
        let request = container.openSession(id: "s").openRequest(id: "r")
        #expect {
            try request.require(SessionCache.self)
        } throws: { error in
            guard case let .scopeMismatch(outer, outerScope, inner, innerScope, _) = error as? ResolutionError
            else { return false }
            return outer == "SessionCache" && outerScope == .session && inner == "CallScope"
                && innerScope == .request
                && (error as! ResolutionError).description.contains("SessionCache (session) needs CallScope (request)")
        }
    }

    /// `makeFresh` (what `@Factory` reads) builds whatever the scope, but not into a longer-lived
    /// service: a singleton that takes a fresh request-scoped instance, directly or through a
    /// transient, would keep what the request built.
    @Test func makeFresh_ofAShorterLivedService_insideALongerLivedBuild_isAScopeMismatch() throws {
        let container = WeaveDI.Container()
        container.register(CallScope.self, scope: .request) { CallScope() }
        container.register(Holder<CallScope>.self) { Holder(try container.makeFresh(CallScope.self)) }
        container.register(Generator.self, scope: .transient) { _ = try container.makeFresh(CallScope.self); return Generator() }
        container.register(Holder<Generator>.self) { r in Holder(try r.require(Generator.self)) }
        container.register(SessionCache.self, scope: .session) { _ = try container.makeFresh(CallScope.self); return SessionCache() }
        let request = container.openSession(id: "s").openRequest(id: "r")
        for (attempt, outer, outerScope) in [
            ({ _ = try request.require(Holder<CallScope>.self) }, "Holder<CallScope>", WeaveDI.Scope.singleton),
            ({ _ = try request.require(Holder<Generator>.self) }, "Holder<Generator>", .singleton),
            ({ _ = try request.require(SessionCache.self) }, "SessionCache", .session),
        ] as [(() throws -> Void, String, WeaveDI.Scope)] {
            #expect {
                try attempt()
            } throws: { error in
                guard case let .scopeMismatch(o, os, inner, innerScope, _) = error as? ResolutionError else { return false }
                return o == outer && os == outerScope && inner == "CallScope" && innerScope == .request
            }
        }
        // On its own, or inside a build that lives no longer, a fresh one is fine.
        try request.withCurrent {
            #expect(try container.makeFresh(CallScope.self) !== container.makeFresh(CallScope.self))
            _ = try container.makeFresh(Generator.self)
        }
    }

    /// A transient resolves its dependencies in its own container: a session or request of
    /// another container, current or building, is not its resolver (as for `makeFresh`).
    @Test func transient_resolvesFromItsOwnContainer_notFromAnotherContainersScope() throws {
        let other = WeaveDI.Container(), container = WeaveDI.Container()
        other.register(Named.self) { Named("other") }
        container.register(Named.self) { Named("container") }
        container.register(Holder<Named>.self, scope: .transient) { r in Holder(try r.require(Named.self)) }
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        container.register(Holder<SessionCache>.self, scope: .transient) { r in Holder(try r.require(SessionCache.self)) }
        let session = other.openSession(id: "other's")
        #expect(try session.withCurrent { try container.require(Holder<Named>.self) }.value.name == "container")
        #expect(session.withCurrent { container.resolve(Holder<Named>.self) }?.value.name == "container")
        #expect(try session.openRequest(id: "r").withCurrent { try container.require(Holder<Named>.self) }.value.name == "container")
        #expect(try session.withCurrent { try container.makeFresh(Holder<Named>.self) }.value.name == "container")
        // Built inside the build of the other container's session-scoped service.
        other.register(Holder<Holder<Named>>.self, scope: .session) { _ in Holder(try container.require(Holder<Named>.self)) }
        #expect(try session.require(Holder<Holder<Named>>.self).value.value.name == "container")
        // The other container's session does not stand for one of this container...
        #expect(throws: ResolutionError.self) { try session.withCurrent { try container.require(Holder<SessionCache>.self) } }
        // ...while its own still does.
        let own = container.openSession(id: "own")
        let cache = try own.require(SessionCache.self)
        #expect(try own.withCurrent { try container.require(Holder<SessionCache>.self) }.value === cache)
        #expect(try own.require(Holder<SessionCache>.self).value === cache)
    }

    @Test func releaseAll_closesOpenSessions() async throws {
        let ledger = Ledger()
        let container = container(ledger)
        let session = container.openSession(id: "s")
        _ = try session.require(Tracked.self)
        await container.releaseAll()
        #expect(session.isClosed)
        #expect(ledger.disposals == ["tracked"])
    }
}

final class Named: Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

extension ScopeTests {
    /// `resolve` by type with another container's session current: this container's session-scoped
    /// type finds no active session here, and the logged line says whose session was current.
    @Test func resolve_inAnotherContainersSession_saysWhoseSessionWasCurrent() async {
        let container = container(Ledger())
        let other = WeaveDI.Container()
        other.register(SessionCache.self, scope: .session) { SessionCache() }
        let session = other.openSession(id: "other-session")
        let log = LogCapture()
        let read = log.during { session.withCurrent { container.resolve(SessionCache.self) } }
        #expect(read == nil)
        let line = log.messages.first { $0.hasPrefix("resolve(SessionCache) returned nil: ") } ?? ""
        #expect(line.contains(
            "no active session for SessionCache in this container: the current session 'other-session' belongs to "
                + "another container"), "\(log.messages)")
        #expect(line.contains("open the session on this container"), "\(line)")
        #expect(line.contains("session.require(SessionCache.self)"), "\(line)")
        #expect(!line.contains("inside session.withCurrent"), "\(line)")
        // Its own session current: found, nothing logged.
        let own = container.openSession(id: "own")
        let found = LogCapture()
        #expect(found.during { own.withCurrent { container.resolve(SessionCache.self) } } != nil)
        #expect(found.messages.isEmpty, "\(found.messages)")
        await session.close()
        await own.close()
    }
}
