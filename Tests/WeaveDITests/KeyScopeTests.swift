import Testing
@testable import WeaveDI

/// A session a key's default resolves through explicitly (keys have no instance to hold one).
private let sessionForKeyDefault = Locked<Session?>(nil)

/// What a key's default keeps: it is computed once and cached for the process, so it must not
/// hold an instance of a session or a request. These read `Container.live`, so they belong to
/// the serialized `InjectedTests`.
extension InjectedTests {
    /// Collects the log lines that mention `word` while `body` runs.
    private func logLines(mentioning word: String, _ body: () async throws -> Void) async rethrows -> [String] {
        let log = LogCapture()
        try await log.during(body)
        return log.messages.filter { $0.contains(word) }
    }

    @Test func keyDefault_resolvingASessionScopedService_isAScopeMismatch_namingTheKey() async throws {
        final class Basket: Sendable {}
        struct BasketKey: InjectedKey {
            static var liveValue: Basket? { WeaveDI.Container.live.resolve(Basket.self) }
        }
        WeaveDI.Container.live.register(Basket.self, scope: .session) { Basket() }
        let first = WeaveDI.Container.live.openSession(id: "first")
        var read: Basket? = Basket()
        let lines = await logLines(mentioning: "Basket") {
            first.withCurrent { read = InjectedValues.current[BasketKey.self] }
        }
        #expect(read == nil)
        #expect(first.instanceCount == 0)
        #expect(lines.contains { $0.contains("scope mismatch") && $0.contains("BasketKey's default") }, "\(lines)")
        // Not "no active session": the read was inside one.
        #expect(!lines.contains { $0.contains("no active session") }, "\(lines)")
        await first.close()
    }

    /// A key whose value type is registered `.session`: outside a session a read gets the
    /// key's default, a normal answer, said once for the key as a diagnostic; inside one, the
    /// session's instance. A factory that fails is still an error, on every read.
    @Test func keyOfASessionScopedType_readOutsideASession_getsTheDefault_saidOnceAsADiagnostic() async {
        final class Cart: Sendable { let name: String; init(_ name: String) { self.name = name } }
        struct CartKey: InjectedKey { static var liveValue: Cart { Cart("default") } }
        final class Till: Sendable {}
        struct TillKey: InjectedKey { static var liveValue: Till? { nil } }
        struct Broken: Error {}
        WeaveDI.Container.live.register(Cart.self, scope: .session) { Cart("session") }
        WeaveDI.Container.live.register(Till?.self) { () throws -> Till? in throw Broken() }
        let log = LogCapture()
        await log.during {
            for _ in 0..<3 { #expect(InjectedValues.current[CartKey.self].name == "default") }
            let session = WeaveDI.Container.live.openSession(id: "cart")
            #expect(session.withCurrent { InjectedValues.current[CartKey.self].name } == "session")
            await session.close()
            for _ in 0..<2 { #expect(InjectedValues.current[TillKey.self] == nil) }
        }
        // The keys have no testValue, which is said once too (MissingTestValueTests): not the subject here.
        let fallbacks = log.records.filter { !$0.message.contains("has no testValue") }
        let cart = fallbacks.filter { $0.message.contains("CartKey") }
        #expect(cart.map(\.category) == [.diagnostic], "\(cart.map(\.message))")
        #expect(cart.first?.message.hasPrefix("CartKey reads the key's default: no active session for Cart") == true)
        let till = fallbacks.filter { $0.message.contains("TillKey") }
        #expect(till.map(\.category) == [.error, .error], "\(till.map(\.message))")
    }

    @Test func keyDefault_resolvingThroughASession_keepsNoSessionsInstance() async throws {
        final class Trolley: Sendable {}
        struct TrolleyKey: InjectedKey {
            static var liveValue: Trolley? { try? sessionForKeyDefault.withLock { $0 }?.require(Trolley.self) }
        }
        WeaveDI.Container.live.register(Trolley.self, scope: .session) { Trolley() }
        let first = WeaveDI.Container.live.openSession(id: "first")
        let second = WeaveDI.Container.live.openSession(id: "second")
        sessionForKeyDefault.withLock { $0 = first }
        defer { sessionForKeyDefault.withLock { $0 = nil } }
        let inFirst = first.withCurrent { InjectedValues.current[TrolleyKey.self] }
        sessionForKeyDefault.withLock { $0 = second }
        let inSecond = second.withCurrent { InjectedValues.current[TrolleyKey.self] }
        // The default would otherwise be the first session's trolley, in the second session too
        // and after the first is closed.
        #expect(inFirst == nil && inSecond == nil)
        #expect(first.instanceCount == 0)
        await first.close()
        await second.close()
    }

    @Test func keyDefault_resolvingARequestScopedService_throughATransient_isAScopeMismatch() async throws {
        final class Ticket: Sendable {}
        final class TicketPrinter: Sendable {
            let ticket: Ticket
            init(ticket: Ticket) { self.ticket = ticket }
        }
        struct PrinterKey: InjectedKey {
            static var liveValue: TicketPrinter? { WeaveDI.Container.live.resolve(TicketPrinter.self) }
        }
        WeaveDI.Container.live.register(Ticket.self, scope: .request) { Ticket() }
        WeaveDI.Container.live.register(TicketPrinter.self, scope: .transient) { r in
            TicketPrinter(ticket: try r.require(Ticket.self))
        }
        let session = WeaveDI.Container.live.openSession(id: "s")
        let request = session.openRequest(id: "r")
        var read: TicketPrinter? = TicketPrinter(ticket: Ticket())
        let lines = await logLines(mentioning: "Ticket") {
            request.withCurrent { read = InjectedValues.current[PrinterKey.self] }
        }
        #expect(read == nil)
        #expect(request.instances.count == 0)
        #expect(lines.contains { $0.contains("scope mismatch") && $0.contains("PrinterKey's default") }, "\(lines)")
        await session.close()
    }

    @Test func key_ofASessionScopedValueType_readsEachSessionsInstance_neverCachingOne() async throws {
        final class Shelf: Sendable {}
        struct ShelfKey: InjectedKey {
            static var liveValue: Shelf { Shelf() }
        }
        // First a singleton, which the key's reader remembers; then the type is registered again,
        // session-scoped, which the reader must not answer from what it remembered.
        WeaveDI.Container.live.register(Shelf.self) { Shelf() }
        let singleton = InjectedValues.current[ShelfKey.self]
        #expect(InjectedValues.current[ShelfKey.self] === singleton)
        WeaveDI.Container.live.register(Shelf.self, scope: .session) { Shelf() }
        let first = WeaveDI.Container.live.openSession(id: "first")
        let second = WeaveDI.Container.live.openSession(id: "second")
        let inFirst = first.withCurrent { (InjectedValues.current[ShelfKey.self], InjectedValues.current[ShelfKey.self]) }
        let inSecond = second.withCurrent { InjectedValues.current[ShelfKey.self] }
        #expect(inFirst.0 === inFirst.1)
        #expect(inFirst.0 === (try first.require(Shelf.self)))
        #expect(inSecond === (try second.require(Shelf.self)))
        #expect(inFirst.0 !== inSecond && inFirst.0 !== singleton && inSecond !== singleton)
        await first.close()
        let third = WeaveDI.Container.live.openSession(id: "third")
        let inThird = third.withCurrent { InjectedValues.current[ShelfKey.self] }
        #expect(inThird !== inFirst.0 && inThird !== inSecond)
        await second.close()
        await third.close()
    }
}

/// Two keys, and two value types, of one name each, named in no other test.
enum KeyAisle {
    final class Shelf: Sendable {}
    struct ShelfKey: InjectedKey { static var liveValue: Shelf { Shelf() } }
}
enum KeyStore {
    final class Shelf: Sendable {}
    struct ShelfKey: InjectedKey { static var liveValue: Shelf { Shelf() } }
}

extension InjectedTests {
    /// A key's log lines name the key, and its value's type, as other log lines do: qualified
    /// when another type of the name was named before.
    @Test func keyLogLines_tellTwoKeysOfOneNameApart() {
        struct Broken: Error {}
        // Named before: the other `ShelfKey` and `Shelf`.
        _ = TypeSlots.shared.logName(of: KeyAisle.ShelfKey.self)
        _ = TypeSlots.shared.logName(of: KeyAisle.Shelf.self)
        WeaveDI.Container.live.register(KeyStore.Shelf.self, scope: .session) { KeyStore.Shelf() }
        WeaveDI.Container.live.register(KeyAisle.Shelf.self) { () throws -> KeyAisle.Shelf in throw Broken() }
        let log = LogCapture()
        log.during {
            _ = InjectedValues.current[KeyStore.ShelfKey.self]
            _ = InjectedValues.current[KeyAisle.ShelfKey.self]
        }
        let messages = log.messages.filter { $0.contains("ShelfKey") }
        #expect(messages.contains { $0.hasPrefix("WeaveDITests.KeyStore.ShelfKey reads the key's default: ") }, "\(messages)")
        #expect(messages.contains {
            $0.hasPrefix("WeaveDITests.KeyAisle.ShelfKey: the registration of WeaveDITests.KeyAisle.Shelf failed (")
        }, "\(messages)")
    }
}

extension InjectedTests {
    /// A key read while a session or request of another container is current reads
    /// `Container.live`, which finds no active scope of its own and falls back to the default:
    /// its line says the current scope is another container's, and what to do.
    @Test func keyOfASessionScopedType_readInAnotherContainersSession_saysWhoseSessionWasCurrent() async {
        final class Aisle: Sendable { let name: String; init(_ name: String) { self.name = name } }
        struct AisleKey: InjectedKey { static var liveValue: Aisle { Aisle("default") } }
        WeaveDI.Container.live.register(Aisle.self, scope: .session) { Aisle("live") }
        let other = WeaveDI.Container()
        other.register(Aisle.self, scope: .session) { Aisle("other") }
        let session = other.openSession(id: "elsewhere")
        let log = LogCapture()
        let read = log.during { session.withCurrent { InjectedValues.current[AisleKey.self].name } }
        #expect(read == "default")
        let lines = log.records.filter { $0.message.contains("AisleKey reads the key's default") }
        #expect(lines.map(\.category) == [.diagnostic], "\(log.messages)")
        let line = lines.first?.message ?? ""
        #expect(line.contains(
            "no active session for Aisle in WeaveDI.Container.live, the container the key reads: the current session "
                + "'elsewhere' belongs to another container"), "\(line)")
        #expect(line.contains("open the session on WeaveDI.Container.live"), "\(line)")
        // Registered there too: reading through that session is the other way.
        #expect(line.contains("session.require(Aisle.self)"), "\(line)")
        // Not the usual advice, which a session was current to follow already.
        #expect(!line.contains("inside session.withCurrent"), "\(line)")
        // The whole line, as the README shows it.
        #expect(line == "AisleKey reads the key's default: no active session for Aisle in WeaveDI.Container.live, the "
            + "container the key reads: the current session 'elsewhere' belongs to another container; open the session on "
            + "WeaveDI.Container.live (WeaveDI.Container.live.openSession(id:)) and make it current, or resolve through it "
            + "(session.require(Aisle.self)) (said once for this key)")
        await session.close()
    }

    /// The same for a request-scoped type and another container's request, which has no
    /// registration of the type: the fix is a request of `Container.live`'s only.
    @Test func keyOfARequestScopedType_readInAnotherContainersRequest_saysWhoseRequestWasCurrent() async {
        final class Docket: Sendable {}
        struct DocketKey: InjectedKey { static var liveValue: Docket? { nil } }
        WeaveDI.Container.live.register(Docket?.self, scope: .request) { Docket() }
        let other = WeaveDI.Container()
        let session = other.openSession(id: "s")
        let request = session.openRequest(id: "elsewhere-request")
        let log = LogCapture()
        let read = log.during { request.withCurrent { InjectedValues.current[DocketKey.self] } }
        #expect(read == nil)
        let lines = log.records.filter { $0.message.contains("DocketKey reads the key's default") }
        #expect(lines.map(\.category) == [.diagnostic], "\(log.messages)")
        let line = lines.first?.message ?? ""
        #expect(line.contains(
            "no active request for Optional<Docket> in WeaveDI.Container.live, the container the key reads: the current "
                + "request 'elsewhere-request' belongs to another container"), "\(line)")
        #expect(line.contains("open the request on a session of WeaveDI.Container.live"), "\(line)")
        #expect(!line.contains("request.require"), "\(line)")
        await session.close()
    }
}
