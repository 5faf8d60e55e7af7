import Testing
@testable import WeaveDI

/// `validate()` reads a singleton built before it ran instead of building it: what that build
/// found is reported all the same (a required dependency gone since, one registered since in a
/// shorter-lived scope, a key's default it kept); what its factory only resolved optionally is not.
@Suite struct ValidationBuiltBeforeTests {
    /// What a build tolerated (NodeC's optional dependency, never registered) is no failure.
    @Test func aSingletonBuiltBefore_whoseDependencyWasUnregisteredSince_isAFailure() async throws {
        let container = WeaveDI.Container()
        container.register(NodeA.self) { r in _ = try r.require(NodeB.self); return NodeA() }
        container.register(NodeB.self) { NodeB() }
        container.register(NodeC.self) { r in _ = r.resolve(Generator.self); return NodeC() }
        _ = try container.require(NodeA.self)
        _ = try container.require(NodeC.self)
        #expect(container.unregister(NodeB.self))
        let report = await container.validate()
        #expect(!report.isValid)
        #expect(report.built == ["NodeC"])
        #expect(report.failures.map(\.type) == ["NodeA"])
        #expect(report.failures.first?.reason == "NodeA was built with NodeB, which is no longer registered: building "
            + "NodeA again (after releaseAll() or evict) would not find it")
        #expect(report.failures.first?.isScopeMismatch == false)
    }

    @Test func aSingletonBuiltBefore_whoseDependencyIsSessionScopedSince_isAScopeMismatch() async throws {
        let container = WeaveDI.Container()
        container.register(NodeA.self) { r in _ = try r.require(SessionCache.self); return NodeA() }
        container.register(SessionCache.self) { SessionCache() }
        _ = try container.require(NodeA.self)
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        let report = await container.validate()
        #expect(report.built == ["SessionCache"])
        let failure = try #require(report.failures.first)
        #expect(report.failures.count == 1)
        #expect(failure.type == "NodeA" && failure.scope == .singleton && failure.isScopeMismatch)
        #expect(failure.reason.hasPrefix("NodeA was built with SessionCache (singleton), registered since as session: "
            + "building NodeA again would fail (scope mismatch: NodeA (singleton) needs SessionCache (session)"), "\(failure.reason)")
    }

    /// A dependency the factory got from an optional `resolve` (and so copes without) that is
    /// unregistered since, or registered since as session-scoped, is no failure: a build now
    /// would succeed without it. Built past the builds that record edges, too (a `releaseAll()`
    /// keeps the count), so that the check does not lean on the recorded edges.
    @Test(arguments: [false, true])
    func aSingletonBuiltBefore_whoseOptionalDependencyChangedSince_isBuilt(madeSessionScoped: Bool) async throws {
        let container = WeaveDI.Container()
        container.register(NodeA.self) { r in _ = r.resolve(NodeB.self); return NodeA() }
        container.register(NodeB.self) { NodeB() }
        for _ in 0...EdgeRecorder.recordedBuilds {
            _ = try container.require(NodeA.self)
            await container.releaseAll()
        }
        _ = try container.require(NodeA.self)
        if madeSessionScoped {
            container.register(NodeB.self, scope: .session) { NodeB() }
        } else {
            #expect(container.unregister(NodeB.self))
        }
        let report = await container.validate()
        #expect(report.isValid)
        #expect(report.failures.isEmpty, "\(report.failures.map(\.reason))")
        #expect(report.built.contains("NodeA"))
    }
}

/// The key reads `Container.live`: these belong to the serialized `InjectedTests`.
extension InjectedTests {
    /// A singleton resolved inside a session before `validate()`, whose initializer read the key
    /// of a session-scoped type: a scope mismatch that the read turned into the key's default,
    /// which the instance keeps.
    @Test func validate_reportsAKeptDefault_ofASingletonBuiltBefore_inASession() async throws {
        let live = WeaveDI.Container.live
        live.register(FallbackContext.self, scope: .session) { FallbackContext("session") }
        live.register(SingletonReadsFallbackKey.self) { SingletonReadsFallbackKey() }
        let session = live.openSession(id: "before-validate")
        #expect(try session.require(SingletonReadsFallbackKey.self).context.origin == "default")
        await session.close()
        let report = await live.validate()
        #expect(!report.isValid)
        #expect(report.built == ["FallbackContext"])
        let failure = try #require(report.failures.first)
        #expect(report.failures.count == 1)
        #expect(failure.type == "SingletonReadsFallbackKey" && failure.isScopeMismatch)
        #expect(failure.reason.hasPrefix(
            "FallbackContextKey was read while building SingletonReadsFallbackKey and gave the key's default, which "
                + "SingletonReadsFallbackKey keeps: the registration of FallbackContext failed (scope mismatch: "
                + "SingletonReadsFallbackKey (singleton) needs FallbackContext (session)"), "\(failure.reason)")
    }

    /// A key's default kept by a transient that a singleton's factory requires is the
    /// transient's, as `validate()` tells it when it builds the graph; the singleton's gated
    /// build records it not as its own read: a later validation, which reads the singleton
    /// built, does not blame it for a read its factory did not make.
    @Test func aDefaultKeptByATransientTheSingletonNeeds_isTheTransients_notTheSingletons() async throws {
        let live = WeaveDI.Container.live
        live.register(FallbackContext.self, scope: .request) { FallbackContext("request") }
        live.register(SingletonReadsFallbackKey.self, scope: .transient) { SingletonReadsFallbackKey() }
        live.register(NeedsSingletonReadingKey.self) { r in NeedsSingletonReadingKey(inner: try r.require(SingletonReadsFallbackKey.self)) }
        let first = await live.validate()
        let second = await live.validate()
        #expect(first.failures.map(\.type) == ["SingletonReadsFallbackKey"], "\(first.failures.map(\.reason))")
        #expect(!second.failures.contains { $0.type == "NeedsSingletonReadingKey" }, "\(second.failures.map(\.reason))")
        #expect(second.built.contains("NeedsSingletonReadingKey"))
    }

    /// A `makeFresh` build of a singleton (no gate: the instance is its caller's) that keeps a
    /// key's default says nothing to the registration's entry, built or not: the cached
    /// instance, built while the key's type could be built, is reported as built.
    @Test func aMakeFreshBuildThatKeepsAKeysDefault_leavesTheSingletonsEntryAlone() async throws {
        let live = WeaveDI.Container.live
        let slot = TypeSlots.shared.slot(for: SingletonReadsFallbackKey.self)
        live.register(FallbackContext.self, scope: .request) { FallbackContext("request") }
        live.register(SingletonReadsFallbackKey.self) { SingletonReadsFallbackKey() }
        // Not built yet.
        #expect(try live.makeFresh(SingletonReadsFallbackKey.self).context.origin == "default")
        #expect(live.entry(at: slot)?.keptDefaults.isEmpty == true)
        // Built, while the key's type is a singleton.
        live.register(FallbackContext.self) { FallbackContext("singleton") }
        #expect(try live.require(SingletonReadsFallbackKey.self).context.origin == "singleton")
        live.register(FallbackContext.self, scope: .request) { FallbackContext("request") }
        #expect(try live.makeFresh(SingletonReadsFallbackKey.self).context.origin == "default")
        let entry = try #require(live.entry(at: slot))
        #expect(entry.hasInstance && entry.keptDefaults.isEmpty)
        let report = await live.validate()
        #expect(report.isValid, "\(report.failures.map(\.reason))")
        #expect(report.built.contains("SingletonReadsFallbackKey"))
    }
}
