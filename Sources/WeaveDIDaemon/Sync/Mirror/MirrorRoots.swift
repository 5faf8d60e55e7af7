import Glibc
import WeaveDIPosix

/// The two open roots of a run, checked: the source readable, the destination present (or
/// created), neither inside the other, and neither overlapping another mirror job's roots, by
/// real path and then by device and inode through mounts (`MountedLocation`).
struct MirrorRoots: ~Copyable {
    /// The source root, opened for listing.
    let source: OwnedDescriptor
    /// The destination root, opened for listing and `*at` writes.
    let destination: OwnedDescriptor
    /// The source root's status when it was opened.
    let sourceStatus: FileStatus
    /// Device and inode of the source root: the destination walk never enters it.
    let sourceIdentity: FileIdentity
    /// Device and inode of the destination root: the source walk never enters it.
    let destinationIdentity: FileIdentity

    /// A reason the run cannot start, with the root it concerns.
    struct Failure: Error, CustomStringConvertible {
        let path: String
        let reason: String

        /// `path: reason`.
        var description: String { "\(path): \(reason)" }
    }

    /// `open(_:noting:)` on a thread of its own, each step within `StepDeadline.stepLimit`; the
    /// caller is suspended meanwhile. A root on a file system that does not answer (a dead
    /// hard NFS mount, where `realpath` waits for ever) then fails the run, named, instead of
    /// holding a thread of Swift's cooperative pool for good (two such runs would hold them
    /// all on two cores, and with them the daemon).
    static func open(_ settings: MirrorSettings) async throws(Failure) -> MirrorRoots {
        let opened = try await StepDeadline.run(
            limit: StepDeadline.stepLimit, first: MirrorRootStep("resolving the source", settings.source), for: "a mirror run's start"
        ) { note throws(Failure) in
            OpenedRoots(try open(settings, noting: note))
        }
        return opened.take()
    }

    /// Resolves, checks and opens both roots of `settings`, telling `note` before each step on
    /// the file system (`StepDeadline`, which gives up on a path that does not answer), whose
    /// error it throws.
    static func open(
        _ settings: MirrorSettings, noting note: (MirrorRootStep) throws(Failure) -> Void
    ) throws(Failure) -> MirrorRoots {
        let sourcePath = settings.source
        let destinationPath = settings.destination
        let realSource: String
        try note(MirrorRootStep("resolving the source", sourcePath))
        do {
            realSource = try FileDescriptor.realPath(sourcePath)
        } catch {
            throw Failure(path: sourcePath, reason: "the source cannot be resolved: \(error)")
        }
        try note(MirrorRootStep("resolving the destination", destinationPath))
        let (existing, missing) = try resolveDestination(destinationPath)
        let realDestination = ([existing] + missing).joined(separator: "/").replacingDoubleSlash()
        if realDestination.hasSameBytes(as: realSource) {
            throw Failure(path: destinationPath, reason: "the destination is the source (\(realSource))")
        }
        if isInside(realDestination, realSource) {
            throw Failure(
                path: destinationPath,
                reason: "the destination \(realDestination) is inside the source \(realSource) (real paths)")
        }
        if isInside(realSource, realDestination) {
            throw Failure(
                path: destinationPath,
                reason: "the source \(realSource) is inside the destination \(realDestination) (real paths)")
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
                reason: "the destination \(realDestination) \(overlap.relation.verb) the source \(realSource) through a mount: "
                    + overlap.explanation(quoted: false))
        }
        try checkOtherJobs(settings, source: realSource, destination: realDestination, located: located, mounts: mounts, noting: note)
        let source: OwnedDescriptor
        try note(MirrorRootStep("opening the source", sourcePath))
        do {
            source = try FileDescriptor.currentWorkingDirectory.openDirectory(at: realSource)
        } catch {
            throw Failure(path: sourcePath, reason: "the source cannot be opened: \(DescriptorLimit.explain(error))")
        }
        if !missing.isEmpty && !settings.createsDestination {
            throw Failure(
                path: destinationPath,
                reason: "the destination does not exist; runs never create a missing destination root (an unmounted "
                    + "disk must not be filled underneath): create it, or let the job's health-check fix do it")
        }
        try note(MirrorRootStep("opening the destination", destinationPath))
        let destination = try openDestination(existing: existing, missing: missing, settings: settings)
        let statuses: (source: FileStatus, destination: FileStatus)
        try note(MirrorRootStep("reading the source", sourcePath))
        do {
            statuses.source = try source.descriptor.status()
        } catch {
            throw Failure(path: sourcePath, reason: "fstat: \(error)")
        }
        try note(MirrorRootStep("reading the destination", destinationPath))
        do {
            statuses.destination = try destination.descriptor.status()
        } catch {
            throw Failure(path: destinationPath, reason: "fstat: \(error)")
        }
        let identities = (FileIdentity(statuses.source), FileIdentity(statuses.destination))
        if identities.0 == identities.1 {
            throw Failure(path: destinationPath, reason: "the destination is the source (the same directory)")
        }
        if settings.delete {
            try note(MirrorRootStep("reading the source", sourcePath))
            if (try? source.descriptor.directoryEntries())?.isEmpty == true {
                try note(MirrorRootStep("reading the destination", destinationPath))
                let entries = try? destination.descriptor.directoryEntries()
                if entries?.contains(where: { !MirrorTemporaryName.isTemporary($0.name) }) == true {
                    throw Failure(
                        path: sourcePath,
                        reason: "the source is empty and delete is on: refusing to delete everything in the destination "
                            + "(is the source's disk mounted?); put a file in the source, or empty the destination by hand")
                }
            }
        }
        return MirrorRoots(
            source: source, destination: destination, sourceStatus: statuses.source,
            sourceIdentity: identities.0, destinationIdentity: identities.1)
    }

    /// Refuses roots (real paths, and `located` by identity) that overlap another mirror job's,
    /// resolved and located now (`ResolvedPath`, `MountedLocation`): one job would write into,
    /// or delete from, the other's tree.
    private static func checkOtherJobs(
        _ settings: MirrorSettings, source: String, destination: String, located: MirrorTreeOverlap.Roots<MountedLocation>,
        mounts: MountTable, noting note: (MirrorRootStep) throws(Failure) -> Void
    ) throws(Failure) {
        let roots = MirrorTreeOverlap.Roots(source: source, destination: destination)
        for other in settings.otherJobs {
            let configured = MirrorTreeOverlap.Roots(source: other.source, destination: other.destination)
            // Each of their roots, resolved and then located, as one step that names it.
            let (theirs, theirsLocated) = try MountedLocation.resolveAndLocate(configured, mounts: mounts) {
                field, path throws(Failure) in try note(MirrorRootStep("resolving the \(field) of job \"\(other.name)\"", path))
            }
            if let overlap = MirrorTreeOverlap.first(roots, theirs) {
                throw Failure(
                    path: overlap.field == "source" ? settings.source : settings.destination,
                    reason: "the \(overlap.field) \(roots[overlap.field]) \(overlap.relation.phrase) \(overlap.otherField) "
                        + "\(theirs[overlap.otherField]) of job \"\(other.name)\" (real paths; configured as "
                        + "\(configured[overlap.otherField])): the jobs would overwrite or delete each other's files")
            }
            if let (field, otherField, overlap) = MountedLocation.first(located, theirsLocated) {
                throw Failure(
                    path: field == "source" ? settings.source : settings.destination,
                    reason: "the \(field) \(roots[field]) \(overlap.relation.phrase) \(otherField) \(theirs[otherField]) "
                        + "of job \"\(other.name)\" (configured as \(configured[otherField])) through a mount: "
                        + overlap.explanation(quoted: false) + "; the jobs would overwrite or delete each other's files")
            }
        }
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
                    missing.append(candidate)
                    candidate = CurrentProcess.workingDirectory() ?? "/"
                    continue
                }
                let component = String(candidate[candidate.index(after: slash)...])
                if !component.isEmpty { missing.append(component) }
                candidate = String(candidate[..<slash])
                continue
            } catch {
                throw Failure(path: path, reason: "the destination cannot be resolved: \(error)")
            }
            if missing.contains(where: { $0 == "." || $0 == ".." }) {
                throw Failure(path: path, reason: "the part of the destination that does not exist has . or ..")
            }
            return (real, missing.reversed())
        }
    }

    /// Opens the destination root, creating the `missing` components below `existing` first.
    private static func openDestination(
        existing: String, missing: [String], settings: MirrorSettings
    ) throws(Failure) -> OwnedDescriptor {
        let path = settings.destination
        do {
            var current = try FileDescriptor.currentWorkingDirectory.openDirectory(at: existing)
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
        MirrorRoots.Failure(path: path, reason: problem)
    }
}

/// Roots opened on the deadline's thread, handed over to the run that waits for them; freed
/// (their descriptors closed) with the box when nobody waits any more.
private final class OpenedRoots: @unchecked Sendable {
    // @unchecked: written before the opening thread hands the box over, taken once by the
    // caller after (the hand-over goes through the deadline's mutex).
    private var roots: MirrorRoots?

    init(_ roots: consuming MirrorRoots) {
        self.roots = Optional(roots)
    }

    func take() -> MirrorRoots {
        roots.take()!
    }
}
