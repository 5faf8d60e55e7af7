import Testing
import WeaveDI
import WeaveDIControl

/// A small deterministic generator (SplitMix64), so failures reproduce.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct JSONParserLimitsTests {
    private func failure(_ bytes: [UInt8], limits: JSONLimits = .init()) -> JSONParseError? {
        do {
            _ = try JSONValue.parse(bytes, limits: limits)
            Issue.record("expected an error")
            return nil
        } catch {
            return error
        }
    }

    @Test func deepNesting_isRefusedWithoutRecursion() {
        let error = failure([UInt8](repeating: UInt8(ascii: "["), count: 100_000))
        #expect(error?.description == "line 1, column 65: nesting deeper than 64 levels")
        let objects = failure(Array(String(repeating: "{\"a\":", count: 100_000).utf8))
        #expect(objects?.problem == "nesting deeper than 64 levels")
        #expect(objects?.offset == 64 * 5)
    }

    @Test func nestingAtTheLimit_isAccepted() throws {
        let text = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try JSONValue.parse(text).serialized == text)
        let tooDeep = "[" + text + "]"
        #expect(failure(Array(tooDeep.utf8))?.problem == "nesting deeper than 64 levels")
    }

    @Test func raisedDepthLimit_handlesDeepDocumentsIteratively() throws {
        let depth = 50_000
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        var value = try JSONValue.parse(text, limits: JSONLimits(maxDepth: depth))
        var levels = 0
        while case let .array(elements) = value, let first = elements.first {
            levels += 1
            value = first
        }
        #expect(levels == depth - 1)
    }

    @Test func documentSize_isLimited() {
        let error = failure(Array("[1,2,3]".utf8), limits: JSONLimits(maxBytes: 6))
        #expect(error?.problem == "document is larger than 6 bytes (7 bytes)")
    }

    @Test func stringLength_isLimitedAfterUnescaping() throws {
        let limits = JSONLimits(maxStringBytes: 4)
        #expect(try JSONValue.parse(#"["abcd","\u0041\u0042\u0043\u0044"]"#, limits: limits).serialized == #"["abcd","ABCD"]"#)
        #expect(failure(Array(#"[1, "abcde"]"#.utf8), limits: limits)?.description
            == "line 1, column 5: string is longer than 4 bytes")
        #expect(failure(Array(#"{"\n\n\n\n\n":1}"#.utf8), limits: limits)?.problem == "string is longer than 4 bytes")
    }

    @Test func valueCount_isLimited_countingEveryValueButKeys() throws {
        // 7 values: the object, the array, 1, "a", {}, true and null; the key is none.
        let text = #"{"k":[1,"a",{},true,null]}"#
        #expect(try JSONValue.parse(text, limits: JSONLimits(maxValues: 7)).serialized == text)
        #expect(failure(Array(text.utf8), limits: JSONLimits(maxValues: 6))?.description
            == "line 1, column 21: more than 6 values in the document")
        // A flat array of 0s at the limit and one over it, the array itself counted.
        let zeros = { (count: Int) in "[" + Array(repeating: "0", count: count).joined(separator: ",") + "]" }
        let limits = JSONLimits(maxValues: 16_384)
        #expect(try JSONValue.parse(zeros(16_383), limits: limits).arrayValue?.count == 16_383)
        let over = failure(Array(zeros(16_384).utf8), limits: limits)
        #expect(over?.problem == "more than 16384 values in the document")
        #expect(over?.offset == 1 + 2 * 16_383, "at the value past the limit")
    }

    @Test func largeDocuments_parseInLinearTime() throws {
        // 200,000 members and a 2 MB escaped string: quadratic behaviour would take minutes.
        let members = (0..<200_000).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let object = try JSONValue.parse("{" + members + "}")
        #expect(object.objectMembers?.count == 200_000)
        let escaped = "\"" + String(repeating: "\\n", count: 1_000_000) + "\""
        let string = try JSONValue.parse(escaped, limits: JSONLimits(maxStringBytes: 2_000_000))
        #expect(string.stringValue?.utf8.count == 1_000_000)
    }

    @Test func randomGarbage_neverCrashes() {
        var generator = SeededGenerator(seed: 0x5EED)
        let alphabet = Array(#"{}[]:,"\-+.eE0123456789 truefalsnul\u"#.utf8) + [0x0A, 0x00, 0xC3, 0xA9, 0xED, 0xF4, 0xFF]
        let seed = Array(#"{"a":[1,-2.5e3,"x\u00e9\n",true,null],"b":{"c":"😀"}}"#.utf8)
        var accepted = 0
        var rejected = 0
        for round in 0..<4000 {
            var input: [UInt8]
            switch round % 3 {
            case 0:
                input = (0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            case 1:
                input = (0..<Int.random(in: 0...64, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            default:
                input = seed
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    let index = Int.random(in: 0..<input.count, using: &generator)
                    input[index] = alphabet.randomElement(using: &generator)!
                }
            }
            do {
                let value = try JSONValue.parse(input, limits: JSONLimits(maxDepth: 8))
                accepted += 1
                // Whatever is accepted must survive a round trip through the serializer.
                #expect(try JSONValue.parse(value.serialized) == value)
            } catch {
                rejected += 1
                #expect(error.offset >= 0 && error.offset <= input.count)
                #expect(error.line >= 1 && error.column >= 1 && !error.problem.isEmpty)
            }
        }
        #expect(accepted > 0)
        #expect(rejected > 0)
    }
}
