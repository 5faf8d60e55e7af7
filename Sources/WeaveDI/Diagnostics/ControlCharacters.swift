/// Control characters in text from outside, written as escapes for one line of a log or a
/// terminal: what the library's health lines and the daemon's log lines do alike.
package enum ControlCharacters {
    /// `text` with its control characters written as escapes (`\n`, `\r`, `\t`, and
    /// `\u{1B}` for the others: C0, DEL and C1, the line and paragraph separators U+2028 and
    /// U+2029, and the bidirectional controls: U+061C, U+200E, U+200F, U+202A to U+202E and
    /// U+2066 to U+2069). Text from outside (a path, a server's answer in an error) can then
    /// neither start a line of its own, nor move the cursor or change colours, nor reorder what
    /// follows it on its line.
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isControl(scalar): out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// C0 controls, DEL and C1 controls, the line and paragraph separators, and the
    /// bidirectional formatting characters (marks, embeddings, overrides, isolates).
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
