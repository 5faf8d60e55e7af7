import WeaveDI

/// Numbers: the RFC 8259 grammar, `Int` when exact, otherwise a finite `Double`, or the
/// number as written when neither holds it (`JSONValue.number`).
extension JSONParser {
    /// Parses `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` starting at `position`.
    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = position
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        guard let first = peek(), Self.isDigit(first) else {
            throw error(negative ? "expected a digit after '-'" : "expected a digit")
        }
        let integerStart = position
        position += 1
        if first == UInt8(ascii: "0") {
            if let next = peek(), Self.isDigit(next) {
                throw error("leading zeros are not allowed in numbers", at: integerStart)
            }
        } else {
            skipDigits()
        }
        let integerEnd = position
        var isInteger = true
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard let digit = peek(), Self.isDigit(digit) else {
                throw error("expected a digit after the decimal point")
            }
            skipDigits()
        }
        let mantissaEnd = position
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard let digit = peek(), Self.isDigit(digit) else {
                throw error("expected a digit in the exponent")
            }
            skipDigits()
        }
        if isInteger, let exact = exactInteger(from: integerStart, to: integerEnd, negative: negative) {
            return .int(exact)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        // An integer beyond Int, a number beyond Double's range, or one that Double would
        // round to 0, is kept as written: rounded, a message could not quote it.
        guard !isInteger, let double = Double(text), double.isFinite,
            double != 0 || !hasNonzeroDigit(from: integerStart, to: mantissaEnd)
        else {
            return .number(JSONValue.NumberLiteral(unchecked: text))
        }
        return .double(double)
    }

    /// Whether a digit other than 0 lies between `start` and `end` (a decimal point may too).
    private func hasNonzeroDigit(from start: Int, to end: Int) -> Bool {
        bytes[start..<end].contains { $0 > UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// The digits as an `Int`, or nil when they do not fit.
    private func exactInteger(from start: Int, to end: Int, negative: Bool) -> Int? {
        // Accumulate negatively so that Int.min, whose magnitude exceeds Int.max, fits.
        var value = 0
        for index in start..<end {
            let digit = Int(bytes[index] - UInt8(ascii: "0"))
            let (scaled, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, underflow) = scaled.subtractingReportingOverflow(digit)
            if overflow || underflow { return nil }
            value = next
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    private mutating func skipDigits() {
        while position < bytes.count, Self.isDigit(bytes[position]) { position += 1 }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
