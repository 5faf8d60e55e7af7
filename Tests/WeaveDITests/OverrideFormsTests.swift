import Testing
@testable import WeaveDI

/// A client made of closures, as the documentation's `NumberFactClient`: a test overrides one
/// of them and keeps the others.
struct NumberFactClient: Sendable {
    var fetch: @Sendable (Int) -> String
    var source: @Sendable () -> String
}

struct NumberFactKey: InjectedKey {
    static var liveValue: NumberFactClient { NumberFactClient(fetch: { "\($0) is a live fact" }, source: { "live" }) }
    static var testValue: NumberFactClient { NumberFactClient(fetch: { "\($0) is a test fact" }, source: { "test" }) }
}

extension InjectedValues {
    /// The key as a property of `InjectedValues` (the documentation's way).
    var numberFactClient: NumberFactClient {
        get { self[NumberFactKey.self] }
        set { self[NumberFactKey.self] = newValue }
    }
}

extension InjectedKeys {
    /// The same key named in `InjectedKeys`.
    var numberFacts: NumberFactKey.Type { NumberFactKey.self }
}

/// Assignments to a member of a key's value inside `withInjectedValues`'s update
/// (`$0.numberFactClient.fetch = { … }`): the value in effect is read, changed and overridden.
@Suite struct NestedOverrideTests {
    struct Reader {
        @Injected(\.numberFacts) var facts
    }

    @Test func memberWrite_throughAnInjectedValuesProperty_keepsTheOtherMembers() {
        withInjectedValues { $0.numberFactClient.fetch = { "\($0) is mocked" } } operation: {
            #expect(InjectedValues.current.numberFactClient.fetch(3) == "3 is mocked")
            #expect(InjectedValues.current.numberFactClient.source() == "test")
            #expect(Reader().facts.fetch(4) == "4 is mocked")
        }
        #expect(InjectedValues.current.numberFactClient.fetch(3) == "3 is a test fact")
    }

    @Test func memberWrite_throughAnInjectedKeysAccessor_keepsTheOtherMembers() {
        withInjectedValues { $0.numberFacts.fetch = { "\($0) is keyed" } } operation: {
            #expect(Reader().facts.fetch(5) == "5 is keyed")
            #expect(Reader().facts.source() == "test")
            #expect(InjectedValues.current.numberFactClient.fetch(5) == "5 is keyed")
        }
        #expect(Reader().facts.fetch(5) == "5 is a test fact")
    }

    @Test func memberWrite_throughTheKeySubscript_andNested_startsFromTheValueInEffect() {
        withInjectedValues { $0[NumberFactKey.self].fetch = { "\($0) outer" } } operation: {
            withInjectedValues { $0.numberFacts.source = { "inner" } } operation: {
                #expect(Reader().facts.fetch(1) == "1 outer")
                #expect(Reader().facts.source() == "inner")
            }
            #expect(Reader().facts.source() == "test")
        }
        #expect(Reader().facts.fetch(1) == "1 is a test fact")
    }
}

/// The documentation's ViewModel: a main-actor class with `@Injected` properties.
@MainActor
final class FactViewModel {
    @Injected(\.numberFacts) var facts
    @Injected(\.numberFactClient) var client
    var fact = ""

    func load(_ number: Int) {
        fact = facts.fetch(number) + ", " + client.source()
    }
}

/// `@MainActor` callers of `withInjectedValues`: its async overload takes the caller's
/// isolation, so the operation runs on the main actor and may touch main-actor state without
/// `await` (without that parameter this would not compile: the closure would leave the actor).
@Suite struct MainActorCallerTests {
    @MainActor
    @Test func mainActorTest_overridesAndReads_onTheMainActor() async {
        let model = FactViewModel()
        var seen: [String] = []
        await withInjectedValues { $0.numberFacts.fetch = { "\($0) from a mock" } } operation: {
            MainActor.assertIsolated()
            model.load(7)
            seen.append(model.fact)
            await Task.yield()
            model.load(8)
            seen.append(model.fact)
        }
        model.load(9)
        seen.append(model.fact)
        #expect(seen == ["7 from a mock, test", "8 from a mock, test", "9 is a test fact, test"])
    }

    @MainActor
    @Test func mainActorUpdate_mayReadMainActorState() async throws {
        let model = FactViewModel()
        model.fact = "from the model"
        let result = try await withInjectedValues {
            await Task.yield()
            MainActor.assertIsolated()
            let prefix = model.fact
            $0.numberFactClient.source = { prefix }
        } operation: { () throws -> String in
            await Task.yield()
            model.load(2)
            return model.fact
        }
        #expect(result == "2 is a test fact, from the model")
    }
}
