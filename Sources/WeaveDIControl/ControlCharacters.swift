import WeaveDI

extension String {
    /// The string with its control characters written as escapes (`\n`, `\r`, `\t`, and
    /// `\u{1B}` for the others: C0, DEL and C1, the line and paragraph separators U+2028 and
    /// U+2029, and the bidirectional controls: U+061C, U+200E, U+200F, U+202A to U+202E and
    /// U+2066 to U+2069), for a terminal or a log line. Text from outside (a file name in a
    /// mirror's report, a method name a client sent) can then neither start a line of its own,
    /// nor move the cursor or change colours, nor reorder what follows it on its line. The
    /// library's health lines escape the same way (`ControlCharacters`).
    public var escapingControlCharacters: String {
        ControlCharacters.escaped(self)
    }
}
