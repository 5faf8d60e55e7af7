import WeaveDI
import WeaveDIDaemon

/// Shows `io.weavedi.Daemon.Progress` replies: on a terminal one bar redrawn in place with
/// `\r`, otherwise one line per update (so logs and pipes get readable text).
struct ProgressBar {
    /// Characters between the brackets.
    var width = 30

    /// The bar and figures for a `Progress` object, e.g.
    /// `[#########.....................]  30%  3/10 files  1.5 MiB / 5.0 MiB`, with the files
    /// that failed or were skipped (not copied) when there are any: `3/10 files (2 failed, 1 skipped)`.
    func bar(_ progress: JSONValue) -> String {
        let fraction = Self.fraction(progress)
        let filled = Int((fraction * Double(width)).rounded(.down))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + Self.percent(fraction) + "  " + Self.figures(progress)
    }

    /// One line for a log: `progress: 3/10 files, 1.5 MiB / 5.0 MiB (30%)`.
    func line(_ progress: JSONValue) -> String {
        "progress: " + Self.figures(progress).replacingOccurrences("  ", ", ") + " (" + Self.percent(Self.fraction(progress)).drop { $0 == " " } + ")"
    }

    /// What to write for one update: `\r`, the bar and clear-to-end-of-line on a terminal,
    /// else a line.
    func update(_ progress: JSONValue, isTerminal: Bool) -> String {
        isTerminal ? "\r" + bar(progress) + "\u{1B}[K" : line(progress) + "\n"
    }

    /// Whether `progress` counts nothing at all, done or to do, in files or bytes: the run has
    /// not walked its tree (or stopped before it did), so there is no progress to show.
    static func countsNothing(_ progress: JSONValue) -> Bool {
        ["filesDone", "filesSkipped", "filesFailed", "filesTotal", "bytesDone", "bytesTotal"].allSatisfy { (progress.int($0) ?? 0) == 0 }
    }

    /// Done over total, by bytes when the total is known, else by files; 0 to 1. Short of 1
    /// (99 % at most) while files are not done: a file that failed in the walk (a name not
    /// UTF-8) counts in `filesTotal` but no bytes, and the bar must not say 100 % for it.
    static func fraction(_ progress: JSONValue) -> Double {
        let bytesTotal = progress.int("bytesTotal") ?? 0
        let filesTotal = progress.int("filesTotal") ?? 0
        let filesDone = progress.int("filesDone") ?? 0
        let (done, total) = bytesTotal > 0 ? (progress.int("bytesDone") ?? 0, bytesTotal) : (filesDone, filesTotal)
        guard total > 0 else { return 0 }
        let fraction = min(1, max(0, Double(done) / Double(total)))
        return filesDone < filesTotal ? min(fraction, 0.99) : fraction
    }

    private static func percent(_ fraction: Double) -> String {
        let value = String(Int((fraction * 100).rounded(.down)))
        return String(repeating: " ", count: 3 - value.count) + value + "%"
    }

    private static func figures(_ progress: JSONValue) -> String {
        let notes = [("filesFailed", "failed"), ("filesSkipped", "skipped")].compactMap { key, word in
            (progress.int(key) ?? 0) > 0 ? "\(progress.intText(key)) \(word)" : nil
        }
        let counted = notes.isEmpty ? "" : " (" + notes.joined(separator: ", ") + ")"
        return "\(progress.intText("filesDone"))/\(progress.intText("filesTotal")) files\(counted)  "
            + Format.bytes(progress.int("bytesDone") ?? 0) + " / " + Format.bytes(progress.int("bytesTotal") ?? 0)
    }
}

extension String {
    /// Every occurrence of `target` replaced by `replacement` (without Foundation).
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
