import Synchronization
import Testing
@testable import WeaveDI

/// `try $x.getValue()`: what a wrapper read that cannot resolve would stop the program with,
/// thrown instead. These read `Container.live`, so they belong to the serialized `InjectedTests`.

final class GetValueThing: Sendable {}
final class GetValueOther: Sendable {}
struct GetValueKey: InjectedKey { static var liveValue: GetValueThing { GetValueThing() } }
struct GetValueFailure: Error {}

/// How many times the failing factory below ran.
private let failingRuns = Atomic<Int>(0)

// The wrappers are immutable; Swift still declares their storage `var`.
final class GetValueHolder: @unchecked Sendable {
    @Injected var required: GetValueThing
    @Injected var optional: GetValueThing?
    @Injected var other: GetValueOther
    @Factory var fresh: GetValueThing
    @Injected(\.getValueKey) var keyed
}

extension InjectedKeys {
    var getValueKey: GetValueKey.Type { GetValueKey.self }
}

extension InjectedTests {
    @Test func getValue_ofANonOptionalInjected_throwsWhatTheReadWouldStopWith() throws {
        let holder = GetValueHolder()
        #expect {
            try holder.$required.getValue()
        } throws: { error in
            guard case let .notRegistered(type, _, path) = error as? ResolutionError else { return false }
            return type == "GetValueThing" && path.isEmpty
        }
        let registered = GetValueThing()
        WeaveDI.Container.live.register(GetValueThing.self, instance: registered)
        #expect(try holder.$required.getValue() === registered)
        #expect(holder.required === registered)
    }

    /// `@Injected var x: T?`: `getValue()` returns `T`, and throws where a read is nil (as the
    /// deprecated `@SafeInject`'s does), logging nothing: the error is the caller's.
    @Test func getValue_ofAnOptionalInjected_returnsTheWrappedType_orThrows_loggingNothing() throws {
        let holder = GetValueHolder()
        let log = LogCapture()
        _ = log.during {
            #expect(throws: ResolutionError.self) { try holder.$optional.getValue() }
        }
        #expect(!log.messages.contains { $0.contains("GetValueThing") }, "\(log.messages)")
        let registered = GetValueThing()
        WeaveDI.Container.live.register(GetValueThing.self, instance: registered)
        let value: GetValueThing = try holder.$optional.getValue()
        #expect(value === registered)
    }

    /// A factory that throws: `factoryFailed` thrown, the factory run once per call.
    @Test func getValue_ofAFailingRegistration_throwsFactoryFailed_runningTheFactoryOnce() {
        failingRuns.store(0, ordering: .relaxed)
        WeaveDI.Container.live.register(GetValueOther.self) { () throws -> GetValueOther in
            failingRuns.add(1, ordering: .relaxed)
            throw GetValueFailure()
        }
        let holder = GetValueHolder()
        #expect {
            try holder.$other.getValue()
        } throws: { error in
            guard case let .factoryFailed(type, underlying, _) = error as? ResolutionError else { return false }
            return type == "GetValueOther" && underlying is GetValueFailure
        }
        #expect(failingRuns.load(ordering: .relaxed) == 1)
    }

    @Test func getValue_ofAFactory_buildsAFreshOne_orThrowsWhatTheReadWouldStopWith() async throws {
        let holder = GetValueHolder()
        #expect {
            try holder.$fresh.getValue()
        } throws: { error in
            guard case let .notRegistered(type, _, _) = error as? ResolutionError else { return false }
            return type == "GetValueThing"
        }
        WeaveDI.Container.live.register(GetValueThing.self, scope: .session) { GetValueThing() }
        #expect {
            try holder.$fresh.getValue()
        } throws: { error in
            guard case .noActiveScope = error as? ResolutionError else { return false }
            return true
        }
        let session = WeaveDI.Container.live.openSession(id: "get-value")
        let (one, two) = try session.withCurrent { (try holder.$fresh.getValue(), try holder.$fresh.getValue()) }
        #expect(one !== two)
        await session.close()
    }

    /// A key has a default: `getValue()` of `@Injected(\.key)` is the read.
    @Test func getValue_ofAKeyPath_isTheRead() throws {
        let holder = GetValueHolder()
        #expect(try holder.$keyed.getValue() === holder.keyed)
    }
}

/// Registered in a container other than `Container.live`.
final class ElsewhereContext: Sendable {}
final class ElsewhereHolder: @unchecked Sendable {
    @Injected var context: ElsewhereContext?
}

extension InjectedTests {
    /// A request of another container, current: an optional wrapper read is nil (wrappers read
    /// `Container.live`), and its line says why and how to resolve through the request.
    @Test func optionalReadInAnotherContainersRequest_saysWrappersReadLive() async {
        let other = WeaveDI.Container()
        other.register(ElsewhereContext.self, scope: .request) { ElsewhereContext() }
        let session = other.openSession(id: "elsewhere")
        let request = session.openRequest(id: "y")
        let log = LogCapture()
        let read = log.during { request.withCurrent { ElsewhereHolder().context } }
        #expect(read == nil)
        #expect(log.messages.contains {
            $0.contains("no registration for ElsewhereContext in WeaveDI.Container.live; the current request 'y' belongs to "
                + "another container, which wrapper reads do not use: resolve through it (request.require(ElsewhereContext.self))")
        }, "\(log.messages)")
        // Outside it, the usual line (said once per type: asked of another type here).
        #expect(WeaveDI.Container.wrapperFailure(.notRegistered(type: "ElsewhereContext", suggestions: []), reading: ElsewhereContext.self)
            == ResolutionError.notRegistered(type: "ElsewhereContext", suggestions: []).description)
        await session.close()
    }
}

/// Registered session-scoped in `Container.live` and in another container.
final class ElsewhereBasket: Sendable {}
final class ElsewhereBasketHolder: @unchecked Sendable {
    @Injected var basket: ElsewhereBasket?
}

extension InjectedTests {
    /// A session of another container, current: an optional wrapper read of a type registered
    /// session-scoped in `Container.live` finds no active session there, and its line says so as
    /// a key read's does (not the usual "resolve it through a session", which a session was current for).
    @Test func optionalReadOfASessionScopedType_inAnotherContainersSession_saysWhoseSessionWasCurrent() async {
        WeaveDI.Container.live.register(ElsewhereBasket.self, scope: .session) { ElsewhereBasket() }
        let other = WeaveDI.Container()
        other.register(ElsewhereBasket.self, scope: .session) { ElsewhereBasket() }
        let session = other.openSession(id: "elsewhere")
        let log = LogCapture()
        let read = log.during { session.withCurrent { ElsewhereBasketHolder().basket } }
        #expect(read == nil)
        let line = log.messages.first { $0.contains("ElsewhereBasket? reads nil") } ?? ""
        #expect(line.contains(
            "no active session for ElsewhereBasket in WeaveDI.Container.live, the container wrapper reads use: the current "
                + "session 'elsewhere' belongs to another container; open the session on WeaveDI.Container.live "
                + "(WeaveDI.Container.live.openSession(id:)) and make it current, or resolve through it "
                + "(session.require(ElsewhereBasket.self))"), "\(log.messages)")
        #expect(!line.contains("inside session.withCurrent"), "\(line)")
        await session.close()
    }
}
