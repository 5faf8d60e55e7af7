import Testing
import WeaveDI
import WeaveDIControl

/// `serializedBytes` and `VarlinkReply.write(into:)` write the same bytes as the `String` path.
@Suite struct JSONBytesTests {
    static let values: [JSONValue] = [
        .null, .bool(true), .bool(false), .int(0), .int(7), .int(-7), .int(Int.max), .int(Int.min),
        .double(0), .double(-0.0), .double(1.5), .double(-2.25), .double(1795252332.9844217), .double(0.000318158),
        .double(1e-5), .double(1e16), .double(1e300), .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude),
        .double(.nan), .double(.infinity), .double(-.infinity),
        .string(""), .string("plain"), .string("quote \" backslash \\ slash /"),
        .string("\n\r\t\u{0}\u{1}\u{8}\u{c}\u{1f} \u{7f}"), .string("é ü 日本 🧵 e\u{301} \u{2028}"),
        .array([]), .object([]),
        .array([.int(1), .string("two"), .array([.null, .object([("k", .bool(false))])])]),
        .object([("z", .int(1)), ("a", .double(2.5)), ("\"key\"\n", .string("v")), ("nested", .object([("x", .array([.null]))]))]),
    ]

    @Test func serializedBytes_matchSerialized() {
        for value in Self.values {
            #expect(value.serializedBytes == Array(value.serialized.utf8), "\(value.serialized)")
            var prefixed: [UInt8] = [1, 2, 3]
            value.write(into: &prefixed)
            #expect(prefixed == [1, 2, 3] + Array(value.serialized.utf8))
        }
    }

    @Test func replies_encodeAsTheirJSONObject() throws {
        let replies = [
            VarlinkReply(),
            VarlinkReply(parameters: [("version", .string("0.1.0")), ("pid", .int(42)), ("uptime", .double(1.25))]),
            VarlinkReply(parameters: [("run", .null), ("progress", .object([("files", .int(3))]))], continues: true),
            VarlinkFailure.invalidParameter("limit").reply,
            VarlinkReply(parameters: Self.values.enumerated().map { ("p\($0.offset)", $0.element) }, continues: true, error: "x.Y"),
        ]
        for reply in replies {
            var members: [(String, JSONValue)] = []
            if let error = reply.error { members.append(("error", .string(error))) }
            members.append(("parameters", .object(reply.parameters)))
            if reply.continues { members.append(("continues", .bool(true))) }
            let expected = JSONValue.object(members).serialized
            #expect(String(decoding: reply.encoded(), as: UTF8.self) == expected)
            let decoded = try VarlinkReply.decode(reply.encoded())
            #expect(decoded.error == reply.error && decoded.continues == reply.continues)
        }
    }

    @Test func calls_encodeAsTheirJSONObject() {
        let call = VarlinkCall(method: "io.weavedi.Daemon.GetHealth", parameters: [("tags", .array([.string("liveness")]))], oneway: true, more: true)
        #expect(String(decoding: call.encoded(), as: UTF8.self)
            == #"{"method":"io.weavedi.Daemon.GetHealth","parameters":{"tags":["liveness"]},"oneway":true,"more":true}"#)
    }
}
