import Glibc
import WeaveDI
import WeaveDIPosix

/// The two open roots of a run, checked: the source readable, the destination present (or
/// created), neither inside the other, neither overlapping another mirror job's roots, and the
/// destination clear of the daemon's own paths (`MirrorSettings.reservedPaths`), by real path
/// and then by device and inode through mounts (`MountedLocation`).
struct MirrorRoots: ~Copyable {
    /// The source root, opened for listing.
    let source: OwnedDescriptor
    /// The destination root, opened for listing and `*at` writes.
    let destination: OwnedDescriptor
    /// The source root's status when it was opened.
    let sourceStatus: FileStatus
    /// The destination root's status when it was opened (as found, when `destinationMadeWritable`).
    let destinationStatus: FileStatus
    /// Whether the destination root was opened as its owner may (`OwnerOpening`: its mode
    /// denied its owner `r`), its owner's `rwx` added; the run gives its mode back.
    let destinationMadeWritable: Bool
    /// Device and inode of the source root: the destination walk never enters it.
    let sourceIdentity: FileIdentity
    /// Device and inode of the destination root: the source walk never enters it.
    let destinationIdentity: FileIdentity
    /// The other jobs' roots that did not answer, left out of the overlap check: the path, and
    /// why (for the run's log).
    let unchecked: [MirrorIssue]
    /// Whether the destination root is the root of a mount (`statx`'s `STATX_ATTR_MOUNT_ROOT`);
    /// nil where the kernel does not say, or `statx` failed (a run that requires it,
    /// `MirrorSettings.destinationMountPoint`, does not start then).
    var destinationIsMountRoot: Bool? = nil

    /// Gives the destination root the mode it was found with, when it was opened as its owner
    /// may (`destinationMadeWritable`), for a run that will not walk it (`giveBack`): what it
    /// could not give back goes into `report`, the root named as `path`; `run` says which run
    /// opened it.
    func giveBackDestinationMode(_ path: String, into report: inout MirrorReport, by run: String = "the run") {
        if destinationMadeWritable { Self.giveBack(destinationStatus, to: destination.descriptor, path, into: &report, by: run) }
    }

    /// Gives `directory`, a destination root opened as its owner may (`OwnerOpening`: its
    /// owner's `rwx` added), the mode it was `found` with, less set-ID bits this process may not
    /// set (`SetIDBits`: systemd's `RestrictSUIDSGID=yes`), which `report` counts as not kept
    /// (at `.`, as the walk counts its roots). A mode that cannot be given back at all is a
    /// failure in `report`, naming the root at `path` and the mode to give it by hand: the root
    /// would otherwise stay open to its owner, unsaid.
    static func giveBack(
        _ found: FileStatus, to directory: FileDescriptor, _ path: String, into report: inout MirrorReport,
        by run: String = "the run"
    ) {
        do throws(Errno) {
            let given = try SetIDBits.set(
                found.permissions, on: directory, current: try directory.status().permissions, group: found.groupID,
                device: found.device)
            if SetIDBits.areMissing(found.permissions, in: given) { report.noteSetIDBitsNotKept(".") }
        } catch {
            report.failToGiveBack(
                path, found.permissions, after: "opened it as its owner may (its owner's rwx added)", by: run, "\(error)",
                fullPath: path, subject: "the destination root's mode")
        }
    }

    /// A reason the run cannot start, with the root it concerns.
    struct Failure: Error, CustomStringConvertible {
        let path: String
        let reason: String
        /// The errno of a step that did not answer, was not tried or was cancelled
        /// (`StepDeadline`); nil for the other failures.
        var errno: Int32? = nil
        /// What the start did besides, for the run's report: a destination root opened as its
        /// owner may given its mode back without set-ID bits, or not at all (`giveBack`).
        var aside = MirrorReport()

        /// `"path": reason`, the path quoted as a run's issues are (`MirrorIssue.quoted`), as a
        /// fix's message shows it.
        var description: String { MirrorIssue(path: path, reason: reason).quoted }
    }

    /// Resolves, checks and opens both roots of `settings`, in parts, on threads of their own
    /// with each step within `StepDeadline.stepLimit` (the caller is suspended meanwhile): the
    /// run's own roots resolved and located; each other job's roots, resolved and compared with
    /// them; the roots opened. A root on a file system that does not answer (a dead hard NFS
    /// mount, where `realpath` waits for ever) then fails the run, named, instead of holding a
    /// thread of Swift's cooperative pool for good (two such runs would hold them all on two
    /// cores, and with them the daemon).
    ///
    /// Another job whose root does not answer (`ETIMEDOUT`: or is not tried, a thread being stuck
    /// on it) is left out of the overlap check, in `unchecked`, instead of failing this run: its
    /// own runs fail on that root, so it writes nowhere; and this run's roots answered, so they
    /// are not behind it. The jobs after it with a root under the same mount point (as written)
    /// are left out without being tried, so that one dead file system costs a run one step's
    /// limit and leaves one thread stuck, however many jobs it holds. Any other failure (no
    /// thread to be had, too many stuck: `EAGAIN`) fails the run.
    static func open(_ settings: MirrorSettings) async throws(Failure) -> MirrorRoots {
        let own = try await StepDeadline.run(
            limit: StepDeadline.stepLimit, first: MirrorRootStep("resolving the source", settings.source), for: "a mirror run's start"
        ) { note throws(Failure) in
            try resolve(settings, noting: note)
        }
        var unchecked: [MirrorIssue] = []
        // The mount points of file systems found not answering, and the job whose root found each.
        var silent: [String: String] = [:]
        for other in settings.otherJobs {
            // A job with a root under one of them is not tried: one stuck thread per file system.
            let underSilent = [other.source, other.destination].lazy.compactMap { root in
                own.mounts.mountPoint(containing: root).flatMap { point in silent[point].map { (root, point, job: $0) } }
            }
            if let (root, mountPoint, job) = underSilent.first {
                unchecked.append(MirrorIssue(
                    path: root, reason: "not checked for overlap with this job's roots: its file system, mounted at "
                        + "\(JSONValue.quotedPathForMessage(mountPoint)), did not answer for job \(DaemonConfiguration.Job.quoted(job))"))
                continue
            }
            switch await resolve(other, mounts: own.mounts) {
            case let .success(theirs):
                try check(settings, own, against: other, theirs: theirs)
            case let .failure(error) where error.errno == ETIMEDOUT:
                // It did not answer, or a thread is stuck on it: that job writes nowhere now.
                unchecked.append(MirrorIssue(path: error.path, reason: "not checked for overlap with this job's roots: \(error.reason)"))
                if let mountPoint = own.mounts.mountPoint(containing: error.path) { silent[mountPoint] = other.name }
            case let .failure(error):
                throw error
            }
        }
        let opened = try await StepDeadline.run(
            limit: StepDeadline.stepLimit, first: MirrorRootStep("opening the source", settings.source), for: "a mirror run's start"
        ) { [unchecked] note throws(Failure) in
            OpenedRoots(
                try open(settings, own, unchecked: unchecked, noting: note), destination: settings.destination,
                job: settings.jobName)
        }
        return opened.take()
    }

    /// Another job's roots as configured, resolved through links and located by identity.
    typealias Located = (
        configured: MirrorTreeOverlap.Roots<String>, resolved: MirrorTreeOverlap.Roots<String>,
        located: MirrorTreeOverlap.Roots<MountedLocation>
    )

    /// The roots of `other`, resolved and located among `mounts`, each root one step (on a
    /// thread of its own, within `StepDeadline.stepLimit`) that names it.
    private static func resolve(_ other: MirrorSettings.OtherJob, mounts: MountTable) async -> Result<Located, Failure> {
        let configured = MirrorTreeOverlap.Roots(source: other.source, destination: other.destination)
        do {
            let (resolved, located) = try await StepDeadline.run(
                limit: StepDeadline.stepLimit, first: MirrorRootStep("resolving the source of job \(DaemonConfiguration.Job.quoted(other.name))", other.source),
                for: "a mirror run's start"
            ) { note throws(Failure) in
                try MountedLocation.resolveAndLocate(configured, mounts: mounts) { field, path throws(Failure) in
                    try note(MirrorRootStep("resolving the \(field) of job \(DaemonConfiguration.Job.quoted(other.name))", path))
                }
            }
            return .success((configured, resolved, located))
        } catch {
            return .failure(error)
        }
    }

    /// The run's own roots, resolved and located, and the mount table they were located in.
    struct Resolved: Sendable {
        /// The source's real path.
        let source: String
        /// The destination's real path (its missing components appended).
        let destination: String
        /// The destination's nearest existing ancestor (or itself), and what is missing below it.
        let existing: String
        let missing: [String]
        let located: MirrorTreeOverlap.Roots<MountedLocation>
        let mounts: MountTable
    }

    /// Resolves `settings`' two roots and checks them against each other, and the destination
    /// against the daemon's own paths (`ReservedPath.Found`, as the load does), telling `note` before
    /// each step on the file system (`StepDeadline`, which gives up on a path that does not
    /// answer), whose error it throws.
    static func resolve(_ settings: MirrorSettings, noting note: (MirrorRootStep) throws(Failure) -> Void) throws(Failure) -> Resolved {
        let sourcePath = settings.source
        let destinationPath = settings.destination
        let realSource: String
        try note(MirrorRootStep("resolving the source", sourcePath))
        do {
            realSource = try FileDescriptor.realPath(sourcePath)
        } catch {
            throw Failure(path: sourcePath, reason: "the source cannot be resolved: \(Self.explain(error, sourcePath))")
        }
        try note(MirrorRootStep("resolving the destination", destinationPath))
        let (existing, missing) = try resolveDestination(destinationPath)
        let realDestination = ([existing] + missing).joined(separator: "/").replacingDoubleSlash()
        if realDestination.hasSameBytes(as: realSource) {
            throw Failure(path: destinationPath, reason: "the destination is the source (\(JSONValue.quotedPathForMessage(realSource)))")
        }
        if isInside(realDestination, realSource) {
            throw Failure(
                path: destinationPath,
                reason: "the destination \(JSONValue.quotedPathForMessage(realDestination)) is inside the source \(JSONValue.quotedPathForMessage(realSource)) (real paths)")
        }
        if isInside(realSource, realDestination) {
            throw Failure(
                path: destinationPath,
                reason: "the source \(JSONValue.quotedPathForMessage(realSource)) is inside the destination \(JSONValue.quotedPathForMessage(realDestination)) (real paths)")
        }
        try note(MirrorRootStep("reading the mount table", MountTable.path))
        let mounts = MountTable.current()
        try note(MirrorRootStep("resolving the source", sourcePath))
        let locatedSource = MountedLocation.locate(realSource, mounts: mounts)
        try note(MirrorRootStep("resolving the destination", destinationPath))
        let located = MirrorTreeOverlap.Roots(
            source: locatedSource, destination: MountedLocation.locate(realDestination, mounts: mounts))
        if settings.checksOwnRootsThroughMounts, let overlap = located.destination.relation(to: located.source) {
            throw Failure(
                path: destinationPath,
                reason: "the destination \(JSONValue.quotedPathForMessage(realDestination)) \(overlap.relation.verb) the source \(JSONValue.quotedPathForMessage(realSource)) through a mount: "
                    + overlap.explanation)
        }
        // The daemon's own paths, which a link or mount made since the load may have put
        // under the destination: the load's rule (`ReservedPath.Found`), applied again, and
        // said in the load's words, every path quoted (the reserved path always is).
        let subject = "the destination \(JSONValue.quotedPathForMessage(destinationPath))"
            + (settings.jobName.map { " of job \(DaemonConfiguration.Job.quoted($0))" } ?? "")
        for reserved in settings.reservedPaths {
            try note(MirrorRootStep("resolving \(reserved.name)", reserved.path))
            let found = ReservedPath.Found(reserved, mounts: mounts)
            if let problem = found.problem(
                subject, configured: destinationPath, resolved: realDestination, located: located.destination)
            {
                throw Failure(path: destinationPath, reason: problem)
            }
        }
        return Resolved(
            source: realSource, destination: realDestination, existing: existing, missing: missing, located: located, mounts: mounts)
    }

    /// Opens and reads the roots `own` resolved, telling `note` before each step on the file
    /// system; `unchecked` goes into the roots, for the run's log.
    static func open(
        _ settings: MirrorSettings, _ own: Resolved, unchecked: [MirrorIssue], noting note: (MirrorRootStep) throws(Failure) -> Void
    ) throws(Failure) -> MirrorRoots {
        let sourcePath = settings.source
        let destinationPath = settings.destination
        let (realSource, existing, missing) = (own.source, own.existing, own.missing)
        let source: OwnedDescriptor
        try note(MirrorRootStep("opening the source", sourcePath))
        do {
            source = try openResolved(realSource)
        } catch {
            throw Failure(path: sourcePath, reason: "the source cannot be opened: \(explainOpening(error, realSource))")
        }
        if !missing.isEmpty && settings.destinationMountPoint {
            // Not even a settings' `createsDestination`: a directory made here is no mount.
            throw Failure(path: destinationPath, reason: Self.mountPointMissing)
        }
        if !missing.isEmpty && !settings.createsDestination {
            // The automatic fix does not create it either, for the same reason: only a fix by hand.
            let byHand = settings.jobName.map { ", or have the job's fix create it: weavedictl fix job.\($0)" } ?? ""
            throw Failure(path: destinationPath, reason: Self.destinationMissing + byHand)
        }
        let statuses: (source: FileStatus, destination: FileStatus)
        try note(MirrorRootStep("reading the source", sourcePath))
        do {
            statuses.source = try source.descriptor.status()
        } catch {
            throw Failure(path: sourcePath, reason: "fstat: \(error)")
        }
        let sourceIdentity = FileIdentity(statuses.source)
        if settings.destinationMountPoint {
            // Told on a handle (`O_PATH`), before the root is opened: one whose mode denies its
            // owner `r` is opened as its owner may, with a `chmod`, which the directory under an
            // unmounted mount point must not get either.
            try note(MirrorRootStep("reading the destination", destinationPath))
            let handle: OwnedDescriptor
            do {
                var opened = 0
                handle = try openComponents(of: existing, opened: &opened)
            } catch {
                throw Failure(path: destinationPath, reason: "the destination cannot be opened: \(explainOpening(error, existing))")
            }
            _ = try checkMountPoint(settings, handle.descriptor)
        }
        try note(MirrorRootStep("opening the destination", destinationPath))
        var ownerOpened: FileStatus?
        let destinationIsMountRoot: Bool?
        let destination = try openDestination(
            existing: existing, missing: missing, settings: settings, refusing: sourceIdentity, ownerOpened: &ownerOpened)
        // From here on, a failure gives a root opened as its owner may its mode back.
        do throws(Failure) {
            try note(MirrorRootStep("reading the destination", destinationPath))
            do {
                statuses.destination = try ownerOpened ?? destination.descriptor.status()
            } catch {
                throw Failure(path: destinationPath, reason: "fstat: \(error)")
            }
            if sourceIdentity == FileIdentity(statuses.destination) {
                throw Failure(path: destinationPath, reason: "the destination is the source (the same directory)")
            }
            try note(MirrorRootStep("reading the destination", destinationPath))
            destinationIsMountRoot = try checkMountPoint(settings, destination.descriptor)
            try refuseEmptySource(settings, source: source.descriptor, destination: destination.descriptor, noting: note)
        } catch {
            var failure = error
            if let found = ownerOpened { giveBack(found, to: destination.descriptor, destinationPath, into: &failure.aside) }
            throw failure
        }
        return MirrorRoots(
            source: source, destination: destination, sourceStatus: statuses.source, destinationStatus: statuses.destination,
            destinationMadeWritable: ownerOpened != nil, sourceIdentity: sourceIdentity,
            destinationIdentity: FileIdentity(statuses.destination), unchecked: unchecked,
            destinationIsMountRoot: destinationIsMountRoot)
    }

    /// Whether the opened `destination` root is the root of a mount; nil where the kernel does
    /// not say (before Linux 5.8) or `statx` fails. With `destinationMountPoint`, a root that
    /// is not, or of which that cannot be said, fails the run, before anything is written.
    static func checkMountPoint(_ settings: MirrorSettings, _ destination: FileDescriptor) throws(Failure) -> Bool? {
        let found: Result<Bool?, Errno>
        do throws(Errno) {
            found = .success(try destination.mountRoot())
        } catch {
            found = .failure(error)
        }
        guard settings.destinationMountPoint else { return try? found.get() }
        switch found {
        case .success(true):
            return true
        case .success(false):
            throw Failure(path: settings.destination, reason: notAMountPoint)
        case .success(nil):
            throw Failure(
                path: settings.destination,
                reason: "whether the destination root is a mount point cannot be told: this kernel does not say "
                    + "(statx's STATX_ATTR_MOUNT_ROOT, Linux 5.8 and later); with destinationMountPoint a run starts only "
                    + "where it can be told: remove the field (and make the destination a directory below the mount "
                    + "point, which a run never creates), or run a newer kernel")
        case let .failure(error):
            throw Failure(
                path: settings.destination,
                reason: "whether the destination root is a mount point cannot be told (statx: \(error)); with "
                    + "destinationMountPoint a run starts only where it can be told")
        }
    }

    /// Why a run (or the job's fix) refuses a destination root that is not the root of a mount,
    /// with `destinationMountPoint`.
    static let notAMountPoint = "the destination root is not a mount point (destinationMountPoint): is its file system "
        + "mounted? Mount it there; a run would write into the file system underneath"

    /// Why a run fails on a missing destination root (without `destinationMountPoint`): the
    /// beginning of it, which goes on with how to have the job's fix create it.
    static let destinationMissing = "the destination does not exist; runs never create a missing destination root (an "
        + "unmounted disk must not be filled underneath): mount its file system or create it"

    /// Why a run (or the job's fix) refuses a missing destination root with
    /// `destinationMountPoint`, and creates none.
    static let mountPointMissing = "the destination root does not exist, and must be a mount point "
        + "(destinationMountPoint): nothing creates it (a directory made there would be no mount, on the file system "
        + "underneath): create the mount point and mount its file system there"

    /// With `delete`, refuses an empty source over a destination with files in it: the
    /// source's disk is most likely not mounted.
    private static func refuseEmptySource(
        _ settings: MirrorSettings, source: FileDescriptor, destination: FileDescriptor,
        noting note: (MirrorRootStep) throws(Failure) -> Void
    ) throws(Failure) {
        let (sourcePath, destinationPath) = (settings.source, settings.destination)
        if settings.delete {
            try note(MirrorRootStep("reading the source", sourcePath))
            // Each listing stops at its first name that says (a source of a million names is not
            // read, nor held, for this).
            if (try? source.hasEntry()) == false {
                try note(MirrorRootStep("reading the destination", destinationPath))
                if (try? destination.hasEntry { !MirrorTemporaryName.isTemporary($0.name) }) == true {
                    throw Failure(
                        path: sourcePath,
                        reason: "the source is empty and delete is on: refusing to delete everything in the destination "
                            + "(is the source's disk mounted?); put a file in the source, or empty the destination by hand")
                }
            }
        }
    }

    /// Refuses `own` roots (real paths, and located by identity) that overlap those of the job
    /// `other`, resolved and located now (`ResolvedPath`, `MountedLocation`): one job would
    /// write into, or delete from, the other's tree.
    private static func check(
        _ settings: MirrorSettings, _ own: Resolved, against other: MirrorSettings.OtherJob, theirs: Located
    ) throws(Failure) {
        let configured = theirs.configured
        let roots = MirrorTreeOverlap.Roots(source: own.source, destination: own.destination)
        if let overlap = MirrorTreeOverlap.first(roots, theirs.resolved) {
            throw Failure(
                path: overlap.field == "source" ? settings.source : settings.destination,
                reason: "the \(overlap.field) \(JSONValue.quotedPathForMessage(roots[overlap.field])) \(overlap.relation.phrase) \(overlap.otherField) "
                    + "\(JSONValue.quotedPathForMessage(theirs.resolved[overlap.otherField])) of job \(DaemonConfiguration.Job.quoted(other.name)) (real paths; "
                    + "configured as \(JSONValue.quotedPathForMessage(configured[overlap.otherField]))): the jobs would overwrite or delete each other's files")
        }
        if let (field, otherField, overlap) = MountedLocation.first(own.located, theirs.located) {
            throw Failure(
                path: field == "source" ? settings.source : settings.destination,
                reason: "the \(field) \(JSONValue.quotedPathForMessage(roots[field])) \(overlap.relation.phrase) \(otherField) \(JSONValue.quotedPathForMessage(theirs.resolved[otherField])) "
                    + "of job \(DaemonConfiguration.Job.quoted(other.name)) (configured as \(JSONValue.quotedPathForMessage(configured[otherField]))) through a mount: "
                    + overlap.explanation + "; the jobs would overwrite or delete each other's files")
        }
    }

    /// `error`, and for a real path that is not UTF-8 what that means.
    private static func explain(_ error: Errno, _ path: String) -> String {
        if error == .notDirectory, let (part, kind) = firstNonDirectory(in: path) {
            return notADirectory(part, kind)
        }
        guard error == .illegalByteSequence else { return "\(error)" }
        return "its real path is not valid UTF-8 (\(error.name)): as text it would name another path"
    }

    /// The first of `path`'s leading parts (`/a`, `/a/b`, …; links followed) that exists and is
    /// no directory, and what it is: why resolving or opening `path` met `ENOTDIR`.
    private static func firstNonDirectory(in path: String) -> (String, FileKind)? {
        var part = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            part += "/" + component
            guard let kind = try? FileDescriptor.currentWorkingDirectory.status(at: part).kind else { return nil }
            if kind != .directory { return (part, kind) }
        }
        return nil
    }

    /// A root, or a part of its path, that is a file: a mistake in the configuration.
    private static func notADirectory(_ path: String, _ kind: FileKind) -> String {
        "\(JSONValue.quotedPathForMessage(path)) is \(DaemonConfiguration.describe(kind)), \(DaemonConfiguration.mirrorRootsAreDirectories)"
    }

    /// The real path of the destination's nearest existing ancestor (or itself), and the
    /// components below it that do not exist yet.
    private static func resolveDestination(_ path: String) throws(Failure) -> (String, [String]) {
        var missing: [String] = []
        var candidate = path
        while true {
            let real: String
            do {
                real = try FileDescriptor.realPath(candidate.isEmpty ? "/" : candidate)
            } catch .noSuchFileOrDirectory {
                guard let slash = candidate.lastIndex(of: "/") else {
                    // A relative path: the rest is resolved from the working directory itself,
                    // whose path as text may not name it (one that is not UTF-8).
                    guard candidate != "." else {
                        throw Failure(path: path, reason: "the working directory, which the destination is relative to, no longer exists")
                    }
                    missing.append(candidate)
                    candidate = "."
                    continue
                }
                let component = String(candidate[candidate.index(after: slash)...])
                if !component.isEmpty { missing.append(component) }
                candidate = String(candidate[..<slash])
                continue
            } catch {
                throw Failure(path: path, reason: "the destination cannot be resolved: \(Self.explain(error, path))")
            }
            if missing.contains(where: { $0 == "." || $0 == ".." }) {
                throw Failure(path: path, reason: "the part of the destination that does not exist has . or ..")
            }
            return (real, missing.reversed())
        }
    }

    /// Opens the destination root, creating the `missing` components below `existing` first.
    /// A root whose mode denies its owner `r` (see `OwnerOpening`; never the source root) is
    /// opened as its owner may, `ownerOpened` then its status as found. `existing` is opened
    /// without following a link (`openResolved`), as are the components made below it.
    private static func openDestination(
        existing: String, missing: [String], settings: MirrorSettings, refusing sourceRoot: FileIdentity,
        ownerOpened: inout FileStatus?
    ) throws(Failure) -> OwnedDescriptor {
        let path = settings.destination
        var current: OwnedDescriptor
        do {
            current = try openResolved(existing)
        } catch .permissionDenied where missing.isEmpty && CurrentProcess.effectiveUserID != 0 {
            let parent: OwnedDescriptor
            do {
                parent = try openResolvedParent(existing)
            } catch {
                throw Failure(path: path, reason: "the destination cannot be opened: \(explainOpening(error, existing))")
            }
            // A mode the opening changed and could not give back, when it fails after.
            var aside = MirrorReport()
            do {
                return try OwnerOpening.open(
                    lastComponent(existing), in: parent.descriptor, refusing: sourceRoot, found: &ownerOpened, report: &aside,
                    at: path, fullPath: path, mountRoot: true)
            } catch .otherRoot {
                throw Failure(path: path, reason: "the destination is the source (the same directory)", aside: aside)
            } catch .system("open", .permissionDenied) {
                // Not the run's user's: denied, as it was.
                throw Failure(path: path, reason: "the destination cannot be opened: \(Errno.permissionDenied)", aside: aside)
            } catch {
                throw Failure(path: path, reason: "the destination cannot be opened: \(error)", aside: aside)
            }
        } catch {
            throw Failure(path: path, reason: "the destination cannot be opened: \(explainOpening(error, existing))")
        }
        do throws(Errno) {
            for component in missing {
                do {
                    try current.descriptor.makeDirectory(at: component)
                } catch .fileExists {
                    // Created meanwhile: open it below, without following a link.
                }
                if settings.durable { try current.descriptor.fsync() }
                current = try current.descriptor.openDirectory(at: component, noFollow: true)
            }
            return current
        } catch {
            throw Failure(path: path, reason: "the destination cannot be opened: \(DescriptorLimit.explain(error))")
        }
    }

    /// Opens the directory at `realPath`, an absolute path with no link in it (as `realpath`
    /// gives), one component at a time from `/`, never following a link (`O_NOFOLLOW`): what
    /// is opened is the directory the run's overlap checks were made on. A path opened as
    /// text followed any link swapped in since it was resolved (the checks may take seconds),
    /// so that whoever may rename in a root's parent could send the run to read, write and
    /// delete in any other tree. A component replaced meanwhile fails with `ELOOP` (a link)
    /// or `ENOTDIR`. The directories on the way are opened as handles (`O_PATH`), which need
    /// the search permission a path needs, and no more.
    static func openResolved(_ realPath: String) throws(Errno) -> OwnedDescriptor {
        let parent = try openResolvedParent(realPath)
        return try parent.descriptor.openDirectory(at: lastComponent(realPath), noFollow: true)
    }

    /// The parent directory of `realPath` (`/` for `/`), opened as a handle component by
    /// component from `/`, never following a link.
    private static func openResolvedParent(_ realPath: String) throws(Errno) -> OwnedDescriptor {
        var opened = 0
        return try openComponents(of: realPath, dropLast: true, opened: &opened)
    }

    /// Opens the directory at `path` as a handle (`O_PATH`), one component at a time from `/`
    /// (or from the working directory, for a relative path), never following a link: a
    /// component that is a link fails with `ENOTDIR` (`ELOOP` on some kernels), as does one
    /// that is not a directory. `dropLast` stops at the parent of the last component. With
    /// `creating`, a component that does not exist is made first, with those permissions
    /// (subject to the umask), and opened the same way. `opened` says how many components were
    /// opened: when it throws, the next one is at fault.
    static func openComponents(
        of path: String, dropLast: Bool = false, creating permissions: FilePermissions? = nil, opened: inout Int
    ) throws(Errno) -> OwnedDescriptor {
        opened = 0
        var components = path.split(separator: "/")
        if dropLast { components.removeLast(components.isEmpty ? 0 : 1) }
        var parent = try FileDescriptor.currentWorkingDirectory.open(
            at: path.hasPrefix("/") ? "/" : ".", .pathOnly, options: [.directory])
        for component in components {
            let name = String(component)
            do {
                parent = try parent.descriptor.open(at: name, .pathOnly, options: [.directory, .noFollow])
            } catch .noSuchFileOrDirectory {
                guard let permissions else { throw .noSuchFileOrDirectory }
                do {
                    try parent.descriptor.makeDirectory(at: name, permissions: permissions)
                } catch .fileExists {
                    // Made meanwhile, or a dangling link: opened below without following it.
                }
                parent = try parent.descriptor.open(at: name, .pathOnly, options: [.directory, .noFollow])
            }
            opened += 1
        }
        return parent
    }

    /// The name of `realPath`'s last component in its parent (`.` for `/`).
    private static func lastComponent(_ realPath: String) -> String {
        realPath.split(separator: "/").last.map(String.init) ?? "."
    }

    /// An error opening the resolved root `realPath`: a root that is a file, not a directory,
    /// is said so (a configuration mistake, not a race); a component replaced since it was
    /// resolved is said so; others as they are, the descriptor limit explained.
    private static func explainOpening(_ error: Errno, _ realPath: String) -> String {
        guard error == .tooManySymbolicLinkLevels || error == .notDirectory else { return DescriptorLimit.explain(error) }
        // `realPath` has no link in it: what is there now, not followed. A link there, or an
        // error (a part of it no directory), is a replacement since the run resolved it.
        if error == .notDirectory, let kind = try? FileDescriptor.currentWorkingDirectory.status(at: realPath, followSymlinks: false).kind,
            kind != .directory, kind != .symbolicLink
        {
            return notADirectory(realPath, kind)
        }
        return "a part of its real path \(JSONValue.quotedPathForMessage(realPath)) was replaced by a symbolic link or by something that is not a "
            + "directory since the run resolved it (\(error.name)); not followed, nothing was read or written there: "
            + "the next run resolves it again"
    }

    /// Whether real path `inner` lies strictly below real path `outer`, byte for byte (a
    /// `String` prefix is by characters: "/" and a combining mark after it are one character).
    static func isInside(_ inner: String, _ outer: String) -> Bool {
        if outer.hasSameBytes(as: "/") { return !inner.hasSameBytes(as: "/") }
        return inner.utf8.starts(with: (outer + "/").utf8)
    }
}

/// The device and inode of a file: which object it is, whatever path reaches it.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    init(_ status: FileStatus) {
        device = status.device
        inode = status.inode
    }
}

extension String {
    /// The path with a doubled leading slash (from joining onto `/`) made single.
    fileprivate func replacingDoubleSlash() -> String {
        hasPrefix("//") ? String(dropFirst()) : self
    }
}

/// What the start of a mirror run (or its job's fix) is doing on the file system: the step a
/// deadline names when it gives up (`StepDeadline`).
struct MirrorRootStep: DeadlineStep, Equatable {
    /// `resolving the destination`, `opening the source`, `resolving the source of job "b"`.
    let subject: String
    /// The path: one of the job's roots, another job's, or the mount table.
    let path: String

    init(_ subject: String, _ path: String) {
        self.subject = subject
        self.path = path
    }

    /// The run's failure at the step's path: `/mnt/nfs/backup: resolving the destination did not answer …`.
    func failure(_ problem: String, errno: Int32) -> MirrorRoots.Failure {
        MirrorRoots.Failure(path: path, reason: problem, errno: errno)
    }
}

/// Roots opened on the deadline's thread, handed over to the run that waits for them; freed
/// (their descriptors closed) with the box when nobody waits any more.
final class OpenedRoots: @unchecked Sendable {
    // @unchecked: written before the opening thread hands the box over, taken once by the
    // caller after (the hand-over goes through the deadline's mutex).
    private var roots: MirrorRoots?
    /// The destination root as configured.
    private let destination: String
    /// The daemon job whose run opened them, if any.
    private let job: String?

    init(_ roots: consuming MirrorRoots, destination: String, job: String? = nil) {
        self.roots = Optional(roots)
        self.destination = destination
        self.job = job
    }

    /// Roots nobody took (the run stopped waiting for them) give the destination root its mode
    /// back. The run has ended (cancelled, or failed on a step that did not answer) and its
    /// report is made: what could not be given back is kept for the next run into the same
    /// destination to report (`MirrorLateGiveBacks`).
    deinit {
        var late = MirrorReport()
        roots?.giveBackDestinationMode(
            destination, into: &late,
            by: "an earlier run that had stopped waiting for its start (cancelled, or a step that did not answer)")
        if late.errorCount > 0 || late.setIDBitsNotKept > 0 { MirrorLateGiveBacks.keep(late, for: destination, job: job) }
    }

    func take() -> MirrorRoots {
        roots.take()!
    }
}
