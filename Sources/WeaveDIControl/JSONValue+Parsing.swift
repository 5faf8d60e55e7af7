import WeaveDI

extension JSONValue {
    /// Parses one JSON document (RFC 8259, strict) from UTF-8 bytes.
    ///
    /// Rejects trailing commas, comments, `NaN`/`Infinity`, leading zeros, invalid UTF-8
    /// (including overlong forms and encoded surrogates), unpaired `\u` surrogates, unescaped
    /// control characters in strings, duplicate object keys and anything after the value.
    /// Integers without fraction or exponent that fit `Int` become `.int` (but `-0`, which
    /// `Int` cannot hold, is the `.double` -0.0); other integers, numbers beyond `Double`'s
    /// range, numbers that `Double` would round to 0 and numbers not whole that `Double` would
    /// round to a whole number (`0.99999999999999999`) stay as written (`.number`); every
    /// other number becomes a finite `.double`. Past `limits.maxValues` values, the document
    /// is refused.
    /// Nesting is handled without recursion, so deep documents cannot overflow the stack.
    public static func parse(
        _ bytes: some Collection<UInt8>,
        limits: JSONLimits = .init()
    ) throws(JSONParseError) -> JSONValue {
        let count = bytes.count
        if count > limits.maxBytes {
            throw JSONParseError(
                line: 1, column: 1, offset: 0,
                problem: "document is larger than \(limits.maxBytes) bytes (\(count) bytes)")
        }
        let contiguous = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) in try parse(buffer: buffer, limits: limits) }
        }
        if let contiguous { return try contiguous.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { (buffer) throws(JSONParseError) in
            try parse(buffer: buffer, limits: limits)
        }
    }

    /// Parses one JSON document (RFC 8259, strict) from the UTF-8 form of `string`.
    public static func parse(_ string: String, limits: JSONLimits = .init()) throws(JSONParseError) -> JSONValue {
        try parse(string.utf8, limits: limits)
    }

    private static func parse(
        buffer: UnsafeBufferPointer<UInt8>,
        limits: JSONLimits
    ) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: buffer, limits: limits)
        return try parser.parseDocument()
    }
}

/// Bounds that keep a hostile document from exhausting memory or time.
public struct JSONLimits: Sendable, Equatable {
    /// The deepest nesting of arrays and objects accepted; the top-level container is level 1.
    public var maxDepth: Int
    /// The largest document accepted, in bytes.
    public var maxBytes: Int
    /// The longest string (or object key) accepted, in UTF-8 bytes after unescaping.
    public var maxStringBytes: Int
    /// The most values accepted: each string, number, `true`, `false`, `null`, array and
    /// object is one (an object's keys are not counted; each has its value). Parsing costs
    /// per value more than per byte (`[0,0,…]` is two bytes a value), and more than linearly
    /// once a container holds tens of thousands, so `maxBytes` alone does not bound its time.
    public var maxValues: Int

    /// Limits with the given values; the defaults are 64 levels, 16 MiB, 1 MiB and no limit
    /// on values but `maxBytes` (each takes a byte at least).
    public init(maxDepth: Int = 64, maxBytes: Int = 16 << 20, maxStringBytes: Int = 1 << 20, maxValues: Int = .max) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
        self.maxStringBytes = maxStringBytes
        self.maxValues = maxValues
    }
}
