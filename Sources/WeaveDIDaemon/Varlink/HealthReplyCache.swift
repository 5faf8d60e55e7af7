import WeaveDI
import WeaveDIControl

/// `GetHealth`'s reply, kept encoded for the last report: encoding every check on every call
/// cost most of the call. The bytes are reused while the report's checks (and the tags asked
/// for) are equal to those they were made from; `takenAt`, which changes on every call, is
/// written fresh between them.
final class HealthReplyCache: Sendable {
    private struct Entry {
        var tags: Set<String>?
        var checks: [CheckReport]
        /// `{"parameters":{"health":{"status":…,"score":…,"takenAt":`
        var head: [UInt8]
        /// `,"checks":[…]}}}`
        var tail: [UInt8]
    }

    private let entry = Locked<Entry?>(nil)

    /// Appends the reply for `report` (taken for `tags`), without its NUL terminator.
    func write(_ report: HealthReport, tags: Set<String>?, into out: inout [UInt8]) {
        let cached = entry.withLock { entry -> Entry? in
            guard let entry, entry.tags == tags, entry.checks == report.checks else { return nil }
            return entry
        }
        let parts = cached ?? Self.encode(report, tags: tags)
        if cached == nil { entry.withLock { $0 = parts } }
        out.append(contentsOf: parts.head)
        JSONValue.writeDouble(report.takenAt, into: &out)
        out.append(contentsOf: parts.tail)
    }

    private static func encode(_ report: HealthReport, tags: Set<String>?) -> Entry {
        var head = Array(#"{"parameters":{"health":{"status":"#.utf8)
        JSONValue.writeQuoted(report.status.rawValue, into: &head)
        head.append(contentsOf: #","score":"#.utf8)
        JSONValue.writeInteger(report.score, into: &head)
        head.append(contentsOf: #","takenAt":"#.utf8)
        var tail = Array(#","checks":"#.utf8)
        JSONValue.array(report.checks.map(ReportEncoding.check)).write(into: &tail)
        tail.append(contentsOf: "}}}".utf8)
        return Entry(tags: tags, checks: report.checks, head: head, tail: tail)
    }
}
