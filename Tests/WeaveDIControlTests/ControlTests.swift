import Testing
import WeaveDIControl

@Suite struct ControlTests {
    @Test func interfaceName() { #expect(WeaveDIControl.interface == "io.weavedi.Daemon") }
}

@Suite struct ControlCharacterTests {
    @Test func controlCharacters_areEscaped_otherTextIsKept() {
        #expect("plain café ✓".escapingControlCharacters == "plain café ✓")
        #expect("a\nb\rc\td".escapingControlCharacters == #"a\nb\rc\td"#)
        // "\r\n" is one Character; its scalars are escaped one by one.
        #expect("x\r\ny".escapingControlCharacters == #"x\r\ny"#)
        #expect("esc\u{1B}[31mRED\u{0}\u{7F}\u{9B}".escapingControlCharacters == #"esc\u{1B}[31mRED\u{0}\u{7F}\u{9B}"#)
    }
}
