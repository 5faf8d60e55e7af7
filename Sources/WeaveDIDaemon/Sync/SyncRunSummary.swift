/// A finished run in one line, the same in the daemon's log and in weavedictl (`run-job
/// --wait`, a run asked for and skipped), each putting its own job prefix before it:
/// `run docs-3 success in 2.5 s (copied 4, updated 1, deleted 0, skipped 9, errors 0,
/// 1.5 MiB): its message`. A count a reply lacks (an older or broken daemon) is `-`.
package struct SyncRunSummary {
    /// The run's id; nil for a run that never was (one asked for and skipped: it has none).
    package var id: String?
    /// `success`, `partial`, `failed`, `cancelled` or `skipped`.
    package var result: String
    /// Seconds it took.
    package var duration: Double?
    /// Files copied, updated, deleted and skipped, items that failed, bytes written.
    package var copied: Int?, updated: Int?, deleted: Int?, skipped: Int?, errors: Int?, bytes: Int?
    /// The run's message.
    package var message: String?

    /// A summary of these facts.
    package init(
        id: String?, result: String, duration: Double?, copied: Int?, updated: Int?, deleted: Int?, skipped: Int?, errors: Int?,
        bytes: Int?, message: String?
    ) {
        self.id = id
        self.result = result
        self.duration = duration
        self.copied = copied
        self.updated = updated
        self.deleted = deleted
        self.skipped = skipped
        self.errors = errors
        self.bytes = bytes
        self.message = message
    }

    /// The summary of `record`.
    init(_ record: SyncRunRecord) {
        self.init(
            id: record.id.isEmpty ? nil : record.id, result: record.result.rawValue, duration: record.duration,
            copied: record.copied, updated: record.updated, deleted: record.deleted, skipped: record.skipped,
            errors: record.errorCount, bytes: record.bytes, message: record.message)
    }

    /// The line. `escaping` is applied to what came from outside (the id and the message:
    /// weavedictl escapes a reply's control characters; the log escapes its whole line);
    /// `shownResult`, when given, stands for the result (weavedictl's, escaped and coloured).
    package func text(shownResult: String? = nil, escaping: (String) -> String = { $0 }) -> String {
        func count(_ value: Int?) -> String { value.map(String.init) ?? "-" }
        var text = id.map { "run " + escaping($0) + " " } ?? ""
        text += shownResult ?? escaping(result)
        if let duration { text += " in " + Format.duration(duration) }
        text += " (copied \(count(copied)), updated \(count(updated)), deleted \(count(deleted)), skipped \(count(skipped)), "
            + "errors \(count(errors)), \(bytes.map(Format.bytes) ?? "-"))"
        if let message, !message.isEmpty { text += ": " + escaping(message) }
        return text
    }
}
