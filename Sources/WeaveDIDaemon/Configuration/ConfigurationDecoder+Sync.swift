import WeaveDI
import WeaveDIControl

/// The `sync` section and its jobs.
extension ConfigurationDecoder {
    static let syncFields = ["maxConcurrentRuns", "metricsFile", "jobs"]
    static let jobFields = [
        "name", "kind", "source", "destination", "interval", "jitter", "runAtStart", "enabled",
        "compare", "delete", "durable", "workers", "destinationMountPoint", "failureThreshold", "staleAfterIntervals",
        "backoffCap",
    ]
    /// The job kinds the configuration accepts: `mirror` and any kind added with
    /// `SyncJobKinds.register` before the configuration is read.
    static var knownJobKinds: [String] { (["mirror"] + SyncJobKinds.registeredNames).sorted() }
    /// The fields only a mirror job has.
    static let mirrorFields: Set<String> = [
        "source", "destination", "compare", "delete", "durable", "workers", "destinationMountPoint",
    ]

    mutating func decodeSync(_ value: JSONValue, at parent: String) throws(ConfigurationError) {
        for (name, value) in try fields.members(of: value, at: parent) {
            let path = try fields.knownMember(name, of: parent, accepted: Self.syncFields)
            switch name {
            case "maxConcurrentRuns":
                configuration.sync.maxConcurrentRuns = try fields.integer(value, at: path, in: 1...64)
            case "metricsFile":
                configuration.sync.metricsFile = try value.isNull ? nil : metricsFile(value, at: path)
            default:
                configuration.sync.jobs = []
                jobIndices = [:]
                mirrorTrees = MirrorTreeIndex()
                let elements = try fields.elements(of: value, at: path)
                // Counted before any job is read: a file of a million jobs is refused at once.
                guard elements.count <= DaemonConfiguration.Sync.maximumJobs else {
                    throw fields.fail(path, "expected at most \(DaemonConfiguration.Sync.maximumJobs) jobs, got \(elements.count)")
                }
                for (index, element) in elements.enumerated() {
                    let job = try decodeJob(element, at: "\(path)[\(index)]", index: index)
                    try checkOverlaps(job, at: "\(path)[\(index)]", with: configuration.sync.jobs, in: path)
                    configuration.sync.jobs.append(job)
                }
            }
        }
    }

    /// An absolute path whose last name ends in `.prom`, without a trailing `/` (which names
    /// a directory: `/var/lib/m.prom/` could never be written as a file).
    private func metricsFile(_ value: JSONValue, at path: String) throws(ConfigurationError) -> String {
        let file = try fields.absolutePath(value, at: path)
        let name = file.split(separator: "/").last ?? ""
        let expected = "expected a file name ending in \".prom\" (the only files node_exporter's textfile collector reads), got \(JSONValue.quotedPathForMessage(file))"
        guard name.hasSuffix(".prom"), name.utf8.count > 5 else { throw fields.fail(path, expected) }
        guard !file.hasSuffix("/") else { throw fields.fail(path, expected + " (a path ending in '/' names a directory)") }
        return file
    }

    private mutating func decodeJob(_ value: JSONValue, at parent: String, index: Int) throws(ConfigurationError) -> DaemonConfiguration.Job {
        var job = DaemonConfiguration.Job(name: "")
        var mirror = DaemonConfiguration.Mirror(source: "", destination: "")
        var seen: Set<String> = []
        for (name, value) in try fields.members(of: value, at: parent) {
            let path = try fields.knownMember(name, of: parent, accepted: Self.jobFields)
            seen.insert(name)
            switch name {
            case "name": job.name = try jobName(value, at: path, index: index)
            case "kind":
                job.kind = try fields.string(value, at: path, expected: "a job kind such as \"mirror\"")
                guard Self.knownJobKinds.contains(job.kind) else {
                    throw fields.fail(path, "unknown job kind \(FieldReader.describe(value)) (known: \(Self.knownJobKinds.joined(separator: ", ")))")
                }
            case "source": mirror.source = try fields.absolutePath(value, at: path)
            case "destination": mirror.destination = try fields.absolutePath(value, at: path)
            case "interval": job.interval = try fields.seconds(value, at: path, in: .from(1))
            case "jitter": job.jitter = try fields.seconds(value, at: path, in: .from(0))
            case "runAtStart": job.runAtStart = try fields.bool(value, at: path)
            case "enabled": job.enabled = try fields.bool(value, at: path)
            case "compare":
                let text = try fields.string(value, at: path, expected: "\"size-mtime\" or \"checksum\"")
                guard let mode = DaemonConfiguration.CompareMode(rawValue: text) else {
                    throw fields.fail(path, "expected \"size-mtime\" or \"checksum\", got \(FieldReader.describe(value))")
                }
                mirror.compare = mode
            case "delete": mirror.delete = try fields.bool(value, at: path)
            case "durable": mirror.durable = try fields.bool(value, at: path)
            case "workers": mirror.workers = try value.isNull ? nil : fields.integer(value, at: path, in: 1...256)
            case "destinationMountPoint": mirror.destinationMountPoint = try fields.bool(value, at: path)
            case "failureThreshold": job.failureThreshold = try fields.integer(value, at: path, in: 1...Int.max)
            case "staleAfterIntervals": job.staleAfterIntervals = try fields.integer(value, at: path, in: 1...1_000_000)
            default: job.backoffCap = try fields.seconds(value, at: path, in: .from(1))
            }
        }
        let mirrorJob = job.kind == "mirror"
        let required = mirrorJob ? ["name", "source", "destination"] : ["name"]
        for field in required where !seen.contains(field) {
            let reason = field == "name" ? "" : " (a mirror job needs a source and a destination)"
            throw fields.fail(parent, "missing required field \"\(field)\"\(reason)")
        }
        if !mirrorJob, let field = Self.jobFields.first(where: { seen.contains($0) && Self.mirrorFields.contains($0) }) {
            throw fields.fail("\(parent).\(field)", "only mirror jobs have this field (this job's kind is '\(job.kind)')")
        }
        if mirrorJob { try checkMirrorPaths(mirror, at: parent) }
        guard job.jitter < job.interval else {
            let interval = SecondsRange.format(job.interval)
            throw fields.fail("\(parent).jitter", "must be less than the interval (\(interval) seconds), got \(SecondsRange.format(job.jitter))")
        }
        if mirrorJob { job.mirror = mirror }
        return job
    }

    /// A job name: 1 to 64 characters from `A-Z a-z 0-9 . _ -`, not `.` or `..`, unique.
    private mutating func jobName(_ value: JSONValue, at path: String, index: Int) throws(ConfigurationError) -> String {
        let expected = "a job name of 1 to 64 characters from A-Z, a-z, 0-9, '.', '_' and '-'"
        let name = try fields.string(value, at: path, expected: expected)
        guard DaemonConfiguration.Job.hasNameCharacters(name) else {
            throw fields.fail(path, "expected \(expected), got \(FieldReader.describe(value))")
        }
        guard name != ".", name != ".." else { throw fields.fail(path, "a job may not be named \(DaemonConfiguration.Job.quoted(name))") }
        if let first = jobIndices[name] {
            throw fields.fail(path, "duplicate job name \(DaemonConfiguration.Job.quoted(name)) (also sync.jobs[\(first)])")
        }
        jobIndices[name] = index
        return name
    }

    /// A mirror's destination may not be, contain or lie inside another mirror's source or
    /// destination: one job would write into, or delete from, the tree the other owns
    /// (`MirrorTreeOverlap`, on the paths as written; `DaemonConfiguration.checkMirrorTreesOnDisk`
    /// applies it to the paths they resolve to). The first earlier job that meets it is named:
    /// `mirrorTrees` finds it without comparing the job with each, then the two are compared.
    private mutating func checkOverlaps(
        _ job: DaemonConfiguration.Job, at parent: String, with earlier: [DaemonConfiguration.Job], in list: String
    ) throws(ConfigurationError) {
        guard let mirror = job.mirror else { return }
        let roots = MirrorTreeOverlap.Roots(mirror)
        let components = roots.map(ConfigurationDirectories.normalizedComponents)
        if let index = mirrorTrees.firstOverlap(with: components), let otherMirror = earlier[index].mirror {
            let other = earlier[index]
            let otherRoots = MirrorTreeOverlap.Roots(otherMirror)
            if let overlap = MirrorTreeOverlap.first(components, otherRoots.map(ConfigurationDirectories.normalizedComponents)) {
                throw fields.fail(
                    "\(parent).\(overlap.field)",
                    "the \(overlap.field) \(JSONValue.quotedPathForMessage(roots[overlap.field])) \(overlap.relation.phrase) \(overlap.otherField) "
                        + "\(JSONValue.quotedPathForMessage(otherRoots[overlap.otherField])) of job \(DaemonConfiguration.Job.quoted(other.name)) (\(list)[\(index)]); "
                        + "the jobs would overwrite or delete each other's files")
            }
            assertionFailure("the index of mirror trees named job \(index), which does not meet job \(earlier.count)")
        }
        mirrorTrees.add(components, at: earlier.count)
    }

    /// Source and destination must differ and neither may contain the other.
    private func checkMirrorPaths(_ mirror: DaemonConfiguration.Mirror, at parent: String) throws(ConfigurationError) {
        let path = "\(parent).destination"
        let source = JSONValue.quotedPathForMessage(mirror.source)
        let destination = JSONValue.quotedPathForMessage(mirror.destination)
        switch ConfigurationDirectories.relation(of: mirror.destination, to: mirror.source) {
        case .same: throw fields.fail(path, "the destination \(destination) is the same directory as the source \(source)")
        case .inside: throw fields.fail(path, "the destination \(destination) is inside the source \(source)")
        case .unrelated: break
        }
        if ConfigurationDirectories.relation(of: mirror.source, to: mirror.destination) == .inside {
            throw fields.fail(path, "the destination \(destination) contains the source \(source)")
        }
    }
}
