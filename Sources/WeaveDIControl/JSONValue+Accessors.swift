import WeaveDI

/// Typed views of a `JSONValue`, for code that reads parsed documents.
extension JSONValue {
    /// The JSON type in words: "string", "integer", "number", "boolean", "array", "object" or "null".
    ///
    /// "integer" is an `.int`; "number" is a `.double` (a fraction or an exponent) or a
    /// `.number` (kept as written: a value beyond `Int`, or one `Double` cannot hold).
    public var typeName: String {
        switch self {
        case .string: "string"
        case .int: "integer"
        case .double, .number: "number"
        case .bool: "boolean"
        case .array: "array"
        case .object: "object"
        case .null: "null"
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case let .string(value) = self { return value }
        return nil
    }

    /// The integer, if this is an `.int`.
    public var intValue: Int? {
        if case let .int(value) = self { return value }
        return nil
    }

    /// The integer this number stands for: an `.int`, or a `.double` with no fraction (`5.0`,
    /// `5e0`, `50e-1`, `-0.0`, `-0`) whose magnitude is below 2^53, where a `Double` holds every
    /// integer exactly (beyond it, `9007199254740993.0` would be read as another integer); nil
    /// for a fraction (`5.5`), a number beyond those (a `.number`: no `Double` holds it
    /// exactly), or anything but a number. Parsed, a number is a whole `.double` only when its
    /// value as written is whole: `500.00000000000001`, which a `Double` rounds to 500, is kept
    /// as written (a `.number`), and so is no integer. How the daemon reads an integer
    /// parameter, and weavedictl an integer member of a reply.
    public var wholeNumber: Int? {
        switch self {
        case let .int(value): return value
        case let .double(value) where value.rounded(.towardZero) == value && value.magnitude < 9_007_199_254_740_992:
            return Int(value)
        default: return nil
        }
    }

    /// The numeric value of an `.int`, a `.double` or a `.number` (rounded to the nearest
    /// `Double`; nil when beyond its range).
    public var numberValue: Double? {
        switch self {
        case let .int(value): Double(value)
        case let .double(value): value
        case let .number(literal): Double(literal.text).flatMap { $0.isFinite ? $0 : nil }
        default: nil
        }
    }

    /// The boolean, if this is a boolean.
    public var boolValue: Bool? {
        if case let .bool(value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case let .array(elements) = self { return elements }
        return nil
    }

    /// The members in document order, if this is an object.
    public var objectMembers: [(String, JSONValue)]? {
        if case let .object(members) = self { return members }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The value of the first member named `key`, if this is an object that has one.
    public subscript(member key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        for (name, value) in members where name == key { return value }
        return nil
    }
}

extension JSONValue {
    /// A number kept as written, to quote in a message: past 40 characters, its first 37 then
    /// `...` and how long it is, so that a number of a megabyte makes no message of a megabyte.
    package static func shownForMessage(_ literal: NumberLiteral) -> String {
        let text = literal.text
        guard text.utf8.count > 40 else { return text }
        return String(text.prefix(37)) + "... (a number of \(text.utf8.count) characters)"
    }
}
