import WeaveDI
import WeaveDIControl

/// Runs and progress as the JSON of `io.weavedi.Daemon` (`JobRun`, `Progress`) and of
/// `jobs.json`.
enum SyncRunEncoding {
    static func record(_ run: SyncRunRecord) -> JSONValue {
        .object([
            ("id", .string(run.id)), ("job", .string(run.job)), ("result", .string(run.result.rawValue)),
            ("startedAt", .double(run.startedAt)), ("endedAt", .double(run.endedAt)), ("duration", .double(run.duration)),
            ("filesCopied", .int(run.copied)), ("filesUpdated", .int(run.updated)), ("filesDeleted", .int(run.deleted)),
            ("filesSkipped", .int(run.skipped)), ("errors", .int(run.errorCount)), ("bytes", .int(run.bytes)),
            ("message", run.message.map(JSONValue.string) ?? .null),
            ("failedItems", .array(run.errors.map { .object([("path", .string($0.path)), ("reason", .string($0.reason))]) })),
        ])
    }

    /// A run as `jobs.json` keeps it; a value missing, of the wrong type or out of range is
    /// refused (named `lastRun.…`).
    static func record(from json: JSONValue) throws(PersistedStateProblem) -> SyncRunRecord {
        typealias Check = PersistedStateProblem
        let prefix = "lastRun."
        let id = try Check.string(json, "id", prefix: prefix)
        let job = try Check.string(json, "job", prefix: prefix)
        let resultText = try Check.string(json, "result", prefix: prefix)
        guard let result = SyncResult(rawValue: resultText) else {
            throw Check(description: "\(prefix)result: unknown result \(Check.describe(.string(resultText)))")
        }
        let started = try Check.time(json, "startedAt", prefix: prefix) ?? 0
        let ended = try Check.time(json, "endedAt", prefix: prefix) ?? 0
        var outcome = SyncOutcome(result: result, message: json[member: "message"]?.stringValue)
        outcome.copied = try Check.count(json, "filesCopied", prefix: prefix, required: false)
        outcome.updated = try Check.count(json, "filesUpdated", prefix: prefix, required: false)
        outcome.deleted = try Check.count(json, "filesDeleted", prefix: prefix, required: false)
        outcome.skipped = try Check.count(json, "filesSkipped", prefix: prefix, required: false)
        outcome.errorCount = try Check.count(json, "errors", prefix: prefix, required: false)
        outcome.bytes = try Check.count(json, "bytes", prefix: prefix, required: false)
        let duration = try Check.time(json, "duration", prefix: prefix, optional: true) ?? max(0, ended - started)
        // The failed items (a file of an older daemon has none); at most the 20 a run keeps.
        if let items = json[member: "failedItems"], !items.isNull {
            guard let list = items.arrayValue else {
                throw Check(description: "\(prefix)failedItems: expected an array, got \(Check.describe(items))")
            }
            for (index, item) in list.prefix(20).enumerated() {
                let at = "\(prefix)failedItems[\(index)]."
                outcome.errors.append(SyncItemError(
                    path: try Check.string(item, "path", prefix: at), reason: try Check.string(item, "reason", prefix: at)))
            }
        }
        return SyncRunRecord(id: id, job: job, outcome: outcome, startedAt: started, endedAt: ended, duration: duration)
    }

    static func progress(_ progress: SyncProgress) -> JSONValue {
        .object([
            ("filesDone", .int(progress.filesDone)), ("filesTotal", .int(progress.filesTotal)),
            ("bytesDone", .int(progress.bytesDone)), ("bytesTotal", .int(progress.bytesTotal)),
        ])
    }
}
