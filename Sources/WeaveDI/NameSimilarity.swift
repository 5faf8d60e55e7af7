/// Suggests registered type names close to a missing one ("did you mean UserServiceImpl?").
///
/// It compares the name with every candidate's, so each comparison is bounded: a candidate
/// whose length differs by more than the edits allowed is not measured, the edit distance is
/// computed only within that many edits of the diagonal (after the common start and end are set
/// aside), and it stops as soon as every way on is over the limit; the limit is a third of the
/// name's length, at least 2, at most `maximumEdits`.
enum NameSimilarity {
    /// The most edits a suggestion may be away from the name asked for (a name of more than
    /// 96 characters would allow more): past it, a name is hardly a likely mix-up, and the
    /// comparison of two long names would cost the product of their lengths.
    static let maximumEdits = 32

    /// Up to three of `candidates` that resemble `name` and that `keep` accepts, closest first
    /// (`keep` is asked only about those that resemble `name`).
    static func suggestions(
        for name: String, among candidates: [String], keep: (String) -> Bool = { _ in true }
    ) -> [String] {
        let unique = Array(Set(candidates))
        return closest(
            to: name, count: unique.count, name: { unique[$0] }, compared: { Compared(unique[$0]) }, keep: { keep(unique[$0]) }
        ).map { unique[$0] }
    }

    /// The indices of up to three of `count` candidates, of distinct names (`name(i)`, compared as
    /// `compared(i)`), that resemble `name` and that `keep` accepts: the three closest, then
    /// first by name (as `String` orders them), closest first. A candidate of the name itself is
    /// none.
    ///
    /// `keep` is asked only about a candidate that resembles `name` and is closer than the three
    /// kept so far (it decides nothing about the others), so that three kept, only a candidate as
    /// close as the third can change them: the limit on edits drops to the third's distance, and
    /// the others cost a length check, or a comparison that stops at once.
    static func closest(
        to name: String, count: Int, name candidateName: (Int) -> String, compared: (Int) -> Compared,
        keep: (Int) -> Bool
    ) -> [Int] {
        let target = Compared(name)
        var limit = min(max(2, target.characters / 3), maximumEdits)
        var kept: [(index: Int, distance: Int, name: String)] = []
        var scratch = EditScratch()
        for index in 0..<count {
            let other = compared(index)
            let distance: Int
            // Related (one contains the other): 0 when equal, else 1.
            if let equal = target.relation(to: other) {
                distance = equal ? 0 : 1
            } else if let measured = editDistance(target.bytes, other.bytes, atMost: limit, scratch: &scratch) {
                distance = measured
            } else {
                continue
            }
            let candidate = candidateName(index)
            if candidate == name { continue }
            if kept.count == 3, !((distance, candidate) < (kept[2].distance, kept[2].name)) { continue }
            guard keep(index) else { continue }
            let at = kept.firstIndex { (distance, candidate) < ($0.distance, $0.name) } ?? kept.count
            kept.insert((index, distance, candidate), at: at)
            if kept.count > 3 { kept.removeLast() }
            if kept.count == 3 { limit = min(limit, kept[2].distance) }
        }
        return kept.map(\.index)
    }

    /// A name as compared: lowercased, without a leading `any `, as UTF-8 bytes; an ASCII name
    /// (every Swift type's, nearly) lowercased byte by byte, without a `String` made for it.
    struct Compared {
        var bytes: [UInt8]
        /// The normalized name as a string, for a name that is not all ASCII (compared as Swift
        /// compares strings); nil for an ASCII one.
        var text: String?
        /// How many characters the normalized name has (asked of the name looked for only).
        var characters: Int { text?.count ?? bytes.count }

        init(_ name: String) {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(name.utf8.count)
            for byte in name.utf8 {
                guard byte < 0x80 else {
                    let text = NameSimilarity.normalized(name)
                    self.bytes = Array(text.utf8)
                    self.text = text
                    return
                }
                bytes.append((0x41...0x5A).contains(byte) ? byte | 0x20 : byte)
            }
            if bytes.starts(with: "any ".utf8) { bytes.removeFirst(4) }
            self.bytes = bytes
            text = nil
        }

        /// Nil when neither contains the other; else whether they are equal.
        func relation(to other: Compared) -> Bool? {
            if text == nil, other.text == nil {
                if bytes == other.bytes { return true }
                return NameSimilarity.contains(bytes, other.bytes) || NameSimilarity.contains(other.bytes, bytes) ? false : nil
            }
            let mine = text ?? String(decoding: bytes, as: UTF8.self)
            let theirs = other.text ?? String(decoding: other.bytes, as: UTF8.self)
            if mine == theirs { return true }
            return theirs.contains(mine) || mine.contains(theirs) ? false : nil
        }
    }

    /// Whether `needle` occurs in `haystack`, byte for byte.
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard let first = needle.first else { return true }
        guard needle.count <= haystack.count else { return false }
        var start = 0
        while start <= haystack.count - needle.count {
            if haystack[start] == first {
                var k = 1
                while k < needle.count, haystack[start + k] == needle[k] { k += 1 }
                if k == needle.count { return true }
            }
            start += 1
        }
        return false
    }

    static func normalized(_ name: String) -> String {
        var n = name.lowercased()
        if n.hasPrefix("any ") { n.removeFirst(4) }
        return n
    }

    /// The Levenshtein distance of `a` and `b` if it is at most `limit`, else nil; in time
    /// proportional to their length times `limit`, at most. The common start and end are set
    /// aside (they change no distance); only cells within `limit` of the diagonal are computed
    /// (any other is more than `limit`), and a row whose every cell is over `limit` ends it.
    static func editDistance(_ a: [UInt8], _ b: [UInt8], atMost limit: Int) -> Int? {
        var scratch = EditScratch()
        return editDistance(a, b, atMost: limit, scratch: &scratch)
    }

    /// The two rows `editDistance` works in, kept from one comparison to the next.
    struct EditScratch {
        var previous: [Int] = []
        var current: [Int] = []
    }

    /// `editDistance(_:_:atMost:)`, in the rows of `scratch` (grown when too short).
    static func editDistance(_ a: [UInt8], _ b: [UInt8], atMost limit: Int, scratch: inout EditScratch) -> Int? {
        var start = 0
        while start < a.count, start < b.count, a[start] == b[start] { start += 1 }
        var endA = a.count, endB = b.count
        while endA > start, endB > start, a[endA - 1] == b[endB - 1] {
            endA -= 1
            endB -= 1
        }
        let n = endA - start, m = endB - start
        guard abs(n - m) <= limit else { return nil }
        if n == 0 || m == 0 { return n + m }
        if scratch.previous.count < m + 1 {
            scratch.previous = [Int](repeating: 0, count: m + 1)
            scratch.current = scratch.previous
        }
        return scratch.previous.withUnsafeMutableBufferPointer { previousRow in
            scratch.current.withUnsafeMutableBufferPointer { currentRow in
                banded(a[start..<endA], b[start..<endB], limit: limit, previousRow, currentRow)
            }
        }
    }

    /// The banded rows of `editDistance`, for `a` and `b` without their common start and end,
    /// neither empty, in rows of at least `b.count + 1` cells (whatever they hold).
    private static func banded(
        _ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>, limit: Int,
        _ previousRow: UnsafeMutableBufferPointer<Int>, _ currentRow: UnsafeMutableBufferPointer<Int>
    ) -> Int? {
        let n = a.count, m = b.count, over = limit + 1
        let a0 = a.startIndex, b0 = b.startIndex
        // Row i holds the distances of a's first i bytes to b's first j, within the band; the
        // cell on each side of it holds `over`. A row reads only those of the one before.
        var previous = previousRow, current = currentRow
        // Row 0 within the band, and one cell past it (outside the band, as every row keeps).
        for j in 0...min(m, limit) { previous[j] = j }
        if limit + 1 <= m { previous[limit + 1] = over }
        for i in 1...n {
            let low = max(1, i - limit), high = min(m, i + limit)
            current[low - 1] = low == 1 ? min(i, over) : over
            var rowMinimum = current[low - 1]
            let byte = a[a0 + i - 1]
            for j in low...high {
                let replace = previous[j - 1] + (byte == b[b0 + j - 1] ? 0 : 1)
                let value = min(replace, previous[j] + 1, current[j - 1] + 1, over)
                current[j] = value
                rowMinimum = min(rowMinimum, value)
            }
            if high < m { current[high + 1] = over }
            if rowMinimum > limit { return nil }
            swap(&previous, &current)
        }
        return previous[m] <= limit ? previous[m] : nil
    }
}
