/// Suggests registered type names close to a missing one ("did you mean UserServiceImpl?").
enum NameSimilarity {
    /// Up to three of `candidates` that resemble `name` and that `keep` accepts, closest first
    /// (`keep` is asked only about those that resemble `name`).
    static func suggestions(
        for name: String, among candidates: [String], keep: (String) -> Bool = { _ in true }
    ) -> [String] {
        let target = normalized(name)
        var scored: [(String, Int)] = []
        for candidate in Set(candidates) where candidate != name {
            let other = normalized(candidate)
            let distance = editDistance(target, other)
            let related = other.contains(target) || target.contains(other)
            if related || distance <= max(2, target.count / 3) {
                scored.append((candidate, related ? min(distance, 1) : distance))
            }
        }
        var kept: [String] = []
        for (candidate, _) in scored.sorted(by: { ($0.1, $0.0) < ($1.1, $1.0) }) where kept.count < 3 && keep(candidate) {
            kept.append(candidate)
        }
        return kept
    }

    private static func normalized(_ name: String) -> String {
        var n = name.lowercased()
        if n.hasPrefix("any ") { n.removeFirst(4) }
        return n
    }

    /// Levenshtein distance.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
