import WeaveDI
import WeaveDIPosix

/// The files a job's runs skipped, run after run, because each changed while being copied: by
/// path (relative to the job's roots), how many of the job's last runs in a row skipped it so.
/// One run that skips a file in use is right (a busy source would otherwise never succeed), but
/// a file skipped so in `runsBeforeError` runs in a row is written all the time, and never in
/// the backup: from that run on it is an error of the run (`MirrorJob`), until a run copies it
/// or it is gone.
///
/// Kept per job by the scheduler, and in `jobs.json` (`changingFiles`), so that a restart
/// (a host restarted more often than a weekly job runs) does not count again from 0 and call
/// the job healthy for two more runs; for the roots it was counted on only: a job whose source
/// or destination changes, or that a reload removes, forgets.
struct ChangingFiles: Sendable, Equatable {
    /// The job's source and destination the counts are of.
    var source: String
    var destination: String
    /// Runs in a row that skipped each path as changed while being copied.
    var runs: [String: Int] = [:]

    /// After how many runs in a row a file changed while being copied is an error of the run.
    static let runsBeforeError = 3
    /// How many paths a job remembers: those counted longest first, then in the walk's order.
    /// The others' skips stay warnings (the run's message counts them) until there is room.
    static let pathLimit = 50
    /// A path longer than this (UTF-8 bytes) is not remembered: `jobs.json` keeps 50 for every
    /// job, and is not read past 16 MiB.
    static let pathByteLimit = 1024
    /// The most runs in a row a file may say: far beyond the threshold, far from overflowing.
    static let maximumRuns = Int(Int32.max)

    /// The memory of a job of these roots (empty strings for a job without them).
    init(source: String, destination: String, runs: [String: Int] = [:]) {
        self.source = source
        self.destination = destination
        self.runs = runs
    }

    /// Whether this memory was counted on these roots.
    func isOf(source: String, destination: String) -> Bool {
        self.source == source && self.destination == destination
    }

    /// How many runs in a row, this one included, skipped `path` as changed while being
    /// copied, when this run skips it so.
    func runsInARow(_ path: String) -> Int { Self.runsInARow(path, after: runs) }

    /// The same, of the counts `runs` kept (`SyncRunContext.changingFiles`) as a run has them.
    static func runsInARow(_ path: String, after runs: [String: Int]) -> Int {
        min((runs[path] ?? 0) + 1, maximumRuns)
    }

    /// The memory after a run that went through the tree and skipped `skipped` (paths) as
    /// changed while being copied: those counted one run more, the others forgotten (copied,
    /// gone, or not changing any more), at most `pathLimit` of them.
    func after(_ skipped: [String]) -> ChangingFiles {
        var next = ChangingFiles(source: source, destination: destination)
        let remembered = skipped.enumerated()
            .filter { $0.element.utf8.count <= Self.pathByteLimit }
            .sorted { (runs[$0.element] ?? 0, -$0.offset) > (runs[$1.element] ?? 0, -$1.offset) }
        for (_, path) in remembered where next.runs.count < Self.pathLimit {
            next.runs[path] = runsInARow(path)
        }
        return next
    }

    /// `changingFiles` of a job's entry in `jobs.json`.
    var json: JSONValue {
        .object([
            ("source", .string(source)), ("destination", .string(destination)),
            ("files", .object(runs.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
        ])
    }

    /// `changingFiles` of a job's entry in `jobs.json`, nil when absent or null. One no run
    /// writes is dropped alone, said in `dropped`: it only counts runs toward an error, and
    /// the count starts again.
    static func read(_ entry: JSONValue, dropped: inout [PersistedStateProblem]) -> ChangingFiles? {
        guard let json = entry[member: "changingFiles"], !json.isNull else { return nil }
        do { return try ChangingFiles(json: json) } catch {
            dropped.append(error)
            return nil
        }
    }

    /// Reads `changingFiles` back; a value no run writes (more than `pathLimit` paths, a path
    /// longer than `pathByteLimit`, a count out of range) is refused.
    init(json: JSONValue) throws(PersistedStateProblem) {
        let prefix = "changingFiles."
        guard json.objectMembers != nil else {
            throw PersistedStateProblem(description: "changingFiles: expected an object or null, got \(PersistedStateProblem.describe(json))")
        }
        source = try PersistedStateProblem.string(json, "source", prefix: prefix)
        destination = try PersistedStateProblem.string(json, "destination", prefix: prefix)
        guard let files = json[member: "files"]?.objectMembers, files.count <= Self.pathLimit else {
            throw PersistedStateProblem(
                description: "changingFiles.files: expected an object of at most \(Self.pathLimit) paths, "
                    + "got \(PersistedStateProblem.describe(json[member: "files"]))")
        }
        for (path, _) in files {
            guard path.utf8.count <= Self.pathByteLimit, runs[path] == nil else {
                throw PersistedStateProblem(
                    description: "changingFiles.files: expected distinct paths of at most \(Self.pathByteLimit) bytes, "
                        + "got \(PersistedStateProblem.quoted(path))")
            }
            // The path, from the file, quoted as every message quotes one.
            let label = "changingFiles.files[\(PersistedStateProblem.quoted(path))]"
            runs[path] = try PersistedStateProblem.count(json[member: "files"] ?? .null, path, label: label, maximum: Self.maximumRuns)
            guard runs[path] != 0 else {
                throw PersistedStateProblem(description: "\(label): expected an integer from 1, got 0")
            }
        }
    }
}
