import WeaveDIControl

/// A table for people: a header row and aligned columns separated by two spaces; the last
/// column is not padded, so no line ends in blanks. Widths are the terminal columns of the plain
/// text (`DisplayWidth`: a CJK character or an emoji takes two), and styles are applied after padding so colour never upsets the alignment.
struct Table {
    /// One cell: its text and, optionally, a style used on a colour terminal.
    struct Cell: ExpressibleByStringLiteral {
        var text: String
        var style: Terminal.Style?

        /// Control characters in `text` (which may come from outside: a file name, a check's
        /// message) are escaped.
        init(_ text: String, _ style: Terminal.Style? = nil) {
            self.text = text.escapingControlCharacters
            self.style = style
        }

        init(stringLiteral value: String) {
            self.init(value)
        }
    }

    /// The column titles.
    var headers: [String]
    /// The rows; each has as many cells as there are headers.
    var rows: [[Cell]] = []
    /// Columns whose cells are aligned to the right (numbers).
    var rightAligned: Set<Int> = []

    /// A table with these column titles.
    init(_ headers: [String], rightAligned: Set<Int> = []) {
        self.headers = headers
        self.rightAligned = rightAligned
    }

    /// Adds a row.
    mutating func append(_ row: [Cell]) {
        precondition(row.count == headers.count, "a row needs one cell per column")
        rows.append(row)
    }

    /// The lines of the table, headers first (bold on a colour terminal).
    func render(on terminal: Terminal) -> String {
        var widths = headers.map(DisplayWidth.of)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], DisplayWidth.of(cell.text)) }
        }
        var lines = [line(headers.map { Cell($0, .bold) }, widths: widths, on: terminal)]
        for row in rows { lines.append(line(row, widths: widths, on: terminal)) }
        return lines.joined(separator: "\n") + "\n"
    }

    private func line(_ cells: [Cell], widths: [Int], on terminal: Terminal) -> String {
        var pieces: [String] = []
        for (index, cell) in cells.enumerated() {
            let padding = String(repeating: " ", count: widths[index] - DisplayWidth.of(cell.text))
            let styled = terminal.styled(cell.text, cell.style)
            if rightAligned.contains(index) {
                pieces.append(padding + styled)
            } else {
                pieces.append(index == cells.count - 1 ? styled : styled + padding)
            }
        }
        var text = pieces.joined(separator: "  ")
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }
}
