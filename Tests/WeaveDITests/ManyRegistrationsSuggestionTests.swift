import Testing
@testable import WeaveDI

// The "did you mean" suggestions among many registrations: the same suggestions, found with
// less work (names read in one batch, types of unrelated kinds set aside, relatedness asked
// only of what could be among the three closest).

protocol Gadget: Sendable {}
private struct GadgetPart: Sendable {}
private enum GadgetKind: Sendable { case plain }
private class GadgetBase: @unchecked Sendable {}
private final class GadgetBaseImpl: GadgetBase, @unchecked Sendable {}
private final class GadgetOther: Sendable {}
private struct GadgetMade: Gadget {}
private struct GadgetBox<T>: Sendable {}

@Suite struct ManyRegistrationsSuggestionTests {
    /// A deterministic generator of small numbers.
    private struct Numbers {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % bound
        }
    }

    /// The suggestions as they were first made: every candidate measured within the name's
    /// limit, sorted by distance then name, and `keep` asked in that order until three are kept.
    private func reference(_ name: String, _ candidates: [String], keep: (String) -> Bool) -> [String] {
        let target = NameSimilarity.Compared(name)
        let limit = min(max(2, target.characters / 3), NameSimilarity.maximumEdits)
        var scored: [(String, Int)] = []
        for candidate in Set(candidates) where candidate != name {
            let other = NameSimilarity.Compared(candidate)
            if let equal = target.relation(to: other) {
                scored.append((candidate, equal ? 0 : 1))
            } else if let distance = NameSimilarity.editDistance(target.bytes, other.bytes, atMost: limit) {
                scored.append((candidate, distance))
            }
        }
        var kept: [String] = []
        for (candidate, _) in scored.sorted(by: { ($0.1, $0.0) < ($1.1, $1.0) }) where kept.count < 3 && keep(candidate) {
            kept.append(candidate)
        }
        return kept
    }

    /// Whichever order the candidates come in and whatever `keep` refuses, the three found with
    /// a limit that drops as they are found are the three that sorting every one finds; and
    /// `keep` is asked only about names that resemble the one asked for.
    @Test func theClosestThree_areThoseOfAFullSort_inAnyOrder() {
        var numbers = Numbers(state: 0x2545_F491_4F6C_DD1D)
        for round in 0..<400 {
            let alphabet = Array("abAB<>".utf8)
            func word(_ length: Int) -> String {
                String(decoding: (0..<length).map { _ in alphabet[numbers.next(alphabet.count)] }, as: UTF8.self)
            }
            let name = word(1 + numbers.next(12))
            var candidates = (0..<numbers.next(40)).map { _ in word(1 + numbers.next(14)) }
            // Some near the name: one edit, containing it, the name in another case.
            candidates += [name + "a", "b" + name, name.uppercased(), String(name.dropLast()) + "b"]
            let refused = Set(candidates.filter { _ in numbers.next(3) == 0 })
            var asked: [String] = []
            let found = NameSimilarity.suggestions(for: name, among: candidates) { candidate in
                asked.append(candidate)
                return !refused.contains(candidate)
            }
            #expect(found == reference(name, candidates) { !refused.contains($0) }, "round \(round): \(name) among \(candidates)")
            let resembling = Set(reference(name, candidates) { _ in true } + candidates.filter { candidate in
                reference(name, [candidate]) { _ in true } == [candidate]
            })
            #expect(asked.allSatisfy(resembling.contains), "round \(round): asked \(asked)")
        }
    }

    /// Rows kept from one comparison to the next (longer, shorter, holding anything) give the
    /// distance as fresh rows do.
    @Test func theBoundedDistance_inReusedRows_isTheDistance() {
        var numbers = Numbers(state: 0x9E37_79B9_7F4A_7C15)
        var scratch = NameSimilarity.EditScratch()
        for _ in 0..<3_000 {
            let a = (0..<numbers.next(30)).map { _ in UInt8(97 + numbers.next(3)) }
            let b = (0..<numbers.next(30)).map { _ in UInt8(97 + numbers.next(3)) }
            let limit = numbers.next(12)
            #expect(NameSimilarity.editDistance(a, b, atMost: limit, scratch: &scratch)
                == NameSimilarity.editDistance(a, b, atMost: limit), "\(a) \(b) \(limit)")
        }
    }

    /// The kinds alone set a pair aside only where the run time says they are unrelated: a
    /// struct, an enum or a class against another of them, not two classes.
    @Test func typesSetAsideByKind_areUnrelated() {
        let types: [Any.Type] = [
            GadgetPart.self, GadgetKind.self, GadgetBase.self, GadgetBaseImpl.self, GadgetOther.self, GadgetMade.self,
            GadgetBox<GadgetBaseImpl>.self, GadgetBox<GadgetBase>.self, [GadgetBaseImpl].self, [GadgetBase].self,
            GadgetBaseImpl?.self, GadgetBase?.self, (any Gadget).self, Any.self, AnyObject.self, (GadgetBaseImpl, Int).self,
            GadgetBase.Type.self, GadgetBaseImpl.Type.self, (any Gadget.Type).self, (@Sendable () -> Void).self,
        ]
        for a in types {
            for b in types where TypeRelation.plainlyUnrelated(a, b) {
                #expect(TypeRelation.related(a, b) == false, "\(a) \(b)")
            }
        }
        #expect(TypeRelation.plainlyUnrelated(GadgetPart.self, GadgetBox<GadgetBaseImpl>.self))
        #expect(TypeRelation.plainlyUnrelated(GadgetKind.self, GadgetBaseImpl.self))
        #expect(TypeRelation.plainlyUnrelated([GadgetBaseImpl].self, [GadgetBase].self))
        #expect(!TypeRelation.plainlyUnrelated(GadgetBaseImpl.self, GadgetBase.self))
        #expect(!TypeRelation.plainlyUnrelated(GadgetMade.self, (any Gadget).self))
        #expect(!TypeRelation.plainlyUnrelated(GadgetPart.self, GadgetPart.self))
        #expect(!TypeRelation.plainlyUnrelated(GadgetBaseImpl?.self, GadgetBase?.self))
    }

    /// Among many registrations of similar names, asked for a protocol, the conforming one is
    /// suggested and the structs that do not conform never; asked for a class, its subclass.
    @Test func amongManyRegistrations_onlyRelatedTypesAreSuggested() throws {
        let container = WeaveDI.Container()
        container.register(GadgetBox<Int>.self) { GadgetBox() }
        container.register(GadgetBox<String>.self) { GadgetBox() }
        container.register(GadgetPart.self) { GadgetPart() }
        container.register(GadgetKind.self) { .plain }
        container.register(GadgetMade.self) { GadgetMade() }
        container.register(GadgetBaseImpl.self) { GadgetBaseImpl() }
        container.register(GadgetOther.self) { GadgetOther() }
        func suggestions<T: Sendable>(_ type: T.Type) -> [String]? {
            do {
                _ = try container.require(type)
            } catch {
                if case let .notRegistered(_, suggestions, _) = error { return suggestions }
            }
            return nil
        }
        #expect(suggestions((any Gadget).self) == ["GadgetMade"])
        #expect(suggestions(GadgetBase.self) == ["GadgetBaseImpl"])
        #expect(suggestions(GadgetBox<Double>.self) == [])
    }
}
