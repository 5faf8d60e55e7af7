import WeaveDI
import WeaveDIControl

extension DaemonConfiguration {
    /// What the file cannot say by itself: whether mirror trees overlap on this machine,
    /// through symbolic links or mounts.
    ///
    /// Each mirror root is resolved (`ResolvedPath`: the real path of the part that exists,
    /// links followed, the rest as written) and the rules the file's paths already passed are
    /// applied to the results: a destination may not be, contain or lie inside its own source,
    /// nor another mirror job's source or destination, and a source may not be, contain or lie
    /// inside another job's destination (`MirrorTreeOverlap`), and a destination may not reach
    /// the daemon's own paths (`ReservedPath`): contain the control socket (and `passedSocket`,
    /// the path of the socket systemd passed, if any), be or contain the
    /// state directory, be or lie inside the daemon's files there, or be, contain or lie inside
    /// the metrics file. With
    /// `/srv/link -> /srv/backup`, destinations `/srv/backup` and `/srv/link` are one tree.
    /// Each rule is then applied once more by device and inode (`MountedLocation`), for the
    /// directories that a mount shows at two real paths: with `mount --bind /data/src
    /// /mnt/alias`, a destination `/mnt/alias/x` lies inside a source `/data/src`.
    ///
    /// `load` and `resolve` do not call this: they read only the file, and `weavedictl`'s
    /// offline diagnostics use them on machines that are not the daemon's. The daemon does,
    /// through `DaemonContext.loadConfiguration`: at start, at each reload (a refused
    /// configuration leaves the running one in place) and for `weavedid --check-config`.
    /// Throws the first overlap in the order of the jobs, at the later job's field, naming both
    /// jobs, both configured paths and what each resolves to, or which paths are one directory
    /// (`EINVAL`). Before each path it resolves (and before reading mountinfo), it tells `note`
    /// (`StepDeadline`, which gives up on a path that does not answer), whose error it throws;
    /// and before comparing a job's roots with the rest, that it is checking
    /// (`LoadStep.checking`, a step without a deadline, as it waits on no file system).
    public func checkMirrorTreesOnDisk(
        passedSocket: String? = nil, noting note: (LoadStep) throws(ConfigurationError) -> Void = { _ in }
    ) throws(ConfigurationError) {
        let file = sourceName
        func resolving(_ fieldPath: String?, _ path: String) throws(ConfigurationError) {
            try note(LoadStep("resolving", file: file, fieldPath: fieldPath, path: path))
        }
        var earlier: [(
            index: Int, name: String, configured: MirrorTreeOverlap.Roots<String>, resolved: MirrorTreeOverlap.Roots<String>,
            components: MirrorTreeOverlap.Roots<[Substring]>, located: MirrorTreeOverlap.Roots<MountedLocation>
        )] = []
        // The earlier jobs' roots, by their position in `earlier`.
        var treesByPath = MirrorTreeIndex<PathIndex>()
        var treesByIdentity = MirrorTreeIndex<LocationIndex>()
        try note(LoadStep("reading", file: file, fieldPath: nil, path: MountTable.path))
        let mounts = MountTable.current()
        // The daemon's own paths, resolved and located: the state directory's only when there
        // is a mirror job to compare them with.
        var reserved: [ReservedPath.Found] = []
        let hasMirror = sync.jobs.contains { $0.mirror != nil }
        for path in hasMirror ? ReservedPath.all(of: self, passedSocket: passedSocket) : [ReservedPath.controlSocket(of: self)] {
            try resolving(path.field, path.path)
            reserved.append(ReservedPath.Found(path, mounts: mounts))
        }
        for (index, job) in sync.jobs.enumerated() {
            guard let mirror = job.mirror else { continue }
            let configured = MirrorTreeOverlap.Roots(mirror)
            let parent = "sync.jobs[\(index)]"
            let (resolved, located) = try MountedLocation.resolveAndLocate(configured, mounts: mounts) {
                field, path throws(ConfigurationError) in try resolving("\(parent).\(field)", path)
            }
            // A root, or the part of one that exists, that is a file: every run would fail.
            // What that part is, its location's `stat` said.
            for field in ["source", "destination"] {
                let anchor = located[field].anchor
                if let kind = located[field].anchorKind, kind != .directory {
                    let part = anchor.hasSameBytes(as: resolved[field]) ? "" : " (\(JSONValue.quotedPathForMessage(anchor)), the part of it that exists)"
                    throw ConfigurationError(
                        file: file, fieldPath: "\(parent).\(field)",
                        problem: "the \(field) \(JSONValue.quotedPathForMessage(configured[field])) of job \(DaemonConfiguration.Job.quoted(job.name)) is "
                            + "\(Self.describe(kind))\(part), \(Self.mirrorRootsAreDirectories)")
                }
            }
            // What follows compares what was found: no deadline (a check of many jobs is not
            // a path that does not answer).
            try note(.checking(file: file))
            if let relation = MirrorTreeOverlap.relation(of: resolved.destination, to: resolved.source) {
                throw ConfigurationError(
                    file: file, fieldPath: "\(parent).destination",
                    problem: "the destination \(JSONValue.quotedPathForMessage(configured.destination)) of job \(DaemonConfiguration.Job.quoted(job.name)) \(relation.verb) its source "
                        + "\(JSONValue.quotedPathForMessage(configured.source)) through symbolic links "
                        + Self.resolutions(configured.destination, resolved.destination, configured.source, resolved.source))
            }
            if let overlap = located.destination.relation(to: located.source) {
                throw ConfigurationError(
                    file: file, fieldPath: "\(parent).destination",
                    problem: "the destination \(JSONValue.quotedPathForMessage(configured.destination)) of job \(DaemonConfiguration.Job.quoted(job.name)) \(overlap.relation.verb) its source "
                        + "\(JSONValue.quotedPathForMessage(configured.source)) through a mount: \(overlap.explanation)")
            }
            let destination = "the destination \(JSONValue.quotedPathForMessage(configured.destination)) of job \(DaemonConfiguration.Job.quoted(job.name))"
            for path in reserved {
                if let problem = path.problem(
                    destination, configured: configured.destination, resolved: resolved.destination, located: located.destination)
                {
                    throw ConfigurationError(file: file, fieldPath: "\(parent).destination", problem: problem)
                }
            }
            // The first earlier job that meets this one, by path or by identity, without
            // comparing this one with each; the two are then compared, by path first.
            let components = resolved.map(ConfigurationDirectories.normalizedComponents)
            if let first = [treesByPath.firstOverlap(with: components), treesByIdentity.firstOverlap(with: located)]
                .compactMap({ $0 }).min()
            {
                let other = earlier[first]
                if let overlap = MirrorTreeOverlap.first(components, other.components) {
                    let mine = configured[overlap.field]
                    let theirs = other.configured[overlap.otherField]
                    throw ConfigurationError(
                        file: file, fieldPath: "\(parent).\(overlap.field)",
                        problem: "the \(overlap.field) \(JSONValue.quotedPathForMessage(mine)) of job \(DaemonConfiguration.Job.quoted(job.name)) \(overlap.relation.phrase) "
                            + "\(overlap.otherField) \(JSONValue.quotedPathForMessage(theirs)) of job \(DaemonConfiguration.Job.quoted(other.name)) (sync.jobs[\(other.index)]) "
                            + "through symbolic links "
                            + Self.resolutions(mine, resolved[overlap.field], theirs, other.resolved[overlap.otherField])
                            + "; the jobs would overwrite or delete each other's files")
                }
                if let (field, otherField, overlap) = MountedLocation.first(located, other.located) {
                    throw ConfigurationError(
                        file: file, fieldPath: "\(parent).\(field)",
                        problem: "the \(field) \(JSONValue.quotedPathForMessage(configured[field])) of job \(DaemonConfiguration.Job.quoted(job.name)) \(overlap.relation.phrase) "
                            + "\(otherField) \(JSONValue.quotedPathForMessage(other.configured[otherField])) of job \(DaemonConfiguration.Job.quoted(other.name)) (sync.jobs[\(other.index)]) "
                            + "through a mount: \(overlap.explanation); "
                            + "the jobs would overwrite or delete each other's files")
                }
                assertionFailure("the indexes of mirror trees named job \(first), which does not meet job \(earlier.count)")
            }
            treesByPath.add(components, at: earlier.count)
            treesByIdentity.add(located, at: earlier.count)
            earlier.append((index, job.name, configured, resolved, components, located))
        }
    }

    /// `("/srv/link" resolves to "/srv/backup", "/srv/backup" to "/srv/backup")`, the paths
    /// quoted as every message quotes a path from outside (`JSONValue.quotedPathForMessage`).
    static func resolutions(_ path: String, _ resolved: String, _ other: String, _ otherResolved: String) -> String {
        func show(_ path: String) -> String { JSONValue.quotedPathForMessage(path) }
        return "(\(show(path)) resolves to \(show(resolved)), \(show(other)) to \(show(otherResolved)))"
    }
}
