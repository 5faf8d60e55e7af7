import Testing
@testable import WeaveDI

/// `validate()` and the `container.graph` check report a build that read a key whose
/// registration failed, and so kept the key's default. The key reads `Container.live`, so these
/// belong to the serialized `InjectedTests`.

final class FallbackContext: Sendable {
    let origin: String
    init(_ origin: String) { self.origin = origin }
}
struct FallbackContextKey: InjectedKey { static var liveValue: FallbackContext { FallbackContext("default") } }
extension InjectedKeys {
    var fallbackContext: FallbackContextKey.Type { FallbackContextKey.self }
}

/// A singleton whose initializer reads the key of a request-scoped type: a scope mismatch,
/// which the key read turns into the key's default.
final class SingletonReadsFallbackKey: Sendable {
    let context: FallbackContext
    init() { context = InjectedValues.current.fallbackContext }
}

/// A singleton that needs the one above, registered before it.
final class NeedsSingletonReadingKey: Sendable {
    let inner: SingletonReadsFallbackKey
    init(inner: SingletonReadsFallbackKey) { self.inner = inner }
}

extension InjectedTests {
    private func registerFallbackRepro(withOuterFirst: Bool) {
        let live = WeaveDI.Container.live
        if withOuterFirst {
            live.register(NeedsSingletonReadingKey.self) { r in NeedsSingletonReadingKey(inner: try r.require(SingletonReadsFallbackKey.self)) }
        }
        live.register(FallbackContext.self, scope: .request) { FallbackContext("request") }
        live.register(SingletonReadsFallbackKey.self) { SingletonReadsFallbackKey() }
    }

    @Test(arguments: [false, true])
    func validate_reportsABuildThatKeptAKeysDefault_inPlaceOfAFailedRegistration(withOuterFirst: Bool) async {
        registerFallbackRepro(withOuterFirst: withOuterFirst)
        let report = await WeaveDI.Container.live.validate()
        #expect(!report.isValid)
        let failures = report.failures.filter { $0.type == "SingletonReadsFallbackKey" }
        #expect(failures.count == 1, "\(report.failures)")
        if let failure = failures.first {
            #expect(failure.scope == .singleton)
            #expect(failure.isScopeMismatch)
            #expect(failure.reason.hasPrefix(
                "FallbackContextKey was read while building SingletonReadsFallbackKey and gave the key's default, which "
                    + "SingletonReadsFallbackKey keeps: the registration of FallbackContext failed (scope mismatch: "
                    + "SingletonReadsFallbackKey (singleton) needs FallbackContext (request)"), "\(failure.reason)")
        }
        #expect(!report.built.contains("SingletonReadsFallbackKey"))
        // The singleton that needs it built; its own failure is the other's.
        #expect(report.built.contains("NeedsSingletonReadingKey") == withOuterFirst)
        #expect(report.failures.count == 1)
    }

    /// The `container.graph` check says so on every round while the singleton keeps the default
    /// (building it again reads the instance, not the key), and not once it is released with a
    /// registration that no longer fails.
    @Test func graphCheck_reportsAKeptDefault_everyRound_untilReleased() async {
        registerFallbackRepro(withOuterFirst: false)
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        registry.registerContainerChecks(for: WeaveDI.Container.live)
        for _ in 0..<3 {
            let graph = await registry.runChecks().checks.first { $0.name == "container.graph" }!
            #expect(graph.status == .unhealthy)
            #expect(graph.message.contains("FallbackContextKey"), "\(graph.message)")
        }
        #expect(WeaveDI.Container.live.resolve(SingletonReadsFallbackKey.self)?.context.origin == "default")
        // Still failing after a release: the factory reads the key again, and the key fails again.
        await WeaveDI.Container.live.releaseAll()
        let again = await registry.runChecks().checks.first { $0.name == "container.graph" }!
        #expect(again.status == .unhealthy)
    }

    /// Outside `validate()`, a read that falls back is logged, as before; the singleton built so
    /// keeps the default, and `validate()`, which reads it, reports that as its failure.
    @Test func aKeyFallbackOutsideValidate_isLogged_andValidateReportsIt() async {
        registerFallbackRepro(withOuterFirst: false)
        let log = LogCapture()
        let built = log.during { WeaveDI.Container.live.resolve(SingletonReadsFallbackKey.self) }
        #expect(built?.context.origin == "default")
        #expect(log.messages.filter { $0.hasPrefix("FallbackContextKey: the registration of FallbackContext failed") }.count == 1)
        let report = await WeaveDI.Container.live.validate()
        // Built already, with the default: validate reads the instance, and reports what its build kept.
        #expect(!report.built.contains("SingletonReadsFallbackKey"))
        #expect(report.failures.map(\.type) == ["SingletonReadsFallbackKey"])
        #expect(report.failures.first?.isScopeMismatch == true)
    }
}
