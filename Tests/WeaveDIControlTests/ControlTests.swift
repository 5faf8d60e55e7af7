import Testing
import WeaveDIControl

@Suite struct ControlTests {
    @Test func interfaceName() { #expect(WeaveDIControl.interface == "io.weavedi.Daemon") }

    /// Types, methods and errors of a varlink interface share one name space: a type named as a
    /// method (`type Fix` beside `method Fix`) makes libvarlink refuse the whole interface, and
    /// the Python `varlink` package read `[]Fix` as the method, refusing every reply that had one.
    @Test(arguments: [DaemonInterface.description, DaemonInterface.serviceDescription])
    func everyMemberName_isUsedOnce(description: String) {
        var seen: [String: Int] = [:]
        for line in description.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "(" })
            guard words.count >= 2, ["type", "method", "error"].contains(words[0]) else { continue }
            seen[String(words[1]), default: 0] += 1
        }
        #expect(seen.count >= 6, "\(seen)")
        #expect(seen.filter { $0.value > 1 }.isEmpty, "\(seen.filter { $0.value > 1 })")
    }
}

@Suite struct ControlCharacterTests {
    @Test func controlCharacters_areEscaped_otherTextIsKept() {
        #expect("plain café ✓".escapingControlCharacters == "plain café ✓")
        #expect("a\nb\rc\td".escapingControlCharacters == #"a\nb\rc\td"#)
        // "\r\n" is one Character; its scalars are escaped one by one.
        #expect("x\r\ny".escapingControlCharacters == #"x\r\ny"#)
        #expect("esc\u{1B}[31mRED\u{0}\u{7F}\u{9B}".escapingControlCharacters == #"esc\u{1B}[31mRED\u{0}\u{7F}\u{9B}"#)
    }

    /// Bidirectional controls and the Unicode line separators move or break a log line on a
    /// terminal as surely as a line feed: a hostile name (`evil\u{202E}txt.exe`) is escaped.
    @Test func bidiControlsAndLineSeparators_areEscaped() {
        for value: UInt32 in [0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069] {
            let scalar = Unicode.Scalar(value)!
            let escaped = "a\(Character(scalar))b".escapingControlCharacters
            #expect(escaped == "a\\u{\(String(value, radix: 16, uppercase: true))}b", "U+\(String(value, radix: 16))")
        }
        #expect("evil\u{202E}txt.exe".escapingControlCharacters == #"evil\u{202E}txt.exe"#)
        // Their neighbours (zero-width joiner, word joiner, Arabic text) stay.
        #expect("a\u{200D}b\u{2060}c عربي".escapingControlCharacters == "a\u{200D}b\u{2060}c عربي")
    }
}
