/// A JSON value with ordered object keys, for the documented diagnostic shapes
/// (`{"issues":[...]}`, `{"componentCount":N,...}`) without Foundation.
public enum JSONValue: Sendable, Equatable {
    /// A string.
    case string(String)
    /// An integer.
    case int(Int)
    /// A number with a fraction or an exponent (never NaN or infinite in valid JSON).
    case double(Double)
    /// A number kept as written, because neither `.int` nor `.double` holds it: an integer
    /// beyond `Int` (`123456789012345678901234567890`), a number beyond `Double`'s range
    /// (`1e400`), one so small that it would round to 0 (`1e-400`), or one not whole that it
    /// would round to a whole number (`0.99999999999999999`). Parsing makes these, so that a
    /// message can quote such a number as its writer wrote it, and none is taken for another.
    case number(NumberLiteral)
    /// A boolean.
    case bool(Bool)
    /// An array.
    case array([JSONValue])
    /// An object whose keys keep their order.
    case object([(String, JSONValue)])
    /// null.
    case null

    /// The compact JSON text.
    public var serialized: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case let .string(s): JSONValue.quote(s, into: &out)
        case let .int(i): out += String(i)
        case let .double(d): out += d.isFinite ? String(d) : "null"
        case let .number(literal): out += literal.text
        case let .bool(b): out += b ? "true" : "false"
        case .null: out += "null"
        case let .array(items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case let .object(members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                JSONValue.quote(key, into: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    private static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.serialized == rhs.serialized }

    /// `text` as a JSON string to show in a message (a log line, an error on a terminal): what
    /// JSON escapes (quotes, backslashes, C0 controls), and what JSON leaves as is but a
    /// terminal or a log viewer acts on, written as `\uXXXX` too: the C1 controls, the line and
    /// paragraph separators and the bidirectional controls, which would reorder what follows.
    /// Text from outside can then neither forge a line nor disguise one.
    package static func quotedForDisplay(_ text: String) -> String {
        var out = ""
        for scalar in JSONValue.string(text).serialized.unicodeScalars {
            switch scalar.value {
            case 0x80...0x9F, 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// `text` as a JSON string, to quote in a message (an error's, a log line's), escaped for
    /// display (`quotedForDisplay`); past 60 Unicode scalars, its first 57 then `...` inside
    /// the quotes, and after them how long it is, so that a name of a megabyte makes no message
    /// of a megabyte. Scalars are counted, not characters: one character may be made of any
    /// number of scalars. Every value from outside that a message quotes, the library's and
    /// the daemon's alike, is quoted so.
    package static func quotedForMessage(_ text: String) -> String {
        quotedForMessage(text, shortenedPast: 60)
    }

    /// A path from outside (a configuration's, a command line's), quoted as
    /// `quotedForMessage` quotes a value but shortened only past 4,096 Unicode scalars (Linux's
    /// `PATH_MAX`): a path is told apart from another by any of its parts, often the last, so
    /// the whole of any path the system could take is shown.
    package static func quotedPathForMessage(_ path: String) -> String {
        quotedForMessage(path, shortenedPast: 4096)
    }

    /// A path from outside that a message shows unquoted at its head (a configuration file's
    /// given with `--config`, weavedictl's `--socket`): as it is up to 4,096 Unicode scalars,
    /// past that cut as `quotedPathForMessage` cuts, its first 4,093, `...` and its length
    /// (`/srv/aaa... (5000 characters)`). Not escaped: the message is, where it is written.
    package static func shortenedPathForMessage(_ path: String) -> String {
        guard let cut = cut(path, past: 4096) else { return path }
        return cut.head + "... (\(cut.length) characters)"
    }

    private static func quotedForMessage(_ text: String, shortenedPast limit: Int) -> String {
        guard let cut = cut(text, past: limit) else { return quotedForDisplay(text) }
        return quotedForDisplay(cut.head + "...") + " (\(cut.length) characters)"
    }

    /// Of `text` past `limit` Unicode scalars, its first `limit - 3` (room for `...`) and its
    /// length in scalars; nil when it is no longer than `limit`.
    private static func cut(_ text: String, past limit: Int) -> (head: String, length: Int)? {
        let scalars = text.unicodeScalars
        guard scalars.count > limit else { return nil }
        var head = String.UnicodeScalarView()
        head.append(contentsOf: scalars.prefix(limit - 3))
        return (String(head), scalars.count)
    }
}

extension JSONValue {
    /// The text of a JSON number, as written: always valid JSON (RFC 8259's grammar,
    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`).
    public struct NumberLiteral: Sendable, Hashable, CustomStringConvertible {
        /// The number's text.
        public let text: String

        /// `text`, when it is a JSON number; nil otherwise (`+1`, `01`, `1.`, `.5`, `NaN`).
        public init?(_ text: String) {
            guard Self.isNumber(text.utf8) else { return nil }
            self.text = text
        }

        /// `text`, which the caller has checked to be a JSON number.
        package init(unchecked text: String) {
            self.text = text
        }

        /// The text.
        public var description: String { text }

        private static func isNumber(_ utf8: String.UTF8View) -> Bool {
            var bytes = utf8[...]
            func digits() -> Int {
                let count = bytes.prefix(while: { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }).count
                bytes = bytes.dropFirst(count)
                return count
            }
            if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            let leadingZero = bytes.first == UInt8(ascii: "0")
            let integerDigits = digits()
            guard integerDigits > 0, !leadingZero || integerDigits == 1 else { return false }
            if bytes.first == UInt8(ascii: ".") {
                bytes = bytes.dropFirst()
                guard digits() > 0 else { return false }
            }
            if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
                bytes = bytes.dropFirst()
                if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
                guard digits() > 0 else { return false }
            }
            return bytes.isEmpty
        }
    }
}
