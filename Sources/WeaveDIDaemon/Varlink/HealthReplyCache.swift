import WeaveDI
import WeaveDIControl

/// `GetHealth`'s reply, kept encoded for the last report: taking the report and encoding every
/// check on every call cost most of the call. The bytes are reused while the registry's
/// `reportChanges` (and the tags asked for) are what they were made from; `takenAt`, which
/// changes on every call, is written fresh between them.
final class HealthReplyCache: Sendable {
    private struct Entry {
        /// The registry the report came from (counts of two registries say nothing of each other).
        var registry: ObjectIdentifier
        var tags: Set<String>?
        /// The registry's `reportChanges` read before the report was taken: the report is at
        /// least that recent, so while the count stays there, nothing in it has changed.
        var changes: UInt64
        /// `{"parameters":{"health":{"status":…,"score":…,"takenAt":`
        var head: [UInt8]
        /// `,"checks":[…]}}}`
        var tail: [UInt8]
    }

    private let entry = Locked<Entry?>(nil)

    /// Appends the reply for `registry`'s report for `tags` now, without its NUL terminator.
    func write(_ registry: UnifiedRegistry, tags: Set<String>?, into out: inout [UInt8]) {
        let changes = registry.reportChanges
        let cached = entry.withLock { entry -> Entry? in
            guard let entry, entry.changes == changes, entry.registry == ObjectIdentifier(registry), entry.tags == tags
            else { return nil }
            return entry
        }
        let parts: Entry
        let takenAt: Double
        if let cached {
            parts = cached
            takenAt = registry.clock.wallTime
        } else {
            let report = registry.report(tags: tags)
            parts = Self.encode(report, from: registry, tags: tags, changes: changes)
            takenAt = report.takenAt
            entry.withLock { $0 = parts }
        }
        out.append(contentsOf: parts.head)
        JSONValue.writeDouble(takenAt, into: &out)
        out.append(contentsOf: parts.tail)
    }

    private static func encode(_ report: HealthReport, from registry: UnifiedRegistry, tags: Set<String>?, changes: UInt64) -> Entry {
        var head = Array(#"{"parameters":{"health":{"status":"#.utf8)
        JSONValue.writeQuoted(report.status.rawValue, into: &head)
        head.append(contentsOf: #","score":"#.utf8)
        JSONValue.writeInteger(report.score, into: &head)
        head.append(contentsOf: #","takenAt":"#.utf8)
        var tail = Array(#","checks":"#.utf8)
        JSONValue.array(report.checks.map(ReportEncoding.check)).write(into: &tail)
        tail.append(contentsOf: "}}}".utf8)
        return Entry(registry: ObjectIdentifier(registry), tags: tags, changes: changes, head: head, tail: tail)
    }
}
