import WeaveDI
import WeaveDIControl

/// Reading the members of reply objects: a missing or mistyped member gives a neutral value.
/// A reply of the daemon has been checked against its interface first (`ReplyContract`), so
/// that only an optional member (`?` in the interface) is missing or null here; offline
/// reports are the library's own.
extension JSONValue {
    /// The string member `key`, or nil.
    func string(_ key: String) -> String? {
        self[member: key]?.stringValue
    }

    /// The integer member `key`, or nil: written with a fraction or an exponent (`812.0`,
    /// `8.12e2`) too, below 2^53, as the daemon reads an integer parameter.
    func int(_ key: String) -> Int? {
        self[member: key]?.wholeNumber
    }

    /// The numeric member `key` (integer or not), or nil.
    func number(_ key: String) -> Double? {
        self[member: key]?.numberValue
    }

    /// The boolean member `key`, or false.
    func flag(_ key: String) -> Bool {
        self[member: key]?.boolValue ?? false
    }

    /// The array member `key`, or an empty array.
    func array(_ key: String) -> [JSONValue] {
        self[member: key]?.arrayValue ?? []
    }

    /// The array-of-strings member `key` (other elements skipped).
    func strings(_ key: String) -> [String] {
        array(key).compactMap(\.stringValue)
    }

    /// The integer member `key` as text, or `-` when missing or null.
    func intText(_ key: String) -> String {
        int(key).map(String.init) ?? "-"
    }

    /// A string member as text, or `-` when missing or null.
    func text(_ key: String) -> String {
        string(key) ?? "-"
    }
}

extension VarlinkReply {
    /// The reply's parameters as one JSON object, as `--json` prints them.
    var object: JSONValue { .object(parameters) }

    /// The array parameter `key`, or an empty array.
    func array(_ key: String) -> [JSONValue] {
        parameter(key)?.arrayValue ?? []
    }
}
