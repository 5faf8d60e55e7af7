import WeaveDI

/// A strict RFC 8259 parser over a contiguous UTF-8 buffer.
///
/// Containers are tracked on an explicit stack instead of by recursion, so a document nested
/// 100,000 levels deep is refused by the depth limit rather than crashing the process. Strings
/// without escapes are decoded straight from the input; others go through one reused scratch
/// buffer, so no per-character `String`s are built.
struct JSONParser {
    /// An array or object whose members are still being read.
    struct Frame {
        var isObject: Bool
        var elements: [JSONValue] = []
        var members: [(String, JSONValue)] = []
        /// The keys of `members`, once there are too many to compare one by one.
        var keys: Set<Key> = []
        var key = ""

        /// Records `key` for the next member; false when the object already has it. Keys are
        /// compared by their bytes, as RFC 8259 compares names: `String`'s `==` follows
        /// canonical equivalence, under which "é" and "e" with a combining accent are equal.
        mutating func insertKey(_ key: String) -> Bool {
            if members.count < 16 { return !members.contains { $0.0.utf8.elementsEqual(key.utf8) } }
            if keys.isEmpty { keys = Set(members.map { Key(text: $0.0) }) }
            return keys.insert(Key(text: key)).inserted
        }
    }

    /// An object key hashed and compared by its UTF-8 bytes.
    struct Key: Hashable {
        var text: String

        static func == (lhs: Key, rhs: Key) -> Bool { lhs.text.utf8.elementsEqual(rhs.text.utf8) }

        func hash(into hasher: inout Hasher) {
            var text = text
            text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    let bytes: UnsafeBufferPointer<UInt8>
    let limits: JSONLimits
    var position = 0
    var scratch: [UInt8] = []

    init(bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    /// Parses the whole buffer as exactly one value surrounded by optional whitespace.
    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        var stack: [Frame] = []
        var value: JSONValue
        var values = 0
        nextValue: while true {
            skipWhitespace()
            guard position < bytes.count else {
                throw error(bytes.isEmpty ? "empty document, expected a value" : "unexpected end of input, expected a value")
            }
            values += 1
            if values > limits.maxValues { throw error("more than \(limits.maxValues) values in the document") }
            switch bytes[position] {
            case UInt8(ascii: "{"):
                try checkDepth(stack.count)
                position += 1
                skipWhitespace()
                if peek() == UInt8(ascii: "}") {
                    position += 1
                    value = .object([])
                } else {
                    var frame = Frame(isObject: true)
                    try parseMemberKey(into: &frame)
                    stack.append(frame)
                    continue nextValue
                }
            case UInt8(ascii: "["):
                try checkDepth(stack.count)
                position += 1
                skipWhitespace()
                if peek() == UInt8(ascii: "]") {
                    position += 1
                    value = .array([])
                } else {
                    stack.append(Frame(isObject: false))
                    continue nextValue
                }
            default:
                value = try parseScalar()
            }
            // Hand the finished value to its container, closing every container that ends here.
            while !stack.isEmpty {
                let top = stack.count - 1
                skipWhitespace()
                if stack[top].isObject {
                    let key = stack[top].key
                    stack[top].members.append((key, value))
                    switch peek() {
                    case UInt8(ascii: ","):
                        position += 1
                        skipWhitespace()
                        if peek() == UInt8(ascii: "}") { throw error("trailing comma before '}'") }
                        try parseMemberKey(into: &stack[top])
                        continue nextValue
                    case UInt8(ascii: "}"):
                        position += 1
                        value = .object(stack.removeLast().members)
                    default:
                        throw error("expected ',' or '}' after an object member")
                    }
                } else {
                    stack[top].elements.append(value)
                    switch peek() {
                    case UInt8(ascii: ","):
                        position += 1
                        skipWhitespace()
                        if peek() == UInt8(ascii: "]") { throw error("trailing comma before ']'") }
                        continue nextValue
                    case UInt8(ascii: "]"):
                        position += 1
                        value = .array(stack.removeLast().elements)
                    default:
                        throw error("expected ',' or ']' after an array element")
                    }
                }
            }
            skipWhitespace()
            if position < bytes.count {
                throw error("unexpected \(describeCurrent()) after the JSON value")
            }
            return value
        }
    }

    /// Reads `"key" :` into `frame`, rejecting a key the object already has.
    private mutating func parseMemberKey(into frame: inout Frame) throws(JSONParseError) {
        guard peek() == UInt8(ascii: "\"") else {
            throw error(position < bytes.count
                ? "expected a double-quoted object key, found \(describeCurrent())"
                : "unexpected end of input, expected an object key")
        }
        let keyOffset = position
        let key = try parseString()
        guard frame.insertKey(key) else {
            throw error("duplicate key \(JSONValue.quotedForMessage(key))", at: keyOffset)
        }
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after an object key") }
        position += 1
        frame.key = key
    }

    private func checkDepth(_ open: Int) throws(JSONParseError) {
        if open >= limits.maxDepth { throw error("nesting deeper than \(limits.maxDepth) levels") }
    }

    /// Parses a string, number or literal starting at `position`.
    private mutating func parseScalar() throws(JSONParseError) -> JSONValue {
        let byte = bytes[position]
        switch byte {
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return try parseLiteral()
        case UInt8(ascii: "/"):
            throw error("comments are not allowed in JSON")
        default:
            throw error("unexpected \(describeCurrent()), expected a value")
        }
    }

    /// Parses `true`, `false` or `null`; any other word (`NaN`, `Infinity`, `True`) is an error.
    private mutating func parseLiteral() throws(JSONParseError) -> JSONValue {
        let start = position
        var end = position
        while end < bytes.count, end - start < 32, Self.isLetter(bytes[end]) { end += 1 }
        let word = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        let value: JSONValue
        switch word {
        case "true": value = .bool(true)
        case "false": value = .bool(false)
        case "null": value = .null
        default: throw error("invalid literal '\(word)' (expected a value such as true, false or null)")
        }
        position = end
        return value
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// The byte at `position`, or nil at the end of the input.
    func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    /// Skips the four JSON whitespace characters: space, tab, line feed, carriage return.
    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    /// An error at `offset`, or at the current position.
    func error(_ problem: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(problem: problem, at: offset ?? position, in: bytes)
    }

    /// Names what is at `position` for an error message: `'x'`, `'“' (U+201C)`, `byte 0xFF`.
    func describeCurrent() -> String {
        guard position < bytes.count else { return "end of input" }
        let byte = bytes[position]
        if byte >= 0x21 && byte < 0x7F { return "character '\(Unicode.Scalar(byte))'" }
        if byte < 0x80 { return "character U+\(Self.hex(UInt32(byte)))" }
        if let scalar = decodeScalar(at: position) {
            return "character '\(scalar)' (U+\(Self.hex(scalar.value)))"
        }
        return "byte 0x\(Self.hex(UInt32(byte), digits: 2))"
    }

    /// Upper-case hexadecimal, zero-padded to `digits`.
    static func hex(_ value: UInt32, digits: Int = 4) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: Swift.max(0, digits - text.count)) + text
    }
}
