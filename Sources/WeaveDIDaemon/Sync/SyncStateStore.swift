import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Keeps the last run of each job in the state directory (`jobs.json`, replaced atomically),
/// so that after a restart health knows how each job last went.
struct SyncStateStore: Sendable {
    let path: String
    let log: DaemonLog

    init(stateDirectory: String, log: DaemonLog) {
        path = stateDirectory + "/jobs.json"
        self.log = log
    }

    /// The persisted last runs, by job; empty when there is no file yet. A damaged file is
    /// reported and ignored (it is rewritten after the next run).
    func load() -> [String: PersistedJobState] {
        guard let file = try? FileDescriptor.open(path, .readOnly) else { return [:] }
        let bytes = (try? file.descriptor.readToEnd()) ?? []
        do {
            let value = try JSONValue.parse(bytes)
            var states: [String: PersistedJobState] = [:]
            for (name, member) in value[member: "jobs"]?.objectMembers ?? [] {
                if let state = PersistedJobState(json: member) { states[name] = state }
            }
            return states
        } catch {
            log.warning("sync", "\(path): \(error); starting without the jobs' previous results")
            return [:]
        }
    }

    /// Writes every job's state.
    func save(_ states: [String: PersistedJobState]) {
        let json = JSONValue.object([("jobs", .object(states.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) }))])
        do {
            try ensureDirectory()
            try AtomicFile.write(Array(json.serialized.utf8), to: path, permissions: 0o640)
        } catch {
            log.error("sync", "cannot write \(path): \(error)")
        }
    }

    private func ensureDirectory() throws(Errno) {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        try FileDescriptor.currentWorkingDirectory.makeDirectories(at: directory, permissions: 0o750)
    }
}

/// What survives a restart of one job: its last run, last success and failures in a row.
struct PersistedJobState: Sendable, Equatable {
    var lastRun: SyncRunRecord?
    var lastSuccess: Double?
    var consecutiveFailures: Int

    init(lastRun: SyncRunRecord?, lastSuccess: Double?, consecutiveFailures: Int) {
        self.lastRun = lastRun
        self.lastSuccess = lastSuccess
        self.consecutiveFailures = consecutiveFailures
    }

    var json: JSONValue {
        .object([
            ("lastRun", lastRun.map(SyncRunEncoding.record) ?? .null),
            ("lastSuccess", lastSuccess.map(JSONValue.double) ?? .null),
            ("consecutiveFailures", .int(consecutiveFailures)),
        ])
    }

    init?(json: JSONValue) {
        guard let failures = json[member: "consecutiveFailures"]?.intValue else { return nil }
        consecutiveFailures = failures
        lastSuccess = json[member: "lastSuccess"]?.numberValue
        lastRun = json[member: "lastRun"].flatMap(SyncRunEncoding.record(from:))
    }
}
