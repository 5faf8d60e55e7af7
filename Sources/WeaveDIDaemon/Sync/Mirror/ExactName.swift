/// A file name compared byte for byte, for sets of names.
///
/// `String` equality and hashing are by canonical equivalence: a precomposed "é" equals "e"
/// followed by U+0301. On Linux those are two different names, and a mirror that took one for
/// the other would keep an extra file or compare a file with the wrong one.
struct ExactName: Hashable {
    let name: String

    init(_ name: String) { self.name = name }

    static func == (a: ExactName, b: ExactName) -> Bool { a.name.hasSameBytes(as: b.name) }

    func hash(into hasher: inout Hasher) {
        var name = name
        name.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

extension String {
    /// Whether the two strings are the same bytes (not merely canonically equivalent).
    func hasSameBytes(as other: String) -> Bool { utf8.elementsEqual(other.utf8) }
}
