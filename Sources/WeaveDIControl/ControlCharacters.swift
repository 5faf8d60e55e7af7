extension String {
    /// The string with its control characters written as escapes (`\n`, `\r`, `\t`, and
    /// `\u{1B}` for the others: C0, DEL and C1), for a terminal or a log line. Text from outside
    /// (a file name in a mirror's report, a method name a client sent) can then neither start a
    /// line of its own nor move the cursor or change colours.
    public var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: \.isControl) else { return self }
        var out = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.isControl: out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension Unicode.Scalar {
    /// C0 controls, DEL and C1 controls.
    fileprivate var isControl: Bool { value < 0x20 || (0x7F...0x9F).contains(value) }
}
