/// Where a property wrapper was declared (`#fileID` and `#line`, the defaults of its
/// initializers, which Swift evaluates at the property's declaration), for the message of a read
/// that stops the program: only that failure path reads it.
///
/// 16 bytes: the file's text is a static string literal, kept as its address and length rather
/// than as a `StaticString` (17 bytes and a flag, 24 with the line), and the line as 32 bits.
/// Equal when made from the same literal (the same address) and line.
///
/// `@unchecked Sendable`: immutable; the address is that of a string literal, which lives as
/// long as the process.
@usableFromInline
struct DeclarationSite: Hashable, @unchecked Sendable {
    /// The first UTF-8 byte of the file's name; nil when unknown, or when the name was a single
    /// Unicode scalar (then held in `length`).
    private let start: UnsafePointer<UInt8>?
    private let length: UInt32
    /// The line; 0 when unknown.
    let line: UInt32

    init(fileID: StaticString, line: UInt) {
        if fileID.hasPointerRepresentation {
            start = fileID.utf8Start
            length = UInt32(truncatingIfNeeded: fileID.utf8CodeUnitCount)
        } else {
            start = nil
            length = fileID.unicodeScalar.value
        }
        self.line = UInt32(truncatingIfNeeded: min(line, UInt(UInt32.max)))
    }

    private init() {
        start = nil
        length = 0
        line = 0
    }

    /// No site (a wrapper made by the library for a caller that gave none).
    static var unknown: DeclarationSite { DeclarationSite() }

    /// The file, as `#fileID` spells it (`Module/File.swift`); nil when unknown.
    var fileID: String? {
        if let start { return String(decoding: UnsafeBufferPointer(start: start, count: Int(length)), as: UTF8.self) }
        if line == 0 && length == 0 { return nil }
        return Unicode.Scalar(length).map { String(Character($0)) } ?? ""
    }

    /// ` (declared at Module/File.swift:12)`, to follow the property's name in a message; nothing
    /// when the site is unknown.
    var declaredAt: String {
        guard let fileID else { return "" }
        return " (declared at \(fileID):\(line))"
    }
}
