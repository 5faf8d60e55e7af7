import Testing
import WeaveDI
import WeaveDIControl

@Suite struct JSONParserRejectionTests {
    /// The error for `text`, or nil (recording an issue) if it parses.
    private func failure(_ text: String) -> JSONParseError? {
        failure(Array(text.utf8))
    }

    private func failure(_ bytes: [UInt8]) -> JSONParseError? {
        do {
            let value = try JSONValue.parse(bytes)
            Issue.record("expected an error, parsed \(value.serialized)")
            return nil
        } catch {
            return error
        }
    }

    @Test func errorDescription_isLineColumnProblem() {
        let error = failure("{\n  \"a\": 1\n  \"b\": 2\n}")
        #expect(error?.description == "line 3, column 3: expected ',' or '}' after an object member")
        #expect(error?.line == 3)
        #expect(error?.column == 3)
        #expect(error?.offset == 13)
    }

    @Test func trailingCommas_areRejected() {
        #expect(failure("[1,2,]")?.description == "line 1, column 6: trailing comma before ']'")
        #expect(failure("{\"a\":1,\n}")?.description == "line 2, column 1: trailing comma before '}'")
    }

    @Test func comments_areRejected() {
        #expect(failure("// note\n{}")?.description == "line 1, column 1: comments are not allowed in JSON")
        #expect(failure("[1, /* two */ 2]")?.description == "line 1, column 5: comments are not allowed in JSON")
    }

    @Test func nonFiniteLiterals_areRejected() {
        #expect(failure("[NaN]")?.description == "line 1, column 2: invalid literal 'NaN' (expected a value such as true, false or null)")
        #expect(failure("Infinity")?.problem.hasPrefix("invalid literal 'Infinity'") == true)
        #expect(failure("-Infinity")?.description == "line 1, column 2: expected a digit after '-'")
        #expect(failure("True")?.problem.hasPrefix("invalid literal 'True'") == true)
    }

    @Test func malformedNumbers_areRejected() {
        #expect(failure("[01]")?.description == "line 1, column 2: leading zeros are not allowed in numbers")
        #expect(failure("-007")?.description == "line 1, column 2: leading zeros are not allowed in numbers")
        #expect(failure("1.")?.description == "line 1, column 3: expected a digit after the decimal point")
        #expect(failure("1e+")?.description == "line 1, column 4: expected a digit in the exponent")
        #expect(failure(".5")?.description == "line 1, column 1: unexpected character '.', expected a value")
        #expect(failure("+1")?.description == "line 1, column 1: unexpected character '+', expected a value")
    }

    @Test func unterminatedString_pointsAtItsQuote() {
        #expect(failure("{\"a\": \"abc")?.description == "line 1, column 7: unterminated string")
        #expect(failure("\"abc\\")?.description == "line 1, column 1: unterminated string")
    }

    @Test func controlCharactersInStrings_areRejected() {
        #expect(failure("\"a\tb\"")?.description == "line 1, column 3: unescaped control character U+0009 in a string")
        #expect(failure("\"a\nb\"")?.problem == "unescaped control character U+000A in a string")
    }

    @Test func invalidEscapes_areRejected() {
        #expect(failure(#""\q""#)?.description == #"line 1, column 2: invalid escape sequence \q"#)
        #expect(failure(#""\u12G4""#)?.description == #"line 1, column 2: invalid \u escape: expected 4 hexadecimal digits"#)
    }

    @Test func loneSurrogateEscapes_areRejected() {
        #expect(failure(#"["\uD800"]"#)?.problem.hasPrefix(#"unpaired surrogate \uD800"#) == true)
        #expect(failure(#"["ab\uDC00"]"#)?.description
            == #"line 1, column 5: unpaired surrogate \uDC00 (a low surrogate without a high surrogate before it)"#)
        #expect(failure(#""\uD83D\u0041""#)?.column == 2)
    }

    @Test func invalidUTF8_isRejected() {
        let quote = UInt8(ascii: "\"")
        #expect(failure([quote, 0xFF, quote])?.problem == "invalid UTF-8: byte 0xFF never occurs in UTF-8")
        #expect(failure([quote, 0x80, quote])?.problem == "invalid UTF-8: unexpected continuation byte 0x80")
        #expect(failure([quote, 0xC0, 0xAF, quote])?.problem == "invalid UTF-8: overlong encoding")
        #expect(failure([quote, 0xE0, 0x80, 0xAF, quote])?.problem == "invalid UTF-8: overlong encoding")
        #expect(failure([quote, 0xF0, 0x80, 0x80, 0xAF, quote])?.problem == "invalid UTF-8: overlong encoding")
        #expect(failure([quote, 0xED, 0xA0, 0x80, quote])?.problem == "invalid UTF-8: encoded surrogate")
        #expect(failure([quote, 0xF4, 0x90, 0x80, 0x80, quote])?.problem == "invalid UTF-8: code point above U+10FFFF")
        #expect(failure([quote, 0xC3, quote])?.problem == "invalid UTF-8: incomplete sequence")
        #expect(failure([quote, 0xE2, 0x82])?.problem == "invalid UTF-8: incomplete sequence")
        // The column counts scalars: "é" before the bad byte is one column.
        let error = failure([quote, 0xC3, 0xA9, 0xFE, quote])
        #expect(error?.column == 3)
        #expect(error?.offset == 3)
    }

    @Test func nonASCIIOutsideStrings_isNamed() {
        #expect(failure("“a”")?.description == "line 1, column 1: unexpected character '“' (U+201C), expected a value")
        #expect(failure([0xEF, 0xBB, 0xBF, 0x31])?.problem == "unexpected character '\u{FEFF}' (U+FEFF), expected a value")
    }

    @Test func duplicateKeys_areRejectedNamingTheKey() {
        let error = failure("{\"name\": 1,\n \"other\": 2,\n \"name\": 3}")
        #expect(error?.description == #"line 3, column 2: duplicate key "name""#)
        #expect(failure(#"[{"a":1},{"a":2,"a":3}]"#)?.column == 17)
    }

    @Test func aLongDuplicateKey_isShownShortened() {
        // The message goes into replies and log lines: a key of a megabyte, each byte escaped,
        // made each of them several megabytes long.
        let key = String(repeating: #"\u0001"#, count: 100_000)
        let error = failure(#"{"\#(key)":1,"\#(key)":2}"#)
        #expect(error?.problem == "duplicate key \"" + String(repeating: "\\u0001", count: 57) + "...\" (100000 characters)")
    }

    @Test func textAfterTheValue_isRejected() {
        #expect(failure("{} {}")?.description == "line 1, column 4: unexpected character '{' after the JSON value")
        #expect(failure("1 2")?.column == 3)
        #expect(failure("[1]]")?.column == 4)
    }

    @Test func structuralMistakes_areRejected() {
        #expect(failure("")?.description == "line 1, column 1: empty document, expected a value")
        #expect(failure("  \n ")?.description == "line 2, column 2: unexpected end of input, expected a value")
        #expect(failure("[1 2]")?.description == "line 1, column 4: expected ',' or ']' after an array element")
        #expect(failure("{a:1}")?.description == "line 1, column 2: expected a double-quoted object key, found character 'a'")
        #expect(failure("{\"a\" 1}")?.description == "line 1, column 6: expected ':' after an object key")
        #expect(failure("{\"a\":1")?.description == "line 1, column 7: expected ',' or '}' after an object member")
        #expect(failure("[")?.description == "line 1, column 2: unexpected end of input, expected a value")
        #expect(failure("{")?.description == "line 1, column 2: unexpected end of input, expected an object key")
    }
}
