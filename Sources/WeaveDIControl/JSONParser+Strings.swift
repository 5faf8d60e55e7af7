/// String literals: escapes, surrogate pairs and UTF-8 validation.
extension JSONParser {
    /// Parses the string literal whose opening quote is at `position`.
    mutating func parseString() throws(JSONParseError) -> String {
        let opening = position
        position += 1
        let start = position
        // Fast path: no escapes, so the decoded string is exactly the input bytes.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                try checkLength(position - start, opening: opening)
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            try skipCharacter()
        }
        guard position < bytes.count else { throw error("unterminated string", at: opening) }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                try checkLength(scratch.count, opening: opening)
                position += 1
                return String(decoding: scratch, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                guard position + 1 < bytes.count else { break }
                try appendEscape()
            } else {
                let characterStart = position
                try skipCharacter()
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[characterStart..<position]))
            }
            if scratch.count > limits.maxStringBytes { try checkLength(scratch.count, opening: opening) }
        }
        throw error("unterminated string", at: opening)
    }

    private func checkLength(_ length: Int, opening: Int) throws(JSONParseError) {
        if length > limits.maxStringBytes {
            throw error("string is longer than \(limits.maxStringBytes) bytes", at: opening)
        }
    }

    /// Steps over one unescaped character, rejecting control characters and invalid UTF-8.
    private mutating func skipCharacter() throws(JSONParseError) {
        let byte = bytes[position]
        if byte < 0x20 {
            throw error("unescaped control character U+\(Self.hex(UInt32(byte))) in a string")
        }
        if byte < 0x80 {
            position += 1
            return
        }
        position += try validatedSequenceLength(at: position)
    }

    /// The length of the well-formed UTF-8 sequence at `index` (Unicode table 3-7), or an error.
    func validatedSequenceLength(at index: Int) throws(JSONParseError) -> Int {
        let lead = bytes[index]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0x80...0xBF: throw error("invalid UTF-8: unexpected continuation byte 0x\(Self.hex(UInt32(lead), digits: 2))", at: index)
        case 0xC0, 0xC1: throw error("invalid UTF-8: overlong encoding", at: index)
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xED: length = 3; high = 0x9F
        case 0xE1...0xEF: length = 3
        case 0xF0: length = 4; low = 0x90
        case 0xF4: length = 4; high = 0x8F
        case 0xF1...0xF3: length = 4
        default: throw error("invalid UTF-8: byte 0x\(Self.hex(UInt32(lead), digits: 2)) never occurs in UTF-8", at: index)
        }
        for step in 1..<length {
            guard index + step < bytes.count else { throw error("invalid UTF-8: incomplete sequence", at: index) }
            let byte = bytes[index + step]
            let (min, max) = step == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
            guard byte >= min && byte <= max else {
                if step == 1 && byte >= 0x80 && byte <= 0xBF {
                    switch lead {
                    case 0xE0, 0xF0: throw error("invalid UTF-8: overlong encoding", at: index)
                    case 0xED: throw error("invalid UTF-8: encoded surrogate", at: index)
                    default: throw error("invalid UTF-8: code point above U+10FFFF", at: index)
                    }
                }
                throw error("invalid UTF-8: incomplete sequence", at: index)
            }
        }
        return length
    }

    /// The scalar encoded at `index` if it is well-formed UTF-8, for error messages.
    func decodeScalar(at index: Int) -> Unicode.Scalar? {
        guard let length = try? validatedSequenceLength(at: index) else { return nil }
        var value = UInt32(bytes[index]) & (0xFF >> UInt32(length + 1))
        for step in 1..<length { value = value << 6 | UInt32(bytes[index + step] & 0x3F) }
        return Unicode.Scalar(value)
    }

    /// Decodes the escape sequence at `position` into `scratch`.
    private mutating func appendEscape() throws(JSONParseError) {
        let escapeStart = position
        let code = bytes[position + 1]
        position += 2
        let simple: UInt8
        switch code {
        case UInt8(ascii: "\""): simple = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): simple = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): simple = UInt8(ascii: "/")
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            appendScalar(try parseUnicodeEscape(escapeStart: escapeStart))
            return
        default:
            let shown = code >= 0x21 && code < 0x7F ? "\\\(Unicode.Scalar(code))" : "\\ followed by byte 0x\(Self.hex(UInt32(code), digits: 2))"
            throw error("invalid escape sequence \(shown)", at: escapeStart)
        }
        scratch.append(simple)
    }

    /// Reads the four hex digits after `\u` (and a second `\uXXXX` for a surrogate pair).
    private mutating func parseUnicodeEscape(escapeStart: Int) throws(JSONParseError) -> Unicode.Scalar {
        let first = try readHex4(escapeStart: escapeStart)
        switch first {
        case 0xD800...0xDBFF:
            guard position + 1 < bytes.count,
                  bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
            else { throw error("unpaired surrogate \\u\(Self.hex(first)) (a high surrogate must be followed by a \\u low surrogate)", at: escapeStart) }
            let secondStart = position
            position += 2
            let second = try readHex4(escapeStart: secondStart)
            guard (0xDC00...0xDFFF).contains(second) else {
                throw error("unpaired surrogate \\u\(Self.hex(first)) (followed by \\u\(Self.hex(second)), not a low surrogate)", at: escapeStart)
            }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
        case 0xDC00...0xDFFF:
            throw error("unpaired surrogate \\u\(Self.hex(first)) (a low surrogate without a high surrogate before it)", at: escapeStart)
        default:
            return Unicode.Scalar(first)!
        }
    }

    private mutating func readHex4(escapeStart: Int) throws(JSONParseError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard position < bytes.count, let digit = Self.hexValue(bytes[position]) else {
                throw error("invalid \\u escape: expected 4 hexadecimal digits", at: escapeStart)
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private mutating func appendScalar(_ scalar: Unicode.Scalar) {
        for unit in UTF8.encode(scalar)! { scratch.append(unit) }
    }
}
