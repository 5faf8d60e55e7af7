import Foundation
import Testing

/// Every in-page link of the README (`](#anchor)`) names one of their headings, by GitHub's
/// rules for a heading's anchor: lower case, punctuation dropped (letters, digits, `_`, `-` and
/// spaces kept), spaces turned into `-`, a repeated heading's anchor suffixed `-1`, `-2`, ...
@Suite struct ReadmeLinksTests {
    @Test func everyInPageLink_namesAHeading() throws {
        let file = "README.md"
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var anchors: Set<String> = []
        var seen: [String: Int] = [:]
        var fenced = false
        for line in lines {
            let trimmed = line.drop { $0 == " " }
            if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                fenced.toggle()
                continue
            }
            guard !fenced, line.hasPrefix("#") else { continue }
            let hashes = line.prefix { $0 == "#" }
            guard hashes.count <= 6, line.dropFirst(hashes.count).first == " " else { continue }
            let anchor = Self.anchor(of: String(line.dropFirst(hashes.count)))
            let count = seen[anchor, default: 0]
            seen[anchor] = count + 1
            anchors.insert(count == 0 ? anchor : "\(anchor)-\(count)")
        }
        #expect(anchors.count >= 40)
        var links = 0
        for (number, line) in lines.enumerated() {
            var rest = line[...]
            while let start = rest.range(of: "](#") {
                let tail = rest[start.upperBound...]
                let name = tail.prefix { $0 != ")" && $0 != " " }
                links += 1
                let named = anchors.contains(String(name))
                #expect(named, "\(file):\(number + 1): the link #\(name) names no heading")
                rest = tail.dropFirst(name.count)
            }
        }
        #expect(links >= 40, "\(file) has \(links) in-page links")
    }

    /// A heading's anchor on GitHub: its text without links' targets and inline code's
    /// backquotes, lower case, punctuation dropped, spaces as `-`.
    static func anchor(of heading: String) -> String {
        var text = heading.trimmingCharacters(in: .whitespaces)
        while text.hasSuffix("#") { text.removeLast() }
        // A link keeps its text: `[text](target)` reads `text`.
        while let open = text.range(of: "]("), let close = text[open.upperBound...].firstIndex(of: ")") {
            text.removeSubrange(open.lowerBound...close)
        }
        var anchor = ""
        for character in text.trimmingCharacters(in: .whitespaces).lowercased() {
            if character == " " {
                anchor.append("-")
            } else if character.isLetter || character.isNumber || character == "_" || character == "-" {
                anchor.append(character)
            }
        }
        return anchor
    }
}
