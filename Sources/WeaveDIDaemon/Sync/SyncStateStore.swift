import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Keeps the last run of each job in the state directory (`jobs.json`, replaced atomically),
/// so that after a restart health knows how each job last went. Saves are written off the
/// caller's thread, newest first (`LatestFileWriter`); `flush` waits for them.
struct SyncStateStore: Sendable {
    let path: String
    let log: DaemonLog
    private let writer: LatestFileWriter

    init(stateDirectory: String, log: DaemonLog) {
        path = stateDirectory + "/jobs.json"
        self.log = log
        writer = LatestFileWriter(purpose: "the jobs' state file", permissions: 0o640, durable: true, makesDirectory: true, log: log)
    }

    /// The persisted last runs, by job; empty when there is no file yet. A file that cannot be
    /// read (within the step limit: see `LatestFileWriter`) or is damaged is reported and
    /// ignored (it is rewritten after the next run).
    ///
    /// Blocks the calling thread meanwhile (the read is on a thread of its own): the scheduler
    /// calls it as it starts, and a call that suspended would let control calls into the
    /// scheduler before it has its jobs.
    func load() -> [String: PersistedJobState] {
        let step = FileStep("reading the file", path)
        let bytes: [UInt8]?
        do {
            bytes = try StepDeadline.run(limit: StepDeadline.stepLimit, first: step, for: "a read of the jobs' state file") {
                [path] _ throws(FileStep.Failure) in
                do throws(Errno) {
                    let file = try FileDescriptor.open(path, .readOnly)
                    return try file.descriptor.readToEnd()
                } catch .noSuchFileOrDirectory {
                    return nil
                } catch {
                    throw step.failure("\(error)", errno: error.rawValue)
                }
            }
        } catch {
            log.warning("sync", "\(path): \(error.problem); starting without the jobs' previous results")
            return [:]
        }
        guard let bytes else { return [:] }
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

    /// Asks for every job's state to be written; returns at once.
    func save(_ states: [String: PersistedJobState]) {
        let json = JSONValue.object([("jobs", .object(states.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) }))])
        writer.write(Array(json.serialized.utf8), to: path)
    }

    /// Waits for the saves asked for so far.
    func flush() async {
        await writer.flush()
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
