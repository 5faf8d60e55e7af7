import Testing
import WeaveDI
import WeaveDIControl

@Suite struct JSONParserTests {
    /// Parses `text`, failing the test (and returning null) on an error.
    private func parsed(_ text: String) -> JSONValue {
        do {
            return try JSONValue.parse(text)
        } catch {
            Issue.record("unexpected error for \(text): \(error)")
            return .null
        }
    }

    @Test func validDocuments_roundTripThroughSerialized() {
        let documents = [
            #"{"a":1,"b":[true,false,null],"c":{"d":"e"},"f":-2.5}"#,
            #"[]"#, #"{}"#, #"[[[]],{}]"#, #""text""#, #"0"#, #"-0.5"#, #"true"#, #"null"#,
            #"{"z":1,"a":2,"m":3}"#,
            #"["\"\\\n\r\t\u0001"]"#,
        ]
        for document in documents {
            #expect(parsed(document).serialized == document)
        }
    }

    @Test func whitespaceAroundTokens_isIgnored() {
        let value = parsed(" \t\r\n{ \"a\" :\n[ 1 ,\t2 ] }\n")
        #expect(value.serialized == #"{"a":[1,2]}"#)
    }

    @Test func objectMembers_keepDocumentOrder() {
        let value = parsed(#"{"b":1,"a":2,"c":3}"#)
        #expect(value.objectMembers?.map(\.0) == ["b", "a", "c"])
    }

    @Test func integers_becomeIntWhenTheyFit() {
        #expect(parsed("9223372036854775807") == .int(Int.max))
        #expect(parsed("-9223372036854775808") == .int(Int.min))
        #expect(parsed("42").typeName == "integer")
    }

    /// `Int` has no negative zero: `-0` is the `Double` -0.0, so that it can be quoted with its
    /// sign, and it is still the integer 0.
    @Test func negativeZero_isTheDoubleNegativeZero() {
        let value = parsed("-0")
        #expect(value == .double(-0.0) && value.numberValue?.sign == .minus)
        #expect(value.wholeNumber == 0)
        #expect(parsed("0") == .int(0))
    }

    /// A number not whole that `Double` would round to a whole number is kept as written: as
    /// a `Double` it would be read as an integer (`500.00000000000001` as 500).
    @Test func numbersNotWholeThatDoubleRoundsToWhole_areKeptAsWritten() throws {
        let literals = [
            "0.99999999999999999", "4.9999999999999999999", "500.00000000000001", "-2.00000000000000001",
            "0.50000000000000000001e1", "9007199254740993.5", "1234567890123456789.5e0", "1.0000000000000000000001E+0",
        ]
        for text in literals {
            let value = parsed(text)
            #expect(value == .number(try #require(JSONValue.NumberLiteral(text))), "\(text)")
            #expect(value.wholeNumber == nil, "\(text)")
            #expect(value.typeName == "number")
        }
        #expect(parsed("500.00000000000001").numberValue == 500)
    }

    /// A number whose value as written is whole is a `Double` with no fraction, however it is
    /// written: the integer it stands for below 2^53.
    @Test func wholeNumbersWithAFractionOrAnExponent_areWholeDoubles() {
        let whole: [(String, Int?)] = [
            ("5.0", 5), ("5e0", 5), ("50e-1", 5), ("0.5e1", 5), ("500.000", 500), ("5000e-3", 5), ("0.0", 0), ("-0.0", 0),
            ("-0e-7", 0), ("-25.50e1", -255), ("5e000000000000000000000000000000", 5), ("50e-0000000000000000000000000000001", 5),
            ("123456789012345678901234567890.0", nil), ("1.5e300", nil),
        ]
        for (text, integer) in whole {
            let value = parsed(text)
            guard case let .double(double) = value else {
                Issue.record("\(text): \(value)")
                continue
            }
            #expect(double.rounded(.towardZero) == double, "\(text)")
            #expect(value.wholeNumber == integer, "\(text)")
        }
        #expect(parsed("5.5") == .double(5.5) && parsed("5e-1") == .double(0.5))
    }

    @Test func fractionalNumbers_becomeDouble() {
        #expect(parsed("1e3") == .double(1000))
        #expect(parsed("1E+2") == .double(100))
        #expect(parsed("2.5e-3") == .double(0.0025))
        #expect(parsed("1.7976931348623157e308") == .double(.greatestFiniteMagnitude))
        #expect(parsed("0.000e-400") == .double(0))
        #expect(parsed("1.0").typeName == "number")
    }

    @Test func numbersNeitherIntNorDoubleHolds_areKeptAsWritten() throws {
        let literals = [
            "9223372036854775808", "-9223372036854775809", "123456789012345678901234567890", "1e400", "-1.5E+400", "1e-400",
            "-1" + String(repeating: "0", count: 400),
        ]
        for text in literals {
            let value = parsed(text)
            #expect(value == .number(try #require(JSONValue.NumberLiteral(text))), "\(text)")
            #expect(value.serialized == text && value.serializedBytes == Array(text.utf8))
            #expect(value.typeName == "number")
        }
        #expect(parsed("-0.00000e-999999") == .double(-0.0), "zero, however written, is a Double")
        #expect(parsed("9223372036854775808").numberValue == 0x1p63)
        #expect(parsed("123456789012345678901234567890").numberValue == 1.2345678901234568e29)
        #expect(parsed("1e-400").numberValue == 0)
        #expect(parsed("1e400").numberValue == nil, "beyond Double's range")
        #expect(parsed("1e400").intValue == nil)
        let document = #"{"a":[1e400,123456789012345678901234567890,-1e-400]}"#
        #expect(parsed(document).serialized == document)
    }

    @Test func numberLiterals_acceptOnlyJSONNumbers() {
        for valid in ["0", "-0", "12", "1.5", "1e5", "1E+5", "-1.25e-7"] {
            #expect(JSONValue.NumberLiteral(valid)?.text == valid, "\(valid)")
        }
        for invalid in ["", "-", "+1", "01", "1.", ".5", "1e", "1e+", "NaN", "Infinity", "1 ", " 1", "1,", "0x10", "1.5.2", "١"] {
            #expect(JSONValue.NumberLiteral(invalid) == nil, "\(invalid)")
        }
    }

    @Test func simpleEscapes_areDecoded() {
        let value = parsed(#""\"\\\/\b\f\n\r\t""#)
        #expect(value.stringValue == "\"\\/\u{8}\u{C}\n\r\t")
    }

    @Test func unicodeEscapes_areDecoded() {
        #expect(parsed(#""\u0041\u00e9\u20AC""#).stringValue == "Aé€")
        #expect(parsed(#""\u0000""#).stringValue == "\u{0}")
    }

    @Test func surrogatePairs_areCombined() {
        let value = parsed(#""\uD83D\uDE00 x""#)
        #expect(value.stringValue == "😀 x")
        #expect(value.stringValue?.unicodeScalars.first?.value == 0x1F600)
    }

    @Test func rawUTF8_isAccepted() {
        #expect(parsed("\"Grüße, 世界, 😀\"").stringValue == "Grüße, 世界, 😀")
        #expect(parsed("{\"ключ\":\"\\n😀\"}")[member: "ключ"]?.stringValue == "\n😀")
    }

    @Test func byteCollections_parseLikeStrings() throws {
        let bytes: [UInt8] = Array(#"{"k":[1,2]}"#.utf8)
        #expect(try JSONValue.parse(bytes).serialized == #"{"k":[1,2]}"#)
        #expect(try JSONValue.parse(bytes[...]).serialized == #"{"k":[1,2]}"#)
        // A collection without contiguous storage takes the copying path.
        #expect(try JSONValue.parse(bytes.lazy.map { $0 }).serialized == #"{"k":[1,2]}"#)
    }

    @Test func serializedValues_parseBackToThemselves() throws {
        let value = JSONValue.object([
            ("name", .string("a \"quoted\"\nline\u{1}")), ("n", .int(-7)), ("x", .double(0.1)),
            ("list", .array([.bool(true), .null, .object([])])),
        ])
        #expect(try JSONValue.parse(value.serialized) == value)
    }

    @Test func accessors_returnTheirCaseOnly() {
        let value = parsed(#"{"s":"x","i":3,"d":1.5,"b":true,"a":[1],"n":null}"#)
        #expect(value[member: "s"]?.stringValue == "x")
        #expect(value[member: "i"]?.intValue == 3)
        #expect(value[member: "i"]?.numberValue == 3)
        #expect(value[member: "d"]?.numberValue == 1.5)
        #expect(value[member: "d"]?.intValue == nil)
        #expect(value[member: "b"]?.boolValue == true)
        #expect(value[member: "a"]?.arrayValue == [.int(1)])
        #expect(value[member: "n"]?.isNull == true)
        #expect(value[member: "missing"] == nil)
        #expect(value[member: "s"]?.boolValue == nil)
        let names = ["s", "i", "d", "b", "a", "n"].compactMap { value[member: $0]?.typeName }
        #expect(names == ["string", "integer", "number", "boolean", "array", "null"])
        #expect(value.typeName == "object")
    }
}
