import WeaveDI
import WeaveDIControl

/// Typed, range-checked reads of JSON values, each failing with a `ConfigurationError` that
/// names the field and says "expected X, got Y".
struct FieldReader {
    /// The file named in every error.
    let file: String

    /// A content error for the field at `path`.
    func fail(_ path: String, _ problem: String) -> ConfigurationError {
        ConfigurationError(file: file, fieldPath: path, problem: problem)
    }

    /// The path of member `name` of the object at `parent` (`control.socket`). A name that is
    /// not plain (1 to 60 ASCII letters, digits, `_` and `-`, as every known field's is) is
    /// written as messages quote a value from outside (`JSONValue.quotedForMessage`:
    /// `sync."a.b"`, `control."jobs\u001b[31m"`): a key of the file may hold a NUL, an escape
    /// sequence, a newline or a bidirectional control, and each output of the error (the log,
    /// `--check-config`, weavedictl, a Reload's reply) then shows it escaped, once, from here.
    static func memberPath(_ parent: String, _ name: String) -> String {
        let shown = isPlainName(name) ? name : JSONValue.quotedForMessage(name)
        return parent.isEmpty ? shown : parent + "." + shown
    }

    /// Whether `name` may stand in a field path as is: 1 to 60 of `A-Z a-z 0-9 _ -`.
    private static func isPlainName(_ name: String) -> Bool {
        (1...60).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default: false
            }
        }
    }

    /// The members of the object at `path`, in document order.
    func members(of value: JSONValue, at path: String) throws(ConfigurationError) -> [(String, JSONValue)] {
        guard let members = value.objectMembers else { throw fail(path, "expected an object, got \(Self.describe(value))") }
        return members
    }

    /// The path of member `name`, which must be one of `accepted`.
    func knownMember(_ name: String, of parent: String, accepted: [String]) throws(ConfigurationError) -> String {
        let path = Self.memberPath(parent, name)
        guard accepted.contains(name) else {
            throw fail(path, "unknown field \(JSONValue.quotedForMessage(name)) (accepted: \(accepted.joined(separator: ", ")))")
        }
        return path
    }

    /// The elements of the array at `path`.
    func elements(of value: JSONValue, at path: String) throws(ConfigurationError) -> [JSONValue] {
        guard let elements = value.arrayValue else { throw fail(path, "expected an array, got \(Self.describe(value))") }
        return elements
    }

    /// A string.
    func string(_ value: JSONValue, at path: String, expected: String = "a string") throws(ConfigurationError) -> String {
        guard let string = value.stringValue else { throw fail(path, "expected \(expected), got \(Self.describe(value))") }
        return string
    }

    /// A boolean.
    func bool(_ value: JSONValue, at path: String) throws(ConfigurationError) -> Bool {
        guard let bool = value.boolValue else { throw fail(path, "expected true or false, got \(Self.describe(value))") }
        return bool
    }

    /// An integer within `range`: every integer field is read here, by `integer(_:in:)`'s rule.
    func integer(_ value: JSONValue, at path: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        switch Self.integer(value, in: range) {
        case let .success(integer): return integer
        case let .failure(mismatch): throw fail(path, mismatch.reason)
        }
    }

    /// Why a value is not the integer asked for: "expected an integer from 1 to 500, got 5.5".
    struct IntegerMismatch: Error {
        var reason: String
    }

    /// An integer within `range`, by the one rule for every integer the daemon reads from
    /// outside (the configuration's fields, the varlink methods' parameters). JSON has one
    /// number type, so a whole number written with a fraction or an exponent (`5.0`, `5e0`) is
    /// that integer (`JSONValue.wholeNumber`); `5.5` is refused, the reason saying the range.
    static func integer(_ value: JSONValue, in range: ClosedRange<Int>) -> Result<Int, IntegerMismatch> {
        if let integer = value.wholeNumber, range.contains(integer) { return .success(integer) }
        // A field with no limit of its own still has the 64-bit integer's: said to one beyond it
        // (`1e23` is not "at least 1" wrong).
        let beyondInt = (value.numberValue ?? 0) >= Double(Int.max)
        let expected = range.upperBound == .max && !beyondInt
            ? "an integer of at least \(range.lowerBound)"
            : "an integer from \(range.lowerBound) to \(range.upperBound)"
        // A whole number is shown as the integer it is (`5e3` as 5000, not 5000.0), a negative
        // zero with its sign (`-0`, `-0.0` as -0), as its writer wrote it.
        var shown = value.wholeNumber.map { $0 == 0 && value.numberValue?.sign == .minus ? "-0" : String($0) } ?? describe(value)
        // Said only of a number the range could hold: digits would not help 1e20 for a
        // field up to 64.
        if case let .double(double) = value, value.wholeNumber == nil, double.rounded(.towardZero) == double,
           double >= Double(range.lowerBound), double <= Double(range.upperBound) {
            shown += " (past 2^53, a number with a fraction or an exponent is not read exactly: write the integer's digits)"
        }
        return .failure(IntegerMismatch(reason: "expected \(expected), got \(shown)"))
    }

    /// A number of seconds within `range`, as a `Duration` rounded to the nanosecond.
    func seconds(_ value: JSONValue, at path: String, in range: SecondsRange) throws(ConfigurationError) -> Duration {
        guard let seconds = value.numberValue, range.contains(seconds) else {
            throw fail(path, "expected \(range.text), got \(Self.describe(value))")
        }
        let nanoseconds = (seconds * 1e9).rounded()
        // Checked again once rounded: 1e-10 is more than 0, its duration is not.
        guard range.contains(nanoseconds / 1e9) else {
            throw fail(path, "expected \(range.text), got \(Self.describe(value)) (\(SecondsRange.format(nanoseconds / 1e9)) once rounded to the nanosecond)")
        }
        return .nanoseconds(Int64(nanoseconds))
    }

    /// An absolute path without NUL bytes.
    func absolutePath(_ value: JSONValue, at path: String) throws(ConfigurationError) -> String {
        let string = try string(value, at: path, expected: "an absolute path")
        guard string.hasPrefix("/") else { throw fail(path, "expected an absolute path, got \(JSONValue.quotedPathForMessage(string))") }
        guard !string.utf8.contains(0) else { throw fail(path, "the path contains a NUL byte") }
        return string
    }

    /// A user or group, by name (a string) or id (an integer from 0 to 4294967294).
    func account(_ value: JSONValue, at path: String, kind: AccountKind) throws(ConfigurationError) -> DaemonConfiguration.AccountReference {
        if case let .string(name) = value {
            let forbidden = name.unicodeScalars.first { $0 == ":" || $0 == "/" || $0.value < 0x21 || $0.value == 0x7F }
            guard !name.isEmpty, forbidden == nil else {
                throw fail(path, "invalid \(kind.rawValue) name \(Self.describe(value)): a name may not be empty or contain ':', '/', spaces or control characters")
            }
            return .name(name)
        }
        // An id is an integer as every integer field reads it (`1000.0` is 1000).
        if let id = value.wholeNumber, (0...4_294_967_294).contains(id) { return .id(UInt32(id)) }
        if value.wholeNumber != nil || value.isIntegerBeyondInt {
            throw fail(path, "expected a \(kind.rawValue) name or a \(kind.idName) from 0 to 4294967294, got \(Self.describe(value))")
        }
        throw fail(path, "expected a \(kind.rawValue) name or \(kind.idName), got \(Self.describe(value))")
    }

    /// Whether an account reference names a user or a group, for messages.
    enum AccountKind: String {
        case user
        case group

        var idName: String { self == .user ? "uid" : "gid" }
    }

    /// A value as messages show it: numbers and literals as JSON (a number too large or too
    /// small for `Double` as written, shortened past 40 characters), strings quoted as every
    /// message quotes text from outside (`JSONValue.quotedForMessage`: escaped, and shortened
    /// past 60 Unicode scalars with their length), containers as "an array" or "an object".
    static func describe(_ value: JSONValue) -> String {
        switch value {
        case let .string(string):
            return JSONValue.quotedForMessage(string)
        case let .number(literal): return JSONValue.shownForMessage(literal)
        case .array: return "an array"
        case .object: return "an object"
        // A negative zero as the integer fields show it (`-0`, `-0.0` as -0), not -0.0.
        case let .double(double) where double == 0 && double.sign == .minus: return "-0"
        default: return value.serialized
        }
    }
}

extension JSONValue {
    /// Whether this is an integer too large for `Int`, kept as written (`.number` with neither
    /// a fraction nor an exponent).
    var isIntegerBeyondInt: Bool {
        guard case let .number(literal) = self else { return false }
        return !literal.text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }
}

/// An allowed range of seconds, with its wording for messages.
struct SecondsRange {
    var minimum: Double
    var minimumIsAllowed: Bool
    var maximum: Double

    /// The longest duration any field accepts: 365 days.
    static let oneYear: Double = 31_536_000

    /// More than 0 and at most `maximum`.
    static func positive(upTo maximum: Double) -> SecondsRange {
        SecondsRange(minimum: 0, minimumIsAllowed: false, maximum: maximum)
    }

    /// From `minimum` to `maximum`, both included.
    static func from(_ minimum: Double, to maximum: Double = oneYear) -> SecondsRange {
        SecondsRange(minimum: minimum, minimumIsAllowed: true, maximum: maximum)
    }

    func contains(_ seconds: Double) -> Bool {
        (minimumIsAllowed ? seconds >= minimum : seconds > minimum) && seconds <= maximum
    }

    /// Such as "a number of seconds from 0.1 to 86400".
    var text: String {
        minimumIsAllowed
            ? "a number of seconds from \(Self.format(minimum)) to \(Self.format(maximum))"
            : "a number of seconds greater than \(Self.format(minimum)) and at most \(Self.format(maximum))"
    }

    /// A duration in seconds, as `format(_: Double)` writes it.
    static func format(_ duration: Duration) -> String {
        format(seconds(duration))
    }

    /// Whole numbers without ".0".
    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int(seconds)) : String(seconds)
    }
}
