import Testing
import WeaveDI
@testable import WeaveDIControl

/// `JSONValue.quotedForMessage`: how names and values from outside appear in messages.
@Suite struct MessageQuotingTests {
    @Test func whatATerminalWouldActOn_isEscaped_asJSONEscapesControls() {
        // A right-to-left override would show "job.evil" reversed after it on a terminal; a
        // next-line (C1) or a line separator would start a forged line in some viewers.
        #expect(JSONValue.quotedForMessage("a\u{202E}b") == #""a\u202eb""#)
        #expect(JSONValue.quotedForMessage("a\u{85}b\u{2028}c\u{2066}d") == #""a\u0085b\u2028c\u2066d""#)
        #expect(JSONValue.quotedForMessage("a\nb\u{1B}") == #""a\nb\u001b""#)
        #expect(JSONValue.quotedForMessage("é 名前 \u{1F600}") == "\"é 名前 \u{1F600}\"")
    }

    @Test func aLongText_isCut_andItsEscapesToo() {
        let long = String(repeating: "\u{202E}", count: 100)
        let quoted = JSONValue.quotedForMessage(long)
        #expect(quoted == "\"" + String(repeating: #"\u202e"#, count: 57) + "...\" (100 characters)")
    }

    @Test func aPath_isShownWhole_upToPATH_MAX_andEscapedAlike() {
        let deep = "/srv/" + String(repeating: "d/", count: 100) + "a\"b\n"
        #expect(JSONValue.quotedPathForMessage(deep) == "\"/srv/" + String(repeating: "d/", count: 100) + #"a\"b\n""#)
        let huge = String(repeating: "x", count: 5000)
        #expect(JSONValue.quotedPathForMessage(huge) == "\"" + String(repeating: "x", count: 4093) + "...\" (5000 characters)")
        #expect(JSONValue.quotedPathForMessage(String(repeating: "x", count: 4096)) == "\"" + String(repeating: "x", count: 4096) + "\"")
    }
}
