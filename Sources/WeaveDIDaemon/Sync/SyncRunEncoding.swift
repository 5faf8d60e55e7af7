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
        ])
    }

    static func record(from json: JSONValue) -> SyncRunRecord? {
        guard let id = json[member: "id"]?.stringValue, let job = json[member: "job"]?.stringValue,
            let result = json[member: "result"]?.stringValue.flatMap(SyncResult.init(rawValue:)),
            let started = json[member: "startedAt"]?.numberValue, let ended = json[member: "endedAt"]?.numberValue
        else { return nil }
        var outcome = SyncOutcome(result: result, message: json[member: "message"]?.stringValue)
        outcome.copied = json[member: "filesCopied"]?.intValue ?? 0
        outcome.updated = json[member: "filesUpdated"]?.intValue ?? 0
        outcome.deleted = json[member: "filesDeleted"]?.intValue ?? 0
        outcome.skipped = json[member: "filesSkipped"]?.intValue ?? 0
        outcome.errorCount = json[member: "errors"]?.intValue ?? 0
        outcome.bytes = json[member: "bytes"]?.intValue ?? 0
        return SyncRunRecord(
            id: id, job: job, outcome: outcome, startedAt: started, endedAt: ended,
            duration: json[member: "duration"]?.numberValue ?? ended - started)
    }

    static func progress(_ progress: SyncProgress) -> JSONValue {
        .object([
            ("filesDone", .int(progress.filesDone)), ("filesTotal", .int(progress.filesTotal)),
            ("bytesDone", .int(progress.bytesDone)), ("bytesTotal", .int(progress.bytesTotal)),
        ])
    }
}
