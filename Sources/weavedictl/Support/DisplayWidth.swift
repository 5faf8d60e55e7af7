/// How many terminal columns text takes, in the manner of `wcwidth(3)` but without a locale:
/// each character (grapheme cluster) takes two columns when it is East Asian wide or full-width
/// (CJK, Hangul, kana, full-width forms) or an emoji shown as a picture, none when it is made of
/// combining marks and format characters only (a zero-width space, a lone accent), and one
/// otherwise. Tables use it so that a check named in Chinese or with an emoji keeps its columns
/// aligned.
enum DisplayWidth {
    /// The columns `text` takes on a terminal.
    static func of(_ text: String) -> Int {
        var columns = 0
        for character in text {
            columns += of(character)
        }
        return columns
    }

    /// The columns one character takes: 0, 1 or 2.
    static func of(_ character: Character) -> Int {
        if character.isASCII { return 1 }
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.allSatisfy(isZeroWidth) { return 0 }
        if isWide(first) { return 2 }
        // An emoji shown as a picture: one that is by default, or a text-style symbol asked
        // for as one by VARIATION SELECTOR-16.
        if first.properties.isEmojiPresentation { return 2 }
        if first.properties.isEmoji, scalars.contains("\u{FE0F}") { return 2 }
        return 1
    }

    /// Combining marks and invisible format characters (zero-width space and joiners, bidi
    /// marks, the byte-order mark).
    private static func isZeroWidth(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: true
        default: scalar.value == 0x200B
        }
    }

    /// East Asian Wide (W) and Fullwidth (F) ranges of Unicode's `EastAsianWidth.txt`, to the
    /// block, as terminals draw them.
    private static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        for range in wideRanges where range.contains(value) { return true }
        return false
    }

    private static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F,  // Hangul Jamo leading consonants
        0x2329...0x232A,  // angle brackets
        0x2E80...0x303E,  // CJK radicals, Kangxi, ideographic description, CJK symbols
        0x3041...0x33FF,  // Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, Kanbun, CJK strokes, enclosed, compatibility
        0x3400...0x4DBF,  // CJK extension A
        0x4E00...0x9FFF,  // CJK unified ideographs
        0xA000...0xA4CF,  // Yi
        0xA960...0xA97F,  // Hangul Jamo extended A
        0xAC00...0xD7A3,  // Hangul syllables
        0xF900...0xFAFF,  // CJK compatibility ideographs
        0xFE10...0xFE19,  // vertical forms
        0xFE30...0xFE6F,  // CJK compatibility forms, small form variants
        0xFF00...0xFF60,  // full-width forms
        0xFFE0...0xFFE6,  // full-width signs
        0x16FE0...0x18CFF,  // ideographic symbols, Tangut, Khitan
        0x1AFF0...0x1B2FF,  // kana extended and supplements, Nüshu
        0x20000...0x2FFFD,  // CJK extensions B to F, compatibility supplement
        0x30000...0x3FFFD,  // CJK extensions G and H
    ]
}
