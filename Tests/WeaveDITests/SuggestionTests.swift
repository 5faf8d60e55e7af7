import Testing
@testable import WeaveDI

// Registered types whose names resemble the one asked for, related to it or not. The protocols
// are internal: the run time cannot look a private protocol's conformances up by name, and a
// type against a private protocol is a "cannot tell" (suggested).
protocol Mailer: Sendable {}
private final class MailerImpl: Mailer {}
/// Not a `Mailer`, whatever its name.
private final class MailerLog: Sendable {}
protocol MailerSending: Sendable {}
struct MailBox<Content: Sendable>: Sendable {
    struct Slot: Sendable { struct Lock: Sendable {} }
}
/// Two types of one name, a protocol and a struct.
enum HintSpaceA { protocol Same: Sendable {} }
enum HintSpaceB { struct Same: Sendable {} }

private class Store: @unchecked Sendable {}  // (@unchecked: no state, open to its subclass)
private final class StoreImpl: Store, @unchecked Sendable {}
private final class StoreCache: Sendable {}

/// Whose factory needs `Store`, which is not registered: a subclass of it, but being built.
private final class StoreMirror: Store, @unchecked Sendable {}

protocol Figure {}
protocol RoundFigure: Figure {}
private struct Circle: RoundFigure {}
private struct Square {}

@Suite struct SuggestionTests {
    private func notRegistered(_ body: () throws -> Void) -> (suggestions: [String], message: String)? {
        do {
            try body()
        } catch let error as ResolutionError {
            guard case let .notRegistered(_, suggestions, _) = error else { return nil }
            return (suggestions, error.description)
        } catch {
            return nil
        }
        return nil
    }

    /// Asked for a protocol, a registered type of a similar name that conforms to it is
    /// suggested; one that does not, never.
    @Test func aProtocol_isSuggested_onlyTypesThatConformToIt() throws {
        let container = WeaveDI.Container()
        container.register(MailerImpl.self) { MailerImpl() }
        container.register(MailerLog.self) { MailerLog() }
        let error = try #require(notRegistered { _ = try container.require((any Mailer).self) })
        #expect(error.suggestions == ["MailerImpl"])
        #expect(error.message.contains("(did you mean MailerImpl?)"), "\(error.message)")
        #expect(!error.message.contains("MailerLog"), "\(error.message)")
    }

    /// Asked for a type, a registered protocol it conforms to is suggested (registered as the
    /// protocol, asked for as the implementation); an unrelated protocol is not.
    @Test func aConformingType_isSuggested_theProtocolItIsRegisteredAs() throws {
        let container = WeaveDI.Container()
        container.register((any Mailer).self) { MailerImpl() }
        container.register((any MailerSending).self) { MailerImplSending() }
        let error = try #require(notRegistered { _ = try container.require(MailerImpl.self) })
        #expect(error.suggestions == ["Mailer"])
    }

    /// Classes: a subclass is suggested for its superclass, an unrelated class never; and not
    /// a type being built, which asking for would make a cycle.
    @Test func aClass_isSuggested_itsSubclasses_butNotOneBeingBuilt() throws {
        let container = WeaveDI.Container()
        container.register(StoreImpl.self) { StoreImpl() }
        container.register(StoreCache.self) { StoreCache() }
        container.register(StoreMirror.self) { r in _ = try r.require(Store.self); return StoreMirror() }
        let direct = try #require(notRegistered { _ = try container.require(Store.self) })
        #expect(direct.suggestions == ["StoreImpl", "StoreMirror"])
        let built = try #require(notRegistered { _ = try container.require(StoreMirror.self) })
        #expect(built.suggestions == ["StoreImpl"])
        #expect(built.message.hasPrefix("cannot build StoreMirror (StoreMirror -> Store): no registration for Store (did you mean StoreImpl?);"),
            "\(built.message)")
    }

    /// The message says how to register what was asked for, as Swift 6 source writes its
    /// metatype: `(any P).self` for a protocol's existential (the run time names it `P`), and
    /// `(any P & Q).self` for a composition's, `T.self` for a class.
    @Test func theRegistrationHint_writesAnExistentialAsAnyP() throws {
        let container = WeaveDI.Container()
        let existential = try #require(notRegistered { _ = try container.require((any Mailer).self) })
        #expect(existential.message.hasSuffix("register it in a module with container.register((any Mailer).self) { ... }"),
            "\(existential.message)")
        let composition = try #require(notRegistered { _ = try container.require((any Mailer & Figure).self) })
        #expect(composition.message.hasSuffix("container.register((any Figure & Mailer).self) { ... }")
            || composition.message.hasSuffix("container.register((any Mailer & Figure).self) { ... }"), "\(composition.message)")
        let concrete = try #require(notRegistered { _ = try container.require(StoreCache.self) })
        #expect(concrete.message.hasSuffix("container.register(StoreCache.self) { ... }"), "\(concrete.message)")
    }

    /// A protocol's existential among a type's generic arguments is written `any P` too: the
    /// run time names `Holder<any Mailer>` `Holder<Mailer>`, which does not compile.
    @Test func theRegistrationHint_writesAnExistentialGenericArgumentAsAnyP() throws {
        let container = WeaveDI.Container()
        func hint<T: Sendable>(_ type: T.Type) throws -> String {
            try #require(notRegistered { _ = try container.require(type) }).message
        }
        let direct = try hint(MailBox<any Mailer>.self)
        #expect(direct.hasSuffix("container.register(MailBox<any Mailer>.self) { ... }"), "\(direct)")
        let nested = try hint(Array<MailBox<MailBox<any Mailer>>>.self)
        #expect(nested.hasSuffix("container.register(Array<MailBox<MailBox<any Mailer>>>.self) { ... }"), "\(nested)")
        let optional = try hint(MailBox<(any Mailer)?>.self)
        #expect(optional.hasSuffix("container.register(MailBox<Optional<any Mailer>>.self) { ... }"), "\(optional)")
        let dictionary = try hint([String: MailBox<any Mailer & MailerSending>].self)
        #expect(dictionary.hasSuffix("container.register(Dictionary<String, MailBox<any Mailer & MailerSending>>.self) { ... }")
            || dictionary.hasSuffix("container.register(Dictionary<String, MailBox<any MailerSending & Mailer>>.self) { ... }"),
            "\(dictionary)")
        let standard = try hint(MailBox<any Error>.self)
        #expect(standard.hasSuffix("container.register(MailBox<any Error>.self) { ... }"), "\(standard)")
        let concrete = try hint(MailBox<StoreCache>.self)
        #expect(concrete.hasSuffix("container.register(MailBox<StoreCache>.self) { ... }"), "\(concrete)")
        // A member type of a generic one keeps its dot.
        let member = try hint(MailBox<any Mailer>.Slot.self)
        #expect(member.hasSuffix("container.register(MailBox<any Mailer>.Slot.self) { ... }"), "\(member)")
        _ = MailBox<any Mailer>.Slot.self
        let deeper = try hint(MailBox<any Mailer>.Slot.Lock.self)
        #expect(deeper.hasSuffix("container.register(MailBox<any Mailer>.Slot.Lock.self) { ... }"), "\(deeper)")
        _ = MailBox<any Mailer>.Slot.Lock.self
        // Two types of one name: the hint never takes the protocol's `any` for the struct.
        _ = try hint(MailBox<any HintSpaceA.Same>.self)
        let struct_ = try hint(MailBox<HintSpaceB.Same>.self)
        #expect(!struct_.contains("any "), "\(struct_)")
    }

    /// The hint's metatype compiles for a function type (in parentheses: `F.self` of a bare
    /// function type does not parse), a tuple, `Void` and metatypes; the existential metatype
    /// of a composition, which the run time spells `P & Q.Type` and Swift cannot write as an
    /// expression, gets no metatype. (Each expected spelling is written below as it compiles.)
    @Test func theRegistrationHint_compilesForFunctionsTuplesAndMetatypes() {
        let container = WeaveDI.Container()
        func hint<T: Sendable>(_ type: T.Type) -> String {
            notRegistered { _ = try container.require(type) }?.message ?? "(no notRegistered)"
        }
        let function = hint((@Sendable (any Mailer) -> Int).self)
        #expect(function.hasSuffix("container.register((@Sendable (any Mailer) -> Int).self) { ... }"), "\(function)")
        _ = (@Sendable (any Mailer) -> Int).self
        let throwing = hint((@Sendable (Int) async throws -> Int).self)
        #expect(throwing.hasSuffix("container.register((@Sendable (Int) async throws -> Int).self) { ... }"), "\(throwing)")
        _ = (@Sendable (Int) async throws -> Int).self
        let optional = hint(Optional<@Sendable (any Mailer) -> Int>.self)
        #expect(optional.hasSuffix("container.register(Optional<@Sendable (any Mailer) -> Int>.self) { ... }"), "\(optional)")
        _ = Optional<@Sendable (any Mailer) -> Int>.self
        let tuple = hint((any Mailer, Int).self)
        #expect(tuple.hasSuffix("container.register((any Mailer, Int).self) { ... }"), "\(tuple)")
        _ = (any Mailer, Int).self
        let void = hint(Void.self)
        #expect(void.hasSuffix("container.register(Void.self) { ... }"), "\(void)")
        let existentialMetatype = hint((any Mailer.Type).self)
        #expect(existentialMetatype.hasSuffix("container.register(Mailer.Type.self) { ... }"), "\(existentialMetatype)")
        _ = Mailer.Type.self
        let protocolMetatype = hint((any Mailer).Type.self)
        #expect(protocolMetatype.hasSuffix("container.register(Mailer.Protocol.self) { ... }"), "\(protocolMetatype)")
        _ = Mailer.Protocol.self
        let concreteMetatype = hint(MailBox<Int>.Type.self)
        #expect(concreteMetatype.hasSuffix("container.register(MailBox<Int>.Type.self) { ... }"), "\(concreteMetatype)")
        _ = MailBox<Int>.Type.self
        typealias Both = Mailer & MailerSending
        let composition = hint((any Both.Type).self)
        #expect(!composition.contains(".Type.self"), "\(composition)")
        #expect(composition.hasSuffix("; register it in a module with container.register(_:scope:factory:), its type written as Swift writes it"),
            "\(composition)")
    }

    @Test func typeRelation_saysWhatTheTypeSystemSays() {
        // A private protocol cannot be looked up by name: cannot tell.
        #expect(TypeRelation.related(PrivateFigured.self, (any PrivateFigure).self) == nil)
        #expect(TypeRelation.related(Circle.self, (any Figure).self) == true)
        #expect(TypeRelation.related((any Figure).self, Circle.self) == true)
        #expect(TypeRelation.related(Square.self, (any Figure).self) == false)
        #expect(TypeRelation.related(Square.self, Circle.self) == false)
        #expect(TypeRelation.related(StoreImpl.self, Store.self) == true)
        #expect(TypeRelation.related(StoreCache.self, Store.self) == false)
        #expect(TypeRelation.related(Circle.self, Any.self) == true)
        #expect(TypeRelation.related(Square.self, AnyObject.self) == false)
        #expect(TypeRelation.related(StoreCache.self, AnyObject.self) == true)
        // An existential against another, and a parameterized existential: cannot tell.
        #expect(TypeRelation.related((any RoundFigure).self, (any Figure).self) == nil)
        #expect(TypeRelation.related([Int].self, (any Sequence<Int>).self) == nil)
    }
}

private final class MailerImplSending: Mailer, MailerSending {}

private protocol PrivateFigure {}
private struct PrivateFigured: PrivateFigure {}
