import Testing
import WeaveDI
import WeaveDIControl

/// Method names: the ASCII fast path gives the answers of the Unicode rules.
@Suite struct VarlinkMethodNameTests {
    @Test func qualifiedNames_areAcceptedAndOthersRefused() {
        let accepted = ["io.weavedi.Daemon.Ping", "a.B", "a.B1", "x.y.GetHealth2", "a.É", "é.Ping", "a.Bé"]
        let refused = ["Ping", ".Ping", "a.", "a.b", "a.B_c", "a.B-c", "a.1B", "a.B c", "a.B.", "a.B\r\n", "a.e\u{301}"]
        for name in accepted {
            let message = Array(JSONValue.object([("method", .string(name))]).serialized.utf8)
            #expect((try? VarlinkCall.decode(message))?.method == name, "\(name)")
        }
        for name in refused {
            let message = Array(JSONValue.object([("method", .string(name))]).serialized.utf8)
            #expect((try? VarlinkCall.decode(message)) == nil, "\(name)")
        }
    }

    @Test func anUnknownFieldOfACall_isNamedShortened() {
        let name = String(repeating: "x", count: 1_000)
        do {
            _ = try VarlinkCall.decode(Array(#"{"method":"a.B","\#(name)":1}"#.utf8))
            Issue.record("decoded")
        } catch {
            #expect(error.reason == #"unknown field ""# + String(repeating: "x", count: 57)
                + #"..." (1000 characters) in a call (method, parameters, oneway, more, upgrade)"#)
        }
    }

    @Test func keysThatDifferInTheirScalars_areNoDuplicates() throws {
        // RFC 8259 compares names by code unit; Swift's String equality by canonical equivalence,
        // under which "é" precomposed and "e" with a combining accent, or the Kelvin sign and
        // "K", are one string.
        for (first, second) in [("\u{E9}", "e\u{301}"), ("\u{212A}", "K")] {
            let small = try JSONValue.parse(#"{"\#(first)":1,"\#(second)":2}"#)
            #expect(small.objectMembers?.map(\.0.unicodeScalars.count) == [first.unicodeScalars.count, second.unicodeScalars.count])
            let padding = (0..<20).map { "\"k\($0)\":0," }.joined()
            let large = try JSONValue.parse(#"{\#(padding)"\#(first)":1,"\#(second)":2}"#)
            #expect(large.objectMembers?.count == 22)
            #expect((try? JSONValue.parse(#"{\#(padding)"\#(first)":1,"\#(first)":2}"#)) == nil)
        }
    }

    @Test func duplicateKeys_areRefusedInSmallAndLargeObjects() {
        #expect((try? JSONValue.parse(#"{"a":1,"b":2,"a":3}"#)) == nil)
        let many = (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        #expect((try? JSONValue.parse("{\(many)}")) != nil)
        #expect((try? JSONValue.parse("{\(many),\"k3\":0}")) == nil)
        #expect((try? JSONValue.parse("{\(many),\"k39\":0}")) == nil)
        #expect((try? JSONValue.parse("{\(many),\"k40\":0}")) != nil)
    }
}
