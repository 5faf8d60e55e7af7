import WeaveDI
import WeaveDIControl

/// Runs and progress as the JSON of `io.weavedi.Daemon` (`JobRun`, `Progress`) and of
/// `jobs.json`.
enum SyncRunEncoding {
    /// A run asked for that never started (`skipped`, its id empty) has a null `id` and, in
    /// `goingRunId`, the id of the run that kept it from starting (null if none, such as when
    /// the daemon stops); a run that was has no `goingRunId` (as `jobs.json` keeps it).
    static func record(_ run: SyncRunRecord) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("id", run.id.isEmpty ? .null : .string(run.id)), ("job", .string(run.job)), ("result", .string(run.result.rawValue)),
            ("startedAt", .double(run.startedAt)), ("endedAt", .double(run.endedAt)), ("duration", .double(run.duration)),
            ("filesCopied", .int(run.copied)), ("filesUpdated", .int(run.updated)), ("filesDeleted", .int(run.deleted)),
            ("filesSkipped", .int(run.skipped)), ("errors", .int(run.errorCount)), ("bytes", .int(run.bytes)),
            ("message", run.message.map(JSONValue.string) ?? .null),
            ("failedItems", .array(run.errors.map { .object([("path", .string($0.path)), ("reason", .string($0.reason))]) })),
        ]
        if run.id.isEmpty { members.append(("goingRunId", run.goingRunID.map(JSONValue.string) ?? .null)) }
        return .object(members)
    }

    /// A run as `jobs.json` keeps it; something else than an object, or a value missing, of
    /// the wrong type or out of range is refused (named `lastRun` or `lastRun.…`), and the
    /// caller drops the whole run. But what only tells about the run, and decides nothing
    /// else of it (`failedItems`, `message`), is dropped instead when it is no value a run
    /// writes, and `dropped` says why: the run is kept without it. A message longer than a
    /// run keeps is cut as a run cuts it (`SyncRunRecord.messageByteLimit`).
    static func record(from json: JSONValue, dropped: inout [PersistedStateProblem]) throws(PersistedStateProblem) -> SyncRunRecord {
        typealias Check = PersistedStateProblem
        guard json.objectMembers != nil else {
            throw Check(description: "lastRun: expected an object or null, got \(Check.describe(json))")
        }
        let prefix = "lastRun."
        let id = try Check.string(json, "id", prefix: prefix)
        let job = try Check.string(json, "job", prefix: prefix)
        let resultText = try Check.string(json, "result", prefix: prefix)
        guard let result = SyncResult(rawValue: resultText) else {
            throw Check(description: "\(prefix)result: unknown result \(Check.describe(.string(resultText)))")
        }
        let started = try Check.time(json, "startedAt", prefix: prefix) ?? 0
        let ended = try Check.time(json, "endedAt", prefix: prefix) ?? 0
        var outcome = SyncOutcome(result: result)
        switch json[member: "message"] {
        case nil, .null?: break
        case let .string(message)?: outcome.message = message
        case let other?: dropped.append(Check(description: "\(prefix)message: expected a string or null, got \(Check.describe(other))"))
        }
        outcome.copied = try Check.count(json, "filesCopied", prefix: prefix, required: false)
        outcome.updated = try Check.count(json, "filesUpdated", prefix: prefix, required: false)
        outcome.deleted = try Check.count(json, "filesDeleted", prefix: prefix, required: false)
        outcome.skipped = try Check.count(json, "filesSkipped", prefix: prefix, required: false)
        outcome.errorCount = try Check.count(json, "errors", prefix: prefix, required: false)
        outcome.bytes = try Check.count(json, "bytes", prefix: prefix, required: false)
        let duration = try Check.time(json, "duration", prefix: prefix, optional: true) ?? max(0, ended - started)
        do {
            outcome.errors = try failedItems(json[member: "failedItems"], prefix: prefix)
        } catch {
            dropped.append(error)
        }
        return SyncRunRecord(id: id, job: job, outcome: outcome, startedAt: started, endedAt: ended, duration: duration)
    }

    /// The failed items of a run as the file keeps them (none in a file of an older daemon, or
    /// for `null`): as a run writes them, at most `SyncRunRecord.failedItemsKept`, each a path
    /// and a reason of at most `SyncItemError.byteLimit` bytes. Anything else is no list a run
    /// wrote, and none of it is taken.
    static func failedItems(_ value: JSONValue?, prefix: String) throws(PersistedStateProblem) -> [SyncItemError] {
        typealias Check = PersistedStateProblem
        guard let value, !value.isNull else { return [] }
        guard let list = value.arrayValue else {
            throw Check(description: "\(prefix)failedItems: expected an array or null, got \(Check.describe(value))")
        }
        guard list.count <= SyncRunRecord.failedItemsKept else {
            throw Check(description: "\(prefix)failedItems: expected at most \(SyncRunRecord.failedItemsKept) items, got \(list.count)")
        }
        var items: [SyncItemError] = []
        for (index, item) in list.enumerated() {
            let at = "\(prefix)failedItems[\(index)]"
            guard item.objectMembers != nil else {
                throw Check(description: "\(at): expected an object with a path and a reason, got \(Check.describe(item))")
            }
            let path = try Check.string(item, "path", prefix: at + ".")
            let reason = try Check.string(item, "reason", prefix: at + ".")
            for (name, text) in [("path", path), ("reason", reason)] where text.utf8.count > SyncItemError.byteLimit {
                throw Check(description: "\(at).\(name): expected at most \(SyncItemError.byteLimit) bytes, got \(text.utf8.count)")
            }
            items.append(SyncItemError(path: path, reason: reason))
        }
        return items
    }

    static func progress(_ progress: SyncProgress) -> JSONValue {
        .object([
            ("filesDone", .int(progress.filesDone)), ("filesSkipped", .int(progress.filesSkipped)),
            ("filesFailed", .int(progress.filesFailed)),
            ("filesTotal", .int(progress.filesTotal)),
            ("bytesDone", .int(progress.bytesDone)), ("bytesTotal", .int(progress.bytesTotal)),
        ])
    }
}
