extension String {
    /// The string with its control characters written as escapes (`\n`, `\r`, `\t`, and
    /// `\u{1B}` for the others: C0, DEL and C1, the line and paragraph separators U+2028 and
    /// U+2029, and the bidirectional controls: U+061C, U+200E, U+200F, U+202A to U+202E and
    /// U+2066 to U+2069), for a terminal or a log line. Text from outside (a file name in a
    /// mirror's report, a method name a client sent) can then neither start a line of its own,
    /// nor move the cursor or change colours, nor reorder what follows it on its line.
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
    /// C0 controls, DEL and C1 controls, the line and paragraph separators, and the
    /// bidirectional formatting characters (marks, embeddings, overrides, isolates).
    fileprivate var isControl: Bool {
        switch value {
        case 0..<0x20, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
