import WeaveDIPosix

/// The look through the whole destination that the first run after one that never ended
/// (killed, crashed, the power) makes once its walk is done (`MirrorSettings.sweepsLeftovers`):
/// the walk removes the unfinished copies (`.weavedi-tmp.*`) of the directories it visits, but
/// not of those it does not (a source directory gone with `delete` off, unreadable now, or
/// replaced by a file), where they stayed for ever.
///
/// Only regular files and symbolic links (what a run makes under such names) whose names have
/// the whole reserved shape (`MirrorTemporaryName.isTemporary`) are removed, as the walk
/// removes them; nothing else is changed. Directories are opened one name at a time with
/// `O_NOFOLLOW` (a link is never followed), and neither a mount inside the destination nor the
/// source root (a bind mount) is entered. A directory that had to be made writable (or opened
/// as its owner may) gets its mode back, and one from which something was removed its mtime as
/// found; each step is noted for the run's watch (`WalkWatch`), and the run's cancellation stops
/// the sweep at the next entry. One descriptor is held per level of the tree, as the walk holds.
struct LeftoverSweep {
    let context: MirrorContext

    /// A directory being looked through: its handle (the root's is the walk's, not closed
    /// here), its path relative to the roots, its status as opened (as found, when the opening
    /// changed its mode), the subdirectories still to look at, and what the sweep changed.
    private final class Level {
        let handle: FileDescriptor
        let owned: Bool
        let path: String
        let found: FileStatus
        var subdirectories: [String] = []
        var next = 0
        /// Whether its mode was changed to list it or to remove from it.
        var madeWritable: Bool
        var modified = false

        init(handle: FileDescriptor, owned: Bool, path: String, found: FileStatus, madeWritable: Bool) {
            self.handle = handle
            self.owned = owned
            self.path = path
            self.found = found
            self.madeWritable = madeWritable
        }

        deinit {
            if owned { try? handle.close() }
        }
    }

    private var settings: MirrorSettings { context.settings }

    /// Looks through the destination below `root` (the walk's, done); returns what it did,
    /// `leftoverSweepDone` set when it went through every directory without an error.
    func run(_ root: MirrorDirectory) -> MirrorReport {
        var report = MirrorReport()
        let rootDescriptor = root.destination.descriptor
        let rootStatus: FileStatus
        do {
            try WalkWatch.begin(.lookingAt(.destination), nil, in: root)
            rootStatus = try MirrorFailure.attempt("fstat") { try rootDescriptor.status() }
        } catch {
            if error != .cancelled { report.fail(".", Self.reason(error)) }
            return report
        }
        var failed = false
        var stack: [Level] = []
        if let top = list(Level(handle: rootDescriptor, owned: false, path: "", found: rootStatus, madeWritable: false),
                          root: root, report: &report, failed: &failed) {
            stack.append(top)
        }
        var stopped = false
        while let level = stack.last {
            if WalkWatch.runIsStopping {
                stopped = true
                break
            }
            guard level.next < level.subdirectories.count else {
                leave(level, root: root, report: &report, failed: &failed)
                stack.removeLast()
                continue
            }
            let name = level.subdirectories[level.next]
            level.next += 1
            if let below = open(name, in: level, root: root, report: &report, failed: &failed) {
                stack.append(below)
            }
        }
        // Stopped part way: the directories it changed get their modes back, from the deepest up.
        for level in stack.reversed() { leave(level, root: root, report: &report, failed: &failed) }
        report.leftoverSweepDone = !stopped && !failed
        return report
    }

    /// What a failure of the sweep says.
    private static func reason(_ error: MirrorFailure) -> String {
        "looking for unfinished copies left by an interrupted run: \(error)"
    }

    /// Opens the directory `name` of `parent`; nil when it is not to be looked through (gone,
    /// not a directory any more, a mount, the source root) or cannot be (said in `report`).
    private func open(_ name: String, in parent: Level, root: MirrorDirectory, report: inout MirrorReport, failed: inout Bool) -> Level? {
        let path = parent.path.isEmpty ? name : parent.path + "/" + name
        var ownerOpened: FileStatus?
        do throws(MirrorFailure) {
            try WalkWatch.begin(.openingDirectory(.destination), path, in: root)
            let opened: OwnedDescriptor
            do {
                opened = try MirrorFailure.opening(name, in: parent.handle, side: .destination) {
                    try parent.handle.openDirectory(at: name, noFollow: true)
                }
            } catch .system("open", .permissionDenied) where !context.isPrivileged {
                opened = try OwnerOpening.open(
                    name, in: parent.handle, refusing: context.sourceRoot, found: &ownerOpened, report: &report, at: path,
                    fullPath: settings.destinationPath(of: path))
            }
            let handle = opened.release()
            let status: FileStatus
            let isMount: Bool
            do {
                status = try MirrorFailure.attempt("fstat") { try handle.status() }
                // Where the kernel does not say (before Linux 5.8), a directory on another
                // device than its parent, as the scanner tells a mount point below the source.
                let said = try MirrorFailure.attempt("statx") { try handle.mountRoot() }
                isMount = said ?? (status.device != parent.found.device)
            } catch {
                if let ownerOpened {
                    leave(Level(handle: handle, owned: true, path: path, found: ownerOpened, madeWritable: true),
                          root: root, report: &report, failed: &failed)
                } else {
                    try? handle.close()
                }
                throw error
            }
            let level = Level(handle: handle, owned: true, path: path, found: ownerOpened ?? status, madeWritable: ownerOpened != nil)
            // A mount inside the destination, or the source root through a bind mount: not the run's.
            if isMount || FileIdentity(status) == context.sourceRoot {
                leave(level, root: root, report: &report, failed: &failed)
                return nil
            }
            return list(level, root: root, report: &report, failed: &failed)
        } catch .vanishedFromDestination, .replaced, .mountPoint, .otherRoot {
            return nil
        } catch .cancelled {
            return nil  // the loop stops at its next look
        } catch {
            report.fail(path, Self.reason(error))
            failed = true
            return nil
        }
    }

    /// Lists `level`, removes its unfinished copies and notes its subdirectories; nil (its mode
    /// given back) when the listing fails or is stopped.
    private func list(_ level: Level, root: MirrorDirectory, report: inout MirrorReport, failed: inout Bool) -> Level? {
        let entries: [DirectoryEntry]
        do {
            try WalkWatch.begin(.listing(.destination), level.path, in: root)
            entries = try WalkWatch.list(level.handle, "readdir (destination)")
        } catch {
            if error != .cancelled {
                report.fail(level.path.isEmpty ? "." : level.path, Self.reason(error))
                failed = true
            }
            leave(level, root: root, report: &report, failed: &failed)
            return nil
        }
        for entry in entries where entry.nameIsExact {
            if WalkWatch.runIsStopping { break }
            let path = level.path.isEmpty ? entry.name : level.path + "/" + entry.name
            var kind = entry.kind
            do throws(MirrorFailure) {
                if kind == .unknown {
                    try WalkWatch.begin(.lookingAt(.destination), path, in: root)
                    kind = try MirrorFailure.attempt("lstat", vanishingFrom: .destination) {
                        try level.handle.status(at: entry.name, followSymlinks: false)
                    }.kind
                }
                if kind == .directory {
                    level.subdirectories.append(entry.name)
                    continue
                }
                guard kind == .regular || kind == .symbolicLink, MirrorTemporaryName.isTemporary(entry.name) else { continue }
                try makeWritable(level, root: root)
                try WalkWatch.begin(.removing, path, in: root)
                do {
                    try level.handle.unlink(at: entry.name)
                    level.modified = true
                    report.leftoversRemoved += 1
                } catch .noSuchFileOrDirectory {
                    // Gone already.
                } catch {
                    throw MirrorFailure.system("unlink (leftover temporary file)", error)
                }
            } catch .vanishedFromDestination {
                continue
            } catch .cancelled {
                break
            } catch {
                report.fail(path, Self.reason(error))
                failed = true
            }
        }
        return level
    }

    /// Adds its owner's `rwx` to `level`'s mode when it denies the run removing from it.
    private func makeWritable(_ level: Level, root: MirrorDirectory) throws(MirrorFailure) {
        guard !level.madeWritable, let writable = level.found.modeOpenToItsOwner(isPrivileged: context.isPrivileged) else { return }
        try WalkWatch.begin(.settingAttributes, level.path, in: root)
        _ = try MirrorFailure.attempt("fchmod") {
            try SetIDBits.set(
                writable, on: level.handle, current: level.found.permissions, group: level.found.groupID, device: level.found.device)
        }
        level.madeWritable = true
    }

    /// Done with `level`: one from which something was removed gets its mtime as found (and
    /// is flushed, `durable`); one whose mode changed gets it back (less set-ID bits the process
    /// may not set: `SetIDBits`). What cannot be done is in `report`, with the `chmod` for a mode.
    private func leave(_ level: Level, root: MirrorDirectory, report: inout MirrorReport, failed: inout Bool) {
        let path = level.path.isEmpty ? "." : level.path
        guard level.modified || level.madeWritable, (try? WalkWatch.begin(.settingAttributes, level.path, in: root)) != nil else {
            return
        }
        if level.modified {
            do throws(MirrorFailure) {
                try MirrorFailure.attempt("futimens") {
                    try level.handle.setTimes(access: nil, modification: level.found.modificationTime)
                }
                if settings.durable {
                    try WalkWatch.begin(.flushing, level.path, in: root)
                    try MirrorFailure.attempt("fsync") { try level.handle.fsync() }
                }
            } catch {
                if error != .cancelled {
                    report.fail(path, Self.reason(error))
                    failed = true
                }
            }
        }
        guard level.madeWritable else { return }
        do throws(Errno) {
            let given = try SetIDBits.set(
                level.found.permissions, on: level.handle, current: try level.handle.status().permissions,
                group: level.found.groupID, device: level.found.device)
            level.madeWritable = false
            if SetIDBits.areMissing(level.found.permissions, in: given) { report.noteSetIDBitsNotKept(path) }
        } catch {
            report.failToGiveBack(
                path, level.found.permissions, after: "added its owner's rwx to remove unfinished copies from it", "\(error)",
                fullPath: settings.destinationPath(of: level.path),
                subject: level.path.isEmpty ? "the destination root's mode" : "its mode")
            failed = true
        }
    }
}
