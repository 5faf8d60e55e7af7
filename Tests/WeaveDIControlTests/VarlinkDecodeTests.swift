import Testing
import WeaveDI
import WeaveDIControl

/// Method names follow varlink's grammar: `interface.Method`, the interface reverse-domain.
@Suite struct VarlinkMethodNameTests {
    @Test func qualifiedNames_areAcceptedAndOthersRefused() {
        let accepted = [
            "io.weavedi.Daemon.Ping", "org.varlink.service.GetInfo", "a.b.C", "x.y.GetHealth2", "a-b.c-d.E", "Io.Example.P",
            "a.1b.C", "a--b.c.D",
        ]
        let refused = [
            "Ping", ".Ping", "a.", "a.B", "a.b", "a.b.c", "a.b.B_c", "a.b.B-c", "a.b.1B", "a.b.B c", "a.b.B.", "a.b.B\r\n",
            "a.b.É", "é.b.Ping", "a.b.Bé", "-a.b.C", "a-.b.C", "a.-b.C", "a.b-.C", "a..b.C", "1a.b.C", "a b.c.D", "a.b..C",
        ]
        for name in accepted {
            let message = Array(JSONValue.object([("method", .string(name))]).serialized.utf8)
            #expect((try? VarlinkCall.decode(message))?.method == name, "\(name)")
        }
        for name in refused {
            let message = Array(JSONValue.object([("method", .string(name))]).serialized.utf8)
            #expect((try? VarlinkCall.decode(message)) == nil, "\(name)")
        }
    }

    /// A refused method name is quoted (escaped, shortened past 60 characters) and the part at
    /// fault named.
    @Test func aRefusedMethodName_isNamed_withThePartAtFault() {
        func reason(_ name: String) -> String? {
            do {
                _ = try VarlinkCall.decode(Array(JSONValue.object([("method", .string(name))]).serialized.utf8))
                return nil
            } catch { return error.reason }
        }
        let prefix = #""method" must be an interface name and a method name joined by a dot, such as "io.weavedi.Daemon.Ping": "#
        #expect(reason("Ping") == prefix + #""Ping" is no method: no dot between an interface name and a method name"#)
        #expect(reason("x.y.ping") == prefix + #""x.y.ping" is no method: the method name "ping" is none "#
            + #"(an ASCII capital letter, then ASCII letters and digits, such as "Ping")"#)
        #expect(reason("x\r\n.Ping") == prefix + #""x\r\n.Ping" is no method: the interface name "x\r\n" is none (two or more "#
            + #"parts joined by dots, of ASCII letters, digits and '-', the first part starting with a letter, none starting "#
            + #"or ending with '-', such as "io.weavedi.Daemon")"#)
        let long = String(repeating: "a", count: 100) + ".Ping"
        #expect(reason(long)?.hasPrefix(prefix + "\"" + String(repeating: "a", count: 57) + "...\" (105 characters) is no method: "
            + "the interface name \"" + String(repeating: "a", count: 57) + "...\" (100 characters) is none") == true)
        #expect((try? VarlinkCall.decode(Array(#"{"method":5}"#.utf8))) == nil)
    }

    /// A call holds `VarlinkCall.maximumValues` JSON values at most, by default as in the
    /// daemon: a `tags` list of tiny elements filling the message size costs more to parse
    /// than any real call.
    @Test func aCallOfMoreValuesThanTheLimit_isRefused() throws {
        // The call, its method, its parameters and the tags list: 4 values beside the tags.
        func call(tags: Int) -> [UInt8] {
            Array((#"{"method":"io.weavedi.Daemon.GetHealth","parameters":{"tags":["#
                + Array(repeating: #""t""#, count: tags).joined(separator: ",") + "]}}").utf8)
        }
        #expect(VarlinkCall.maximumValues == 16_384)
        let atTheLimit = try VarlinkCall.decode(call(tags: VarlinkCall.maximumValues - 4))
        #expect(atTheLimit.parameter("tags")?.arrayValue?.count == 16_380)
        do {
            _ = try VarlinkCall.decode(call(tags: VarlinkCall.maximumValues - 3))
            Issue.record("decoded")
        } catch {
            #expect(error.name == "org.varlink.service.InvalidParameter")
            #expect(error.reason == "not a valid JSON object: line 1, column \(63 + 4 * 16_380): more than 16384 values in the document")
        }
    }

    @Test func anUnknownFieldOfACall_isNamedShortened() {
        let name = String(repeating: "x", count: 1_000)
        do {
            _ = try VarlinkCall.decode(Array(#"{"method":"a.b.C","\#(name)":1}"#.utf8))
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
