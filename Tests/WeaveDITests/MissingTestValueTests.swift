import Testing
@testable import WeaveDI

// A key without a `testValue` (or `previewValue`) of its own reads its `liveValue` there: said
// once per key, as a diagnostic. Each test has keys of its own: a key's default is computed once
// per context for the process, and so said once.

private struct Endpoint: Sendable, Equatable { let name: String }

/// No `testValue`, no `previewValue`.
private struct LiveOnlyKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "live") }
}

private protocol EndpointSource: Sendable {}
private struct LiveEndpointSource: EndpointSource {}

/// No `testValue`, and a value that is an existential: the hint writes it `any EndpointSource`.
private struct ExistentialLiveOnlyKey: InjectedKey {
    static var liveValue: any EndpointSource { LiveEndpointSource() }
}

/// A `testValue` declared as a computed property; no `previewValue`.
private struct ComputedTestValueKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "live") }
    static var testValue: Endpoint { Endpoint(name: "test") }
}

/// A `testValue` declared as a stored `static let`.
private struct StoredTestValueKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "live") }
    static let testValue = Endpoint(name: "stored test")
}

/// No `testValue`: read only in the live context.
private struct LiveContextKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "live") }
}

/// No `previewValue`: read in the preview context.
private struct NoPreviewValueKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "live") }
    static var testValue: Endpoint { Endpoint(name: "test") }
}

/// A `previewValue`, no `testValue`.
private struct PreviewValueKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "live") }
    static var previewValue: Endpoint { Endpoint(name: "preview") }
}

/// Nested: `OuterKey`'s own `testValue` reads `InnerKey`, which has none.
private struct InnerKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "inner live") }
}

private struct OuterKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "outer live") }
    static var testValue: Endpoint { Endpoint(name: "outer test + " + InjectedValues.current[InnerKey.self].name) }
}

/// Nested the other way: no `testValue` of its own, and its `liveValue` reads a key that has one.
private struct PlainOuterKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "plain + " + InjectedValues.current[DeclaredInnerKey.self].name) }
}

private struct DeclaredInnerKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "inner live") }
    static var testValue: Endpoint { Endpoint(name: "inner test") }
}

/// A `testValue` of its own that returns another key's `testValue` directly, which is the
/// protocol extension's: the other key is the one without a `testValue`.
private struct BorrowedKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "borrowed live") }
    static var testValue: Endpoint { LenderKey.testValue }
}

private struct LenderKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "lender live") }
}

/// No `testValue`: its default first computed where its diagnostic is dropped.
private struct QuietLiveOnlyKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "quiet live") }
}

/// A `testValue` of another type than `Value` (an optional): not `InjectedKey`'s requirement, so
/// not read.
private struct OptionalTestValueKey: InjectedKey {
    static var liveValue: Endpoint { Endpoint(name: "live") }
    static var testValue: Endpoint? { Endpoint(name: "test") }
}

private class Service: @unchecked Sendable {
    var name: String { "live" }
}

private final class MockService: Service, @unchecked Sendable {
    override var name: String { "mock" }
}

/// A `testValue` of a subclass of `Value`: not `InjectedKey`'s requirement either.
private struct SubclassTestValueKey: InjectedKey {
    static var liveValue: Service { Service() }
    static var testValue: MockService { MockService() }
}

/// What the diagnostic adds after the declaration to make, for a `member` of another type.
func typeNote(_ member: String) -> String {
    ", of that type exactly (a \(member) of another type, such as an optional or a subclass, is not the "
        + "protocol's and is never read)"
}

/// These read `Container.live` (no registration of `Endpoint` there), so they belong to the
/// serialized `InjectedTests`, where no test changes the log level meanwhile.
extension InjectedTests {
    /// The diagnostic lines that name `key`, logged while `body` runs.
    private func diagnostics(naming key: String, _ body: () -> Void) -> [LogRecord] {
        let log = LogCapture()
        log.during(body)
        return log.records.filter { $0.message.contains(key) }
    }

    @Test func keyWithoutTestValue_inTheTestContext_saysSoOnce_andReadsItsLiveValue() {
        let lines = diagnostics(naming: "LiveOnlyKey") {
            #expect(InjectedValues.current[LiveOnlyKey.self] == Endpoint(name: "live"))
            #expect(InjectedValues.current[LiveOnlyKey.self] == Endpoint(name: "live"))
        }
        #expect(lines.map(\.category) == [.diagnostic])
        #expect(lines.map(\.subsystem) == ["injected"])
        #expect(lines.first?.message == "LiveOnlyKey has no testValue: the test context reads its liveValue (said once "
            + "for this key); to give it one, declare static var testValue: Endpoint { ... } in LiveOnlyKey" + typeNote("testValue"))
        let existential = diagnostics(naming: "ExistentialLiveOnlyKey") {
            #expect(InjectedValues.current[ExistentialLiveOnlyKey.self] is LiveEndpointSource)
        }
        #expect(existential.map(\.message) == ["ExistentialLiveOnlyKey has no testValue: the test context reads its "
            + "liveValue (said once for this key); to give it one, declare static var testValue: any EndpointSource "
            + "{ ... } in ExistentialLiveOnlyKey" + typeNote("testValue")])
        // Read again: still nothing more.
        let again = diagnostics(naming: "LiveOnlyKey") { #expect(InjectedValues.current[LiveOnlyKey.self].name == "live") }
        #expect(again.isEmpty)
    }

    /// The diagnostic dropped where the default is computed (the log level, or here a quiet
    /// thread) is not said again, but the key is listed, once, with its message.
    @Test func keyWithoutTestValue_whoseDiagnosticWasDropped_isStillListed_once() {
        let lines = diagnostics(naming: "QuietLiveOnlyKey") {
            ResolutionStack.quietly(true) {
                #expect(InjectedValues.current[QuietLiveOnlyKey.self] == Endpoint(name: "quiet live"))
            }
            #expect(InjectedValues.current[QuietLiveOnlyKey.self] == Endpoint(name: "quiet live"))
            #expect(KeyStates.state(for: QuietLiveOnlyKey.self).defaultValue(in: .test) == Endpoint(name: "quiet live"))
        }
        #expect(lines.isEmpty, "\(lines.map(\.message))")
        let listed = InjectedValues.liveValueFallbacks.filter { $0.key == "QuietLiveOnlyKey" }
        #expect(listed == [LiveValueFallback(key: "QuietLiveOnlyKey", context: .test, message: "QuietLiveOnlyKey has "
            + "no testValue: the test context reads its liveValue (said once for this key); to give it one, declare "
            + "static var testValue: Endpoint { ... } in QuietLiveOnlyKey" + typeNote("testValue"))])
        // A key said as usual is listed too, with what was said; a key with its testValue is not.
        _ = InjectedValues.current[LiveOnlyKey.self]
        _ = InjectedValues.current[ComputedTestValueKey.self]
        let all = InjectedValues.liveValueFallbacks
        #expect(all.filter { $0.key == "LiveOnlyKey" }.map(\.context) == [.test])
        #expect(!all.contains { $0.key.contains("TestValueKey") })
    }

    /// A `testValue` of another type than `Value` is not the protocol's `testValue`: the key reads
    /// its `liveValue`, and the line says of which type the `testValue` must be.
    @Test func testValueOfAnotherType_isNotRead_andTheLineSaysWhichTypeItMustHave() {
        let lines = diagnostics(naming: "TestValueKey") {
            #expect(InjectedValues.current[OptionalTestValueKey.self] == Endpoint(name: "live"))
            #expect(InjectedValues.current[SubclassTestValueKey.self].name == "live")
        }
        #expect(lines.map(\.message) == [
            "OptionalTestValueKey has no testValue: the test context reads its liveValue (said once for this key); "
                + "to give it one, declare static var testValue: Endpoint { ... } in OptionalTestValueKey"
                + typeNote("testValue"),
            "SubclassTestValueKey has no testValue: the test context reads its liveValue (said once for this key); "
                + "to give it one, declare static var testValue: Service { ... } in SubclassTestValueKey"
                + typeNote("testValue"),
        ])
    }

    @Test func keyWithTestValue_computedOrStored_saysNothing() {
        let lines = diagnostics(naming: "TestValueKey") {
            #expect(InjectedValues.current[ComputedTestValueKey.self] == Endpoint(name: "test"))
            #expect(InjectedValues.current[StoredTestValueKey.self] == Endpoint(name: "stored test"))
        }
        #expect(lines.isEmpty, "\(lines.map(\.message))")
    }

    @Test func liveContext_saysNothing() {
        let lines = diagnostics(naming: "LiveContextKey") {
            #expect(KeyStates.state(for: LiveContextKey.self).defaultValue(in: .live) == Endpoint(name: "live"))
        }
        #expect(lines.isEmpty, "\(lines.map(\.message))")
    }

    @Test func keyWithoutPreviewValue_inThePreviewContext_saysSoOnce() {
        let lines = diagnostics(naming: "PreviewValueKey") {
            let state = KeyStates.state(for: NoPreviewValueKey.self)
            #expect(state.defaultValue(in: .preview) == Endpoint(name: "live"))
            #expect(state.defaultValue(in: .preview) == Endpoint(name: "live"))
            // Its own testValue, in the test context: nothing.
            #expect(state.defaultValue(in: .test) == Endpoint(name: "test"))
            // A previewValue of its own: nothing.
            #expect(KeyStates.state(for: PreviewValueKey.self).defaultValue(in: .preview) == Endpoint(name: "preview"))
        }
        #expect(lines.map(\.category) == [.diagnostic])
        #expect(lines.first?.message == "NoPreviewValueKey has no previewValue: the preview context reads its liveValue "
            + "(said once for this key); to give it one, declare static var previewValue: Endpoint { ... } in "
            + "NoPreviewValueKey" + typeNote("previewValue"))
    }

    /// A key's own `testValue` that reads a key without one: the line names the inner key only;
    /// one that returns another key's `testValue` directly names that key, read through it.
    @Test func nestedDefaults_nameOnlyTheKeyWithoutATestValue() {
        let log = LogCapture()
        log.during {
            #expect(InjectedValues.current[OuterKey.self] == Endpoint(name: "outer test + inner live"))
            #expect(InjectedValues.current[PlainOuterKey.self] == Endpoint(name: "plain + inner test"))
            #expect(InjectedValues.current[BorrowedKey.self] == Endpoint(name: "lender live"))
        }
        let said = log.records.filter { $0.message.contains("has no testValue") }.map(\.message)
        #expect(said.count == 3, "\(said)")
        #expect(said.contains { $0.hasPrefix("InnerKey has no testValue:") }, "\(said)")
        #expect(said.contains { $0.hasPrefix("PlainOuterKey has no testValue:") }, "\(said)")
        #expect(!said.contains { $0.contains("OuterKey") && !$0.contains("PlainOuterKey") }, "\(said)")
        #expect(!said.contains { $0.contains("DeclaredInnerKey") }, "\(said)")
        #expect(said.contains("LenderKey has no testValue: BorrowedKey's testValue reads LenderKey.testValue, which "
            + "is its liveValue (said once for this key); to give it one, declare static var testValue: Endpoint "
            + "{ ... } in LenderKey" + typeNote("testValue")), "\(said)")
        // The lender's own default, computed now, is not said again, nor listed twice.
        let again = diagnostics(naming: "LenderKey") {
            #expect(InjectedValues.current[LenderKey.self] == Endpoint(name: "lender live"))
        }
        #expect(again.isEmpty, "\(again.map(\.message))")
        #expect(InjectedValues.liveValueFallbacks.filter { $0.key == "LenderKey" }.map(\.context) == [.test])
    }
}
