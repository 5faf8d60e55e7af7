import WeaveDIPosix

/// Compares one directory of the source with its destination counterpart: lists both, `lstat`s
/// each source entry and its namesake in the destination, and decides what needs work.
///
/// Unchanged files cost two `fstatat` calls and nothing else; the copies themselves are left to
/// `FileBatch` tasks. Before anything else in a destination directory, leftover temporary files
/// of an interrupted run are removed; with `delete`, so is whatever the source no longer has.
struct DirectoryScanner {
    let context: MirrorContext

    private var settings: MirrorSettings { context.settings }

    /// Opens `job` below `parent` in both trees (creating or clearing the way in the
    /// destination), then scans it.
    func open(_ job: SubdirectoryJob, in parent: MirrorDirectory) -> ScanOutcome {
        var outcome = ScanOutcome()
        do {
            let directory = try openPair(job, in: parent, parentModified: &outcome.parentModified, report: &outcome.report)
            scan(directory, into: &outcome)
        } catch {
            outcome.report.fail(parent.path(of: job.name), error)
        }
        return outcome
    }

    /// Scans an open directory pair.
    func scan(_ directory: MirrorDirectory) -> ScanOutcome {
        var outcome = ScanOutcome()
        scan(directory, into: &outcome)
        return outcome
    }

    private func openPair(_ job: SubdirectoryJob, in parent: MirrorDirectory, parentModified: inout Bool, report: inout MirrorReport)
        throws(MirrorFailure) -> MirrorDirectory
    {
        let name = job.name
        try WalkWatch.begin(.openingDirectory(.source), name, in: parent)
        let source = try MirrorFailure.opening(name, in: parent.source, side: .source) {
            try parent.source.openDirectory(at: name, noFollow: true)
        }
        let sourceStatus = try MirrorFailure.attempt("fstat") { try source.descriptor.status() }
        if FileIdentity(sourceStatus) == context.destinationRoot { throw .otherRoot }
        // A file system mounted below the source root (a bind mount of the same one too):
        // remembered, so that a later run that finds it not mounted does not delete its part of
        // the backup (`SourceMounts`). The root of a mount as `statx` says; where the kernel does
        // not say (before Linux 5.8), a directory on another device than its parent (which a
        // Btrfs subvolume is too, no mount).
        let sourceIsMountPoint = (try? source.descriptor.mountRoot()) ?? (sourceStatus.device != parent.sourceStatus.device)
        if sourceIsMountPoint { report.mountsFound.append(parent.path(of: name)) }

        let target = parent.destination.descriptor
        try WalkWatch.begin(.openingDirectory(.destination), name)
        if let kind = job.destinationKind, kind != .directory {
            // A file, link or special file where the directory goes: it goes (a planted link is
            // removed, never followed), whatever `delete` says, as an update of that name would.
            try MirrorFailure.attempt("unlink") { try target.unlink(at: name) }
            parentModified = true
        }
        if job.destinationKind != .directory {
            do {
                try target.makeDirectory(at: name, permissions: 0o700)
                parentModified = true
            } catch .fileExists {
                // Made meanwhile; opened below without following a link.
            } catch {
                throw .system("mkdir", error)
            }
        }
        var ownerOpened: FileStatus?
        let destination = try openDestinationDirectory(
            name, in: target, ownerOpened: &ownerOpened, report: &report, at: parent.path(of: name))
        let destinationStatus = try MirrorFailure.attempt("fstat") { try destination.descriptor.status() }
        if FileIdentity(destinationStatus) == context.sourceRoot { throw .otherRoot }
        // A mount inside the destination may hold any tree, the source's among them: the walk
        // writes and deletes in the destination's own directories only.
        if try MirrorFailure.attempt("statx", { try destination.descriptor.isMountRoot() }) { throw .mountPoint }
        // A directory opened as its owner may is one made writable already: its mode as found
        // is the one to give back should the run not finish it.
        return MirrorDirectory(
            name: name, source: source, sourceStatus: sourceStatus, destination: destination,
            destinationStatus: ownerOpened ?? destinationStatus, madeWritable: ownerOpened != nil,
            isPrivileged: context.isPrivileged, parent: parent, mounts: parent.mounts?.children[name],
            sourceIsMountPoint: sourceIsMountPoint)
    }

    /// Opens the destination directory `name` (without following a link); one whose mode
    /// denies its owner `r` as its owner may (`OwnerOpening`), `ownerOpened` then its status as
    /// found, whose mode `finish` (or the undo of a run that does not get there) gives back;
    /// what the opening cannot give back itself, should it fail after, goes into `report`, the
    /// directory named as `path`.
    private func openDestinationDirectory(
        _ name: String, in parent: FileDescriptor, ownerOpened: inout FileStatus?, report: inout MirrorReport,
        at path: @autoclosure () -> String
    ) throws(MirrorFailure) -> OwnedDescriptor {
        do {
            return try parent.openDirectory(at: name, noFollow: true)
        } catch .permissionDenied where !context.isPrivileged {
            return try OwnerOpening.open(
                name, in: parent, refusing: context.sourceRoot, found: &ownerOpened, report: &report, at: path(),
                fullPath: settings.destinationPath(of: path()))
        } catch {
            throw .system("open", error)
        }
    }

    private func scan(_ directory: MirrorDirectory, into outcome: inout ScanOutcome) {
        outcome.directory = directory
        let sourceEntries: [DirectoryEntry]
        var destinationEntries: [DirectoryEntry]
        do {
            try WalkWatch.begin(.listing(.source), nil, in: directory)
            sourceEntries = try WalkWatch.list(directory.source)
            if directory.deniesListing { try directory.makeWritable() }
            try WalkWatch.begin(.listing(.destination), nil, in: directory)
            destinationEntries = try WalkWatch.list(directory.destination.descriptor, "readdir (destination)")
        } catch .cancelled {
            // Cancelled (or given up on) while listing, however many names the directory has:
            // nothing was done in it, and it gets back the mode given to list it.
            outcome.interrupted = true
            outcome.finished = true
            directory.undoMakeWritable(report: &outcome.report, settings: settings)
            return
        } catch {
            outcome.report.fail(directory.reportPath, error.description)
            outcome.listingFailed = true
            outcome.finished = true  // nothing was mirrored: its mode and mtime stay as they were
            directory.undoMakeWritable(report: &outcome.report, settings: settings)
            return
        }
        if guardsUnmounted(directory, sourceEntries: sourceEntries, destinationEntries: destinationEntries, outcome: &outcome) {
            return
        }
        removeLeftovers(&destinationEntries, in: directory, outcome: &outcome)
        var destinationNames = Set<ExactName>(minimumCapacity: destinationEntries.count)
        for entry in destinationEntries where entry.nameIsExact { destinationNames.insert(ExactName(entry.name)) }
        // Without `delete`, neither the destination's listing nor the source's names are needed
        // past this point: not held while the source's entries are looked at (a million names
        // of each side, 32 MB for the listing and as much for the set of names).
        if !settings.delete { destinationEntries = [] }

        var sourceNames = Set<ExactName>(minimumCapacity: settings.delete ? sourceEntries.count : 0)
        // The shown forms of the source's names that are not UTF-8 (`bad\xFFname`), apart: a
        // destination name of those bytes is reported once, with the source's, but a valid
        // destination name whose text reads the same is another file, which `delete` removes.
        var sourceNamesNotUTF8 = Set<ExactName>()
        // The remembered mount points just below (or with one below them) whose name the
        // source has not shown as a directory yet: those it does not have as one are gone from
        // it, with what was below them (`SourceMounts`).
        var mountChildren = directory.mounts?.children ?? [:]
        for entry in sourceEntries {
            // A run cancelled (or given up on) stops at the next entry: each `lstat` of a
            // large directory would go on to its end, on a slow file system for long.
            if WalkWatch.runIsStopping {
                outcome.interrupted = true
                break
            }
            // Whatever the source has under that name, it is not gone, unless it is no directory.
            let mountChild = mountChildren.isEmpty ? nil : mountChildren.removeValue(forKey: entry.name)
            if settings.delete {
                if entry.nameIsExact { sourceNames.insert(ExactName(entry.name)) } else { sourceNamesNotUTF8.insert(ExactName(entry.name)) }
            }
            // Paths are built for reports only (`MirrorDirectory.path`), never for each entry.
            guard entry.nameIsExact else {
                outcome.entriesFound += 1  // an error: handled, not done (not settled)
                outcome.entriesFailed += 1
                outcome.report.fail(directory.path(of: entry.name), MirrorFailure.nameNotUTF8.description)
                continue
            }
            if MirrorTemporaryName.isTemporary(entry.name) {
                outcome.entriesFound += 1
                outcome.entriesSettled += 1
                outcome.entriesSkipped += 1
                outcome.report.skip(directory.path(of: entry.name), "an unfinished copy of another mirror; not mirrored")
                continue
            }
            let status: FileStatus
            do {
                try WalkWatch.begin(.lookingAt(.source), entry.name)
                status = try MirrorFailure.attempt("lstat", vanishingFrom: .source) {
                    try directory.source.status(at: entry.name, followSymlinks: false)
                }
            } catch {
                outcome.entriesFound += 1
                if outcome.report.failIsError(directory.path(of: entry.name), error) {
                    outcome.entriesFailed += 1
                } else {
                    outcome.entriesSettled += 1
                    outcome.entriesSkipped += 1
                }
                continue
            }
            if status.kind != .directory { outcome.entriesFound += 1 }
            if let mountChild, status.kind != .directory { Self.forget(mountChild, in: &outcome.report) }
            do {
                try compare(entry.name, status, in: directory,
                            destinationHasName: destinationNames.contains(ExactName(entry.name)), outcome: &outcome)
                if !status.kind.isMirrored {
                    // A special file, skipped: the source has nothing mirrored under its name,
                    // so with `delete` what the destination has there goes (a file the source
                    // replaced by a fifo stayed for ever).
                    sourceNames.remove(ExactName(entry.name))
                }
            } catch .cancelled {
                // A directory in its way whose removal the run's cancellation stopped.
                outcome.interrupted = true
                break
            } catch {
                let isError = outcome.report.failIsError(directory.path(of: entry.name), error)
                if status.kind != .directory {
                    if isError {
                        outcome.entriesFailed += 1
                    } else {
                        outcome.entriesSettled += 1
                        outcome.entriesSkipped += 1
                    }
                }
            }
        }
        if !outcome.interrupted {
            for child in mountChildren.values { Self.forget(child, in: &outcome.report) }
        }
        if settings.delete && !outcome.interrupted {
            deleteExtras(destinationEntries, keeping: sourceNames, reported: sourceNamesNotUTF8, in: directory, outcome: &outcome)
        }
        if outcome.interrupted {
            // Cancelled (or given up on) part way: nothing more is done here, and the directory
            // gets back the mode the scan changed to write in it (as found: the source's is
            // given by the next whole run, which goes on where this one stopped).
            outcome.jobs = []
            outcome.subdirectories = []
            outcome.finished = true
            directory.undoMakeWritable(report: &outcome.report, settings: settings)
            return
        }
        // Before the workers add names to it: copies and links, and subdirectories to make (a
        // checksum comparison makes it writable itself, only when the contents differ).
        if outcome.jobs.contains(where: { $0.action.alwaysChangesTheDirectory })
            || outcome.subdirectories.contains(where: { $0.destinationKind != .directory })
        {
            do {
                try directory.makeWritable()
            } catch {
                // Each change in it fails then, and says why.
                outcome.report.fail(directory.reportPath, error.description)
            }
        }
        if outcome.jobs.isEmpty && outcome.subdirectories.isEmpty {
            do {
                _ = try directory.finish(modified: outcome.modified, durable: settings.durable, report: &outcome.report)
            } catch {
                outcome.report.fail(directory.reportPath, error.description)
            }
            outcome.finished = true
        }
    }

    /// Whether `directory` is a remembered mount point below the source root (`SourceMounts`)
    /// that is now an empty directory on its parent's file system while its destination has
    /// content (not counting unfinished copies): most likely a file system that did not mount.
    /// With `delete`, nothing in it is touched (what its destination holds is kept, its mode
    /// and mtime too) and it is an error of the run, naming it; it stays remembered. A
    /// remembered path found a plain directory otherwise is forgotten.
    private func guardsUnmounted(
        _ directory: MirrorDirectory, sourceEntries: [DirectoryEntry], destinationEntries: [DirectoryEntry],
        outcome: inout ScanOutcome
    ) -> Bool {
        guard let node = directory.mounts, node.isRemembered, !directory.sourceIsMountPoint else { return false }
        let destinationHasContent = destinationEntries.contains { !($0.nameIsExact && MirrorTemporaryName.isTemporary($0.name)) }
        guard sourceEntries.isEmpty, destinationHasContent else {
            outcome.report.mountsForgotten.append(node.path)
            return false
        }
        // Without `delete` nothing goes anyway: the directory is mirrored as it is, remembered still.
        guard settings.delete else { return false }
        outcome.report.fail(directory.reportPath, SourceMounts.unmounted)
        outcome.finished = true
        directory.undoMakeWritable(report: &outcome.report, settings: settings)
        return true
    }

    /// Forgets the remembered mount points at and below `node`: the source no longer has it as
    /// a directory.
    private static func forget(_ node: SourceMounts.Node, in report: inout MirrorReport) {
        report.mountsForgotten += [node.path, node.path + "/"]
    }

    /// Decides what `name`, whose source `lstat` is `source`, needs; throws for entries that
    /// cannot be looked at or made way for.
    private func compare(_ name: String, _ source: FileStatus, in directory: MirrorDirectory,
                         destinationHasName: Bool, outcome: inout ScanOutcome) throws(MirrorFailure)
    {
        var destination: FileStatus? = nil
        if destinationHasName {
            try WalkWatch.begin(.lookingAt(.destination), name)
            do {
                destination = try directory.destination.descriptor.status(at: name, followSymlinks: false)
            } catch .noSuchFileOrDirectory {
                destination = nil
            } catch {
                throw .system("lstat (destination)", error)
            }
        }
        switch source.kind {
        case .directory:
            outcome.subdirectories.append(SubdirectoryJob(name: name, destinationKind: destination?.kind))
        case .regular:
            try makeWay(for: name, over: destination, in: directory, outcome: &outcome)
            guard let destination, destination.kind == .regular else {
                outcome.jobs.append(FileJob(name: name, action: .copy, source: source, isNew: destination == nil))
                return
            }
            if let action = fileAction(source: source, destination: destination) {
                outcome.jobs.append(FileJob(name: name, action: action, source: source, isNew: false, hasEarlierCopy: true))
            } else {
                outcome.report.unchanged += 1
                outcome.entriesSettled += 1
                if source.hasSetIDBits,
                    SetIDBits.areMissing(source.permissionsOfCopy(ownedBy: destination.userID, group: destination.groupID),
                                         in: destination.permissions)
                {
                    outcome.report.noteSetIDBitsNotKept(directory.path(of: name))
                }
            }
        case .symbolicLink:
            // The target first: a link that cannot be mirrored (vanished, a target that is not
            // UTF-8) leaves a directory in its way where it is.
            let target: String
            try WalkWatch.begin(.lookingAt(.source), name)
            do {
                target = try MirrorFailure.attempt("readlink", vanishingFrom: .source) {
                    try directory.source.readSymbolicLink(at: name)
                }
            } catch .system(_, .illegalByteSequence) {
                throw .linkTargetNotUTF8
            }
            try makeWay(for: name, over: destination, in: directory, outcome: &outcome)
            try WalkWatch.begin(.lookingAt(.destination), name)
            if let destination, destination.kind == .symbolicLink, destination.size == source.size,
                (try? directory.destination.descriptor.readSymbolicLink(at: name))?.hasSameBytes(as: target) == true
            {
                if destination.modificationTime == source.modificationTime {
                    outcome.report.unchanged += 1
                    outcome.entriesSettled += 1
                } else {
                    outcome.jobs.append(FileJob(name: name, action: .fixLinkTime, source: source, isNew: false))
                }
                return
            }
            outcome.jobs.append(FileJob(name: name, action: .link(target: target), source: source,
                                        isNew: destination == nil))
        default:
            outcome.entriesSettled += 1
            outcome.entriesSkipped += 1
            outcome.report.skip(directory.path(of: name), "\(source.kind.phrase) skipped: only files, directories and links are mirrored")
        }
    }

    /// What a regular file whose destination is a regular file needs, nil for nothing.
    private func fileAction(source: FileStatus, destination: FileStatus) -> FileJob.Action? {
        // A file with other hard links (made by someone else: the mirror makes none) is
        // replaced by a copy of its own, never changed in place, which would change the others.
        if destination.linkCount > 1 { return .copy }
        if settings.compare == .checksum {
            return source.size == destination.size ? .verify : .copy
        }
        if source.size != destination.size || source.modificationTime != destination.modificationTime {
            return .copy
        }
        // Less the set-ID bits this process was refused on the destination's file system, or
        // set-group-ID the kernel cleared on a copy of its group (`SetIDBits`): a copy without
        // them is as good as it gets, not fixed on every run.
        let wanted = SetIDBits.attainable(
            source.permissionsOfCopy(ownedBy: destination.userID, group: destination.groupID), on: destination.device,
            group: destination.groupID)
        return destination.permissions == wanted ? nil : .fixAttributes
    }

    /// Clears a destination directory out of the way of a file or link: with its content when
    /// `delete` is on, only when empty otherwise.
    private func makeWay(for name: String, over destination: FileStatus?, in directory: MirrorDirectory,
                         outcome: inout ScanOutcome) throws(MirrorFailure)
    {
        guard destination?.kind == .directory else { return }
        let remover = DestinationRemover(context)
        if !settings.delete {
            try WalkWatch.begin(.listing(.destination), name)
            guard try remover.isEmptyDirectory(name, in: directory.destination.descriptor) else { throw .directoryInTheWay }
        }
        try directory.makeWritable()
        try WalkWatch.begin(.removing, name)
        outcome.modified = true
        if settings.delete {
            try remover.remove(name, kind: .directory, in: directory.destination.descriptor, at: directory.path(of: name))
        } else {
            try remover.removeIfEmpty(name, in: directory.destination.descriptor)
        }
    }

    /// Removes `.weavedi-tmp.*` files (a crashed run's unfinished copies) from the listing's
    /// directory and from the listing.
    private func removeLeftovers(_ entries: inout [DirectoryEntry], in directory: MirrorDirectory,
                                 outcome: inout ScanOutcome)
    {
        guard entries.contains(where: { MirrorTemporaryName.isTemporary($0.name) }) else { return }
        entries.removeAll { entry in
            guard entry.nameIsExact, MirrorTemporaryName.isTemporary(entry.name), entry.kind != .directory else {
                return false
            }
            do throws(MirrorFailure) {
                try directory.makeWritable()
                try WalkWatch.begin(.removing, entry.name)
            } catch {
                outcome.report.fail(directory.path(of: entry.name), error.description)
                return true
            }
            do {
                try directory.destination.descriptor.unlink(at: entry.name)
                outcome.modified = true
                outcome.report.leftoversRemoved += 1
            } catch .noSuchFileOrDirectory {
                // Gone already.
            } catch {
                outcome.report.fail(directory.path(of: entry.name), "unlink (leftover temporary file): \(error)")
            }
            return true
        }
    }

    /// With `delete`, removes what the destination has and the source does not; a run
    /// cancelled (or given up on) stops at the next entry, even inside a tree (`interrupted`).
    /// Removes the destination's entries whose names the source does not have (`names`, valid
    /// UTF-8 each); one whose name is not UTF-8 is reported, unless the source has that name
    /// too (`reported`: its shown form), whose report it shares.
    private func deleteExtras(_ entries: [DirectoryEntry], keeping names: Set<ExactName>, reported: Set<ExactName>,
                              in directory: MirrorDirectory, outcome: inout ScanOutcome)
    {
        let remover = DestinationRemover(context)
        for entry in entries {
            if WalkWatch.runIsStopping {
                outcome.interrupted = true
                return
            }
            guard entry.nameIsExact else {
                if !reported.contains(ExactName(entry.name)) {
                    outcome.report.fail(directory.path(of: entry.name), MirrorFailure.nameNotUTF8.description)
                }
                continue
            }
            if names.contains(ExactName(entry.name)) { continue }
            do throws(MirrorFailure) {
                try directory.makeWritable()
                try WalkWatch.begin(.removing, entry.name)
                // Each entry removed is counted in the run's tally as it goes: a run given up
                // on while deleting counts what went.
                try remover.remove(entry.name, kind: entry.kind, in: directory.destination.descriptor, at: directory.path(of: entry.name))
            } catch .cancelled {
                // Stopped at the next entry of the tree being removed: the rest stays.
                outcome.interrupted = true
            } catch {
                outcome.report.fail(directory.path(of: entry.name), error.description)
            }
            outcome.modified = true
            context.tally.handOver(&outcome.report)
            if outcome.interrupted { return }
        }
    }
}

extension FileKind {
    /// Whether the mirror copies entries of this kind: files, directories and links, not
    /// special files (fifos, sockets, devices), which it skips.
    var isMirrored: Bool {
        switch self {
        case .regular, .directory, .symbolicLink: true
        case .fifo, .socket, .characterDevice, .blockDevice, .unknown: false
        }
    }
}
