import Testing
@testable import WeaveDI

// The "did you mean" suggestions of a type not registered compare its name with every
// registered type's: made where something reads them, bounded where they are made.

private struct SpellWatch<Tag>: Sendable {}
private enum QuietTag {}
private enum LoudTag {}
private struct SpellWatchAsked: Sendable {}
private struct SpellWatchAskedToo: Sendable {}
private protocol LoggedMailer: Sendable {}
private final class LoggedMailerImpl: LoggedMailer {}

extension InjectedTests {
    /// At log level `.off`, a nil `resolve` of a type not registered makes no suggestions: it
    /// does not even spell a registered type's name (which the suggestions compare with).
    @Test func aNilResolve_withLoggingOff_makesNoSuggestions() async {
        let level = UnifiedDI.logLevel
        defer { UnifiedDI.setLogLevel(level) }
        let container = WeaveDI.Container()
        UnifiedDI.setLogLevel(.off)
        container.register(SpellWatch<QuietTag>.self) { SpellWatch() }
        let session = container.openSession(id: "quiet")
        let request = session.openRequest(id: "quiet")
        #expect(container.resolve(SpellWatchAsked.self) == nil)
        #expect(session.resolve(SpellWatchAsked.self) == nil)
        #expect(request.resolve(SpellWatchAsked.self) == nil)
        #expect(!TypeSlots.shared.hasSpelledName(ofSlot: TypeSlots.shared.slot(for: SpellWatch<QuietTag>.self)))
        // Thrown, it is explained: the caller may read it.
        #expect(throws: ResolutionError.self) { try container.require(SpellWatchAsked.self) }
        #expect(TypeSlots.shared.hasSpelledName(ofSlot: TypeSlots.shared.slot(for: SpellWatch<QuietTag>.self)))
        await session.close()
    }

    /// Logged, a nil `resolve`'s line still says what was probably meant, through the
    /// container, a session and a request.
    @Test func aNilResolve_logged_saysDidYouMean() async {
        let container = WeaveDI.Container()
        container.register(LoggedMailerImpl.self) { LoggedMailerImpl() }
        let log = LogCapture()
        await log.during {
            let session = container.openSession(id: "loud")
            let request = session.openRequest(id: "loud")
            _ = container.resolve((any LoggedMailer).self)
            _ = session.resolve((any LoggedMailer).self)
            _ = request.resolve((any LoggedMailer).self)
            await session.close()
        }
        let messages = log.messages
        let explained = "returned nil: no registration for LoggedMailer (did you mean LoggedMailerImpl?); "
            + "register it in a module with container.register((any LoggedMailer).self) { ... }"
        #expect(messages.contains("resolve(LoggedMailer) \(explained)"), "\(messages)")
        #expect(messages.contains("session 'loud': resolve(LoggedMailer) \(explained)"), "\(messages)")
        #expect(messages.contains("request 'loud': resolve(LoggedMailer) \(explained)"), "\(messages)")
    }
}

@Suite struct BoundedSuggestionTests {
    /// The plain Levenshtein distance, every cell computed.
    private func reference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// The bounded distance is the distance when it is within the limit, and nil past it, for
    /// strings of a small alphabet (many near matches) of every length up to 24.
    @Test func theBoundedDistance_isTheDistance_withinItsLimit() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33)
        }
        for _ in 0..<3_000 {
            let a = (0..<(next() % 25)).map { _ in UInt8(97 + next() % 3) }
            let b = (0..<(next() % 25)).map { _ in UInt8(97 + next() % 3) }
            let limit = next() % 12
            let exact = reference(a, b)
            #expect(NameSimilarity.editDistance(a, b, atMost: limit) == (exact <= limit ? exact : nil), "\(a) \(b) \(limit)")
        }
    }

    /// A long name is suggested within 32 edits, not further, however long it is.
    @Test func aLongName_isSuggestedWithinThirtyTwoEdits_only() {
        let name = String(repeating: "a", count: 300)
        let near = String(repeating: "a", count: 150) + String(repeating: "b", count: 32) + String(repeating: "a", count: 118)
        let far = String(repeating: "a", count: 150) + String(repeating: "b", count: 33) + String(repeating: "a", count: 117)
        #expect(NameSimilarity.suggestions(for: name, among: [near, far]) == [near])
    }
}
