import WeaveDI

/// The varlink grammar of names (varlink.org): an interface name is reverse-domain, two or more
/// dot-separated parts of ASCII letters, digits and `-`, the first starting with a letter, none
/// starting or ending with `-` (`io.weavedi.Daemon`); a method name is an ASCII capital then
/// ASCII letters and digits (`Ping`); a call names `interface.Method`.
public enum VarlinkName {
    /// What is wrong with `name` as an interface name, or nil when it is one.
    public static func interfaceProblem(_ name: String) -> String? {
        var name = name
        let valid = name.withUTF8 { isInterface(UnsafeBufferPointer(rebasing: $0[...])) }
        return valid ? nil : "\(JSONValue.quotedForMessage(name)) is no interface name (\(interfaceRule))"
    }

    /// What is wrong with `name` as `interface.Method`, or nil when it is one.
    public static func qualifiedMethodProblem(_ name: String) -> String? {
        var name = name
        let problem = name.withUTF8 { bytes -> String? in
            guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")) else {
                return "no dot between an interface name and a method name"
            }
            if !isMethod(UnsafeBufferPointer(rebasing: bytes[(dot + 1)...])) {
                let method = String(decoding: UnsafeBufferPointer(rebasing: bytes[(dot + 1)...]), as: UTF8.self)
                return "the method name \(JSONValue.quotedForMessage(method)) is none (\(methodRule))"
            }
            if !isInterface(UnsafeBufferPointer(rebasing: bytes[..<dot])) {
                let interface = String(decoding: UnsafeBufferPointer(rebasing: bytes[..<dot]), as: UTF8.self)
                return "the interface name \(JSONValue.quotedForMessage(interface)) is none (\(interfaceRule))"
            }
            return nil
        }
        return problem.map { "\(JSONValue.quotedForMessage(name)) is no method: \($0)" }
    }

    static let interfaceRule = "two or more parts joined by dots, of ASCII letters, digits and '-', "
        + "the first part starting with a letter, none starting or ending with '-', such as \"io.weavedi.Daemon\""
    static let methodRule = "an ASCII capital letter, then ASCII letters and digits, such as \"Ping\""

    private static func isMethod(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first, isUpper(first) else { return false }
        return bytes.allSatisfy { isUpper($0) || isLower($0) || isDigit($0) }
    }

    private static func isInterface(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var parts = 0
        var partStart = true
        var previous: UInt8 = 0
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                if partStart || previous == UInt8(ascii: "-") { return false }  // empty, or ends with '-'
                parts += 1
                partStart = true
            } else if isUpper(byte) || isLower(byte) || isDigit(byte) || byte == UInt8(ascii: "-") {
                if partStart {
                    if byte == UInt8(ascii: "-") || (parts == 0 && isDigit(byte)) { return false }
                    partStart = false
                }
            } else {
                return false
            }
            previous = byte
        }
        return !partStart && previous != UInt8(ascii: "-") && parts >= 1
    }

    private static func isUpper(_ byte: UInt8) -> Bool { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) }
    private static func isLower(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }
    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}
