import Testing
@testable import WeaveDI

/// `validate()` reads a singleton built before it ran instead of building it: what that build
/// found is reported all the same (a dependency gone since, one registered since in a
/// shorter-lived scope, a key's default it kept).
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
}
