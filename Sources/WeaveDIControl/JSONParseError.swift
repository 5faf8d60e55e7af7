/// Why a JSON document was rejected, and where.
///
/// `line` and `column` are 1-based; `column` counts Unicode scalars (UTF-8 sequences) from the
/// start of the line, so it matches what an editor shows for text without tabs. `offset` is
/// the 0-based byte offset of the same place. Lines are separated by `\n`.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line of the problem.
    public let line: Int
    /// The 1-based column of the problem, in Unicode scalars from the start of the line.
    public let column: Int
    /// The 0-based byte offset of the problem.
    public let offset: Int
    /// What is wrong, such as `expected ',' or '}' after an object member`.
    public let problem: String

    init(line: Int, column: Int, offset: Int, problem: String) {
        self.line = line
        self.column = column
        self.offset = offset
        self.problem = problem
    }

    /// Computes the line and column of `offset` in `bytes`.
    init(problem: String, at offset: Int, in bytes: UnsafeBufferPointer<UInt8>) {
        var line = 1
        var column = 1
        var index = 0
        let end = Swift.min(offset, bytes.count)
        while index < end {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                // Continuation bytes belong to the scalar already counted.
                column += 1
            }
            index += 1
        }
        self.init(line: line, column: column, offset: offset, problem: problem)
    }

    /// `line L, column C: problem`.
    public var description: String {
        "line \(line), column \(column): \(problem)"
    }
}
