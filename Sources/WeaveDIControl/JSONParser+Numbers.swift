import WeaveDI

/// Numbers: the RFC 8259 grammar, `Int` when exact, otherwise a finite `Double`, or the
/// number as written when neither holds it (`JSONValue.number`); a `Double` without a fraction
/// only for a number whose value, as written, is a whole number.
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
        var exponentStart = position
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard let digit = peek(), Self.isDigit(digit) else {
                throw error("expected a digit in the exponent")
            }
            exponentStart = position
            skipDigits()
        }
        if isInteger, let exact = exactInteger(from: integerStart, to: integerEnd, negative: negative) {
            // Int has no negative zero: `-0` is the Double -0.0, so that a message can quote it.
            return exact == 0 && negative ? .double(-0.0) : .int(exact)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        // An integer beyond Int, a number beyond Double's range, or one that Double would
        // round to 0, is kept as written: rounded, a message could not quote it. So is a
        // number that is not whole but that Double rounds to a whole number
        // (`0.99999999999999999`, `500.00000000000001`): as a Double, it would be taken for an
        // integer. Only such a rounding pays for the second look at the digits.
        guard !isInteger, let double = Double(text), double.isFinite,
            double != 0 || !hasNonzeroDigit(from: integerStart, to: mantissaEnd),
            double.rounded(.towardZero) != double
                || isWholeNumber(integer: integerStart..<integerEnd, fraction: integerEnd..<mantissaEnd, exponentDigits: exponentStart..<position)
        else {
            return .number(JSONValue.NumberLiteral(unchecked: text))
        }
        return .double(double)
    }

    /// Whether the number written with these digits (the fraction's range starts at its
    /// decimal point, or is empty; the exponent's holds its digits, after any sign) has a whole
    /// value: exactly, in decimal, as the digits say, whatever a `Double` rounds it to.
    private func isWholeNumber(integer: Range<Int>, fraction: Range<Int>, exponentDigits: Range<Int>) -> Bool {
        let digits = Self.isDigit
        // The last digit other than 0 sets the places after the point that the exponent must
        // shift away: negative when the integer part ends in zeros.
        guard let last = bytes[integer.lowerBound..<fraction.upperBound].lastIndex(where: { digits($0) && $0 != UInt8(ascii: "0") })
        else { return true }  // zero
        let places = last < integer.upperBound ? -(integer.upperBound - 1 - last) : last - fraction.lowerBound
        // Past 2^40 the exponent is clamped: no document holds that many digits to shift.
        var exponent = 0
        for index in exponentDigits { exponent = Swift.min(exponent * 10 + Int(bytes[index] - UInt8(ascii: "0")), 1 << 40) }
        if exponentDigits.lowerBound > 0, bytes[exponentDigits.lowerBound - 1] == UInt8(ascii: "-") { exponent = -exponent }
        return exponent >= places
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
