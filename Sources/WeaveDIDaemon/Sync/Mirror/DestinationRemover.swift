import WeaveDIPosix

/// Removes entries from the destination: files and links with `unlinkat`, directories depth
/// first through descriptors opened with `O_NOFOLLOW`, so a link inside never leads out; a
/// tree of any depth with a stack of its own and at most `openLevels` descriptors.
///
/// A directory whose mode denies its owner what emptying it takes is made writable (or opened
/// as its owner may) first: it goes. A removal that stops part way (an entry that cannot be
/// removed, a directory moved meanwhile) gives the directories it changed and did not remove
/// their modes back, from the deepest up; what it cannot give back is a failure of the run,
/// with the `chmod` that does it by hand. So does a removal whose run is cancelled: it stops
/// at the next entry (`cancelled`), however large the tree.
struct DestinationRemover {
    /// The source root: a destination directory that is it (through a bind mount) is refused.
    let sourceRoot: FileIdentity
    /// Whether the run is root, which may remove entries from a directory whose mode denies it.
    let isPrivileged: Bool
    /// The run's tally, which counts every entry removed as it goes: a removal that a failure
    /// stops part way, or that the run gives up on while it waits in a call, has counted what
    /// went.
    let tally: MirrorTally
    /// The run's settings: the destination root as configured, which the `chmod` of a mode
    /// that could not be given back names.
    let settings: MirrorSettings

    /// A remover for the run of `context`.
    init(_ context: MirrorContext) {
        sourceRoot = context.sourceRoot
        isPrivileged = context.isPrivileged
        tally = context.tally
        settings = context.settings
    }

    /// Removes `name` from `directory`, whatever it is, counting each entry removed in `tally`;
    /// `path` is its path in reports (relative to the roots).
    func remove(_ name: String, kind: FileKind, in directory: FileDescriptor, at path: String) throws(MirrorFailure) {
        WalkWatch.pulse()  // each entry removed starts the step's limit again
        if try self.kind(of: name, listed: kind, in: directory) == .directory {
            try removeTree(name, in: directory, at: path)
        } else {
            try unlink(name, in: directory)
            tally.countDeletion()
        }
    }

    /// Whether the directory `name` has no entries (or is gone): asked before a read-only
    /// directory is made writable to remove it with `removeIfEmpty`, so that one that is in
    /// the way for good is refused without touching its parent's mode (and ctime).
    func isEmptyDirectory(_ name: String, in parent: FileDescriptor) throws(MirrorFailure) -> Bool {
        do {
            let directory = try MirrorFailure.opening(name, in: parent, side: .destination) {
                try parent.openDirectory(at: name, noFollow: true)
            }
            return try !MirrorFailure.attempt("readdir") { try directory.descriptor.hasEntry() }
        } catch .vanishedFromDestination, .replaced, .system("open", .permissionDenied) {
            // Nothing in the way now, or a directory that cannot be read (no `r`): `rmdir`,
            // which needs no `r`, says what is there.
            return true
        }
    }

    /// Removes an empty directory `name` only: for `delete: false`, which never drops content.
    func removeIfEmpty(_ name: String, in directory: FileDescriptor) throws(MirrorFailure) {
        do {
            try directory.removeDirectory(at: name)
        } catch .directoryNotEmpty, .fileExists {
            throw .directoryInTheWay
        } catch .noSuchFileOrDirectory {
            return
        } catch {
            throw .system("rmdir", error)
        }
    }

    /// At most this many directories of a tree being removed are open at once: deeper down,
    /// the shallowest open one is closed, and opened again (through `..` from its
    /// subdirectory, its identity checked) when the removal comes back up to it.
    static let openLevels = 32

    /// A directory of a tree being removed: its name in its parent, its identity, its
    /// descriptor (nil while closed, the removal being deeper than `openLevels` below it), its
    /// entries, listed when it was opened, the first `next` of them done, and its status as
    /// found when the removal changed its mode to empty it (nil when it did not).
    private final class Level {
        let name: String
        let identity: FileIdentity
        private(set) var handle: FileDescriptor?
        let entries: [DirectoryEntry]
        var next = 0
        let found: FileStatus?

        init(name: String, identity: FileIdentity, handle: consuming OwnedDescriptor, entries: [DirectoryEntry], found: FileStatus?) {
            self.name = name
            self.identity = identity
            self.entries = entries
            self.found = found
            self.handle = handle.release()
        }

        deinit { close() }

        /// The descriptor; only while open (the removal works in open directories only).
        var descriptor: FileDescriptor {
            guard let handle else { preconditionFailure("the directory \"\(name)\" was used while closed") }
            return handle
        }

        func close() {
            try? handle?.close()
            handle = nil
        }

        /// Opens it again, as the parent `..` of `child` (open), which must be this directory
        /// still: one moved meanwhile is not followed (`.moved`).
        func reopen(from child: Level) throws(MirrorFailure) {
            let parent = try MirrorFailure.attempt("open (..)") { try child.descriptor.openDirectory(at: "..", noFollow: true) }
            let status = try MirrorFailure.attempt("fstat") { try parent.descriptor.status() }
            guard FileIdentity(status) == identity else { throw .moved }
            handle = parent.release()
        }
    }

    /// Empties and removes the directory `name`, depth first, with a stack of its own rather
    /// than a call per level (a tree thousands of levels deep overflowed a thread's stack),
    /// holding at most `openLevels` descriptors whatever its depth. When it stops part way (a
    /// failure, or the run cancelled: `cancelled`), the directories left whose modes it changed
    /// get them back (`giveBack`).
    private func removeTree(_ name: String, in parent: FileDescriptor, at path: String) throws(MirrorFailure) {
        guard let top = try openLevel(name, in: parent, at: path) else { return }
        var levels = [top]
        /// `levels[firstOpen...]` are open; those below were closed, the removal being deeper.
        var firstOpen = 0
        do {
            try empty(&levels, firstOpen: &firstOpen, below: parent, at: path)
        } catch {
            giveBack(levels, firstOpen: firstOpen, at: path)
            throw error
        }
    }

    /// The loop of `removeTree`: empties and removes `levels` and what they hold.
    private func empty(_ levels: inout [Level], firstOpen: inout Int, below parent: FileDescriptor, at path: String)
        throws(MirrorFailure)
    {
        while let level = levels.last {
            // A run cancelled, or given up on, stops at the next entry (or the next emptied
            // level's `rmdir`) rather than at the tree's end: what went is counted, and the
            // directories left get their modes back (`removeTree`); the next run goes on.
            if WalkWatch.runIsStopping { throw .cancelled }
            if level.next < level.entries.count {
                let entry = level.entries[level.next]
                level.next += 1
                WalkWatch.pulse()  // each entry removed starts the step's limit again
                guard entry.nameIsExact else { throw .nameNotUTF8 }
                let directory = level.descriptor
                if try kind(of: entry.name, listed: entry.kind, in: directory) == .directory {
                    guard let below = try openLevel(entry.name, in: directory, at: levelPath(levels, path) + "/" + entry.name) else {
                        continue
                    }
                    levels.append(below)
                    if levels.count - firstOpen > Self.openLevels {
                        levels[firstOpen].close()
                        firstOpen += 1
                    }
                } else {
                    try unlink(entry.name, in: directory)
                    tally.countDeletion()
                }
                continue
            }
            // Emptied: it goes from its parent, opened again first if it was closed. The way back
            // up a deep tree is work of the step too (an rmdir, perhaps a reopen, per level).
            // (Opened again while this one is on the stack still: should that fail, this one's
            // mode is given back with the others'.)
            WalkWatch.pulse()
            let above = levels.count > 1 ? levels[levels.count - 2] : nil
            if let above, firstOpen == levels.count - 1 {
                try above.reopen(from: level)
                firstOpen -= 1
            }
            let container = above?.descriptor ?? parent
            level.close()
            levels.removeLast()
            do {
                try container.removeDirectory(at: level.name)
                tally.countDeletion()
            } catch .noSuchFileOrDirectory {
                continue
            } catch {
                // It stays, and so does its mode as changed: given back through a handle on it.
                if let found = level.found {
                    giveBack(found, toThe: level, in: container, at: levels.isEmpty ? path : levelPath(levels, path) + "/" + level.name)
                }
                throw .system("rmdir", error)
            }
        }
    }

    /// The report path of the last of `levels`, the first of which is at `path`: built only
    /// for a report, never for each level (a path in each took memory in the square of the depth).
    private func levelPath(_ levels: [Level], _ path: String) -> String {
        levels.dropFirst().reduce(into: path) { $0 += "/" + $1.name }
    }

    /// Gives the directories of a removal that stopped part way, `levels` (those below
    /// `firstOpen` closed, the first at `path`), the modes the removal changed, from the deepest
    /// up: a closed one is opened again through `..` of the one below, before that one's mode
    /// is given back (which may deny the search `..` needs). One that cannot be reached any
    /// more (moved meanwhile) is reported with those above it, each with its `chmod`.
    private func giveBack(_ levels: [Level], firstOpen: Int, at path: String) {
        var report = MirrorReport()
        var firstOpen = firstOpen
        var unreachable = "closed"
        // The path of the deepest, and where each level's ends in it (names are exact UTF-8).
        let deepest = levelPath(levels, path)
        var ends = [path.utf8.count]
        for level in levels.dropFirst() { ends.append(ends[ends.count - 1] + 1 + level.name.utf8.count) }
        for index in levels.indices.reversed() {
            let level = levels[index]
            let levelPath = { String(decoding: deepest.utf8.prefix(ends[index]), as: UTF8.self) }
            guard index >= firstOpen else {
                if let found = level.found {
                    report.failToGiveBack(
                        levelPath(), found.permissions, after: "made it writable to remove its entries",
                        "not reached again (\(unreachable))", fullPath: settings.destinationPath(of: levelPath()))
                }
                continue
            }
            if index > 0, index - 1 < firstOpen {
                do {
                    try levels[index - 1].reopen(from: level)
                    firstOpen = index - 1
                } catch {
                    unreachable = error.description
                }
            }
            if let found = level.found { give(found, to: level.descriptor, at: levelPath(), into: &report) }
        }
        tally.absorb(report)
    }

    /// Gives `level`, a directory left in `container` by an `rmdir` that failed, its mode as
    /// `found`, through a handle on it (`O_PATH`: it is closed), when it is that directory still.
    private func giveBack(_ found: FileStatus, toThe level: Level, in container: FileDescriptor, at path: String) {
        var report = MirrorReport()
        do throws(Errno) {
            let handle = try container.open(at: level.name, .pathOnly, options: [.directory, .noFollow])
            guard FileIdentity(try handle.descriptor.status()) == level.identity else { throw .noSuchFileOrDirectory }
            give(found, to: handle.descriptor, pathOnly: true, at: path, into: &report)
        } catch {
            report.failToGiveBack(
                path, found.permissions, after: "made it writable to remove its entries", "not reached again (open: \(error))",
                fullPath: settings.destinationPath(of: path))
        }
        tally.absorb(report)
    }

    /// Gives the directory `directory` (a `pathOnly` handle, or open) at `path` its mode as
    /// `found`, less set-ID bits the process may not set, counted in `report` as not kept
    /// (`SetIDBits`); a failure is in `report`, with its `chmod`. Nothing is done once the run
    /// is given up on (`WalkWatch`).
    private func give(_ found: FileStatus, to directory: FileDescriptor, pathOnly: Bool = false, at path: String, into report: inout MirrorReport) {
        guard (try? WalkWatch.begin(.settingAttributes, nil)) != nil else { return }
        do throws(Errno) {
            let given = try SetIDBits.set(
                found.permissions, on: directory, pathOnly: pathOnly, current: try directory.status().permissions,
                group: found.groupID, device: found.device)
            if SetIDBits.areMissing(found.permissions, in: given) { report.noteSetIDBitsNotKept(path) }
        } catch {
            report.failToGiveBack(
                path, found.permissions, after: "made it writable to remove its entries", "\(error)",
                fullPath: settings.destinationPath(of: path))
        }
    }

    /// The kind of the entry `name`, `listed` by `readdir`: asked with `lstat` when the file
    /// system does not say (`DT_UNKNOWN`).
    private func kind(of name: String, listed: FileKind, in directory: FileDescriptor) throws(MirrorFailure) -> FileKind {
        guard listed == .unknown else { return listed }
        return try MirrorFailure.attempt("lstat", vanishingFrom: .destination) {
            try directory.status(at: name, followSymlinks: false)
        }.kind
    }

    /// Opens the directory `name` of a tree being removed, at `path` in reports, refusing the
    /// source root and a mount point, makes it writable when its mode denies its owner that
    /// (it goes), and lists it; nil when there is no directory to remove there any more. A
    /// mode it changed is given back when it fails after.
    private func openLevel(_ name: String, in parent: FileDescriptor, at path: @autoclosure () -> String) throws(MirrorFailure) -> Level? {
        var found: FileStatus?
        guard let directory = try openForRemoval(name, in: parent, found: &found, at: path()) else { return nil }
        do throws(MirrorFailure) {
            let status = try MirrorFailure.attempt("fstat") { try directory.descriptor.status() }
            if FileIdentity(status) == sourceRoot { throw .otherRoot }
            // Nothing is deleted inside a mount: it may hold any tree, the source's among them.
            if try MirrorFailure.attempt("statx", { try directory.descriptor.isMountRoot() }) { throw .mountPoint }
            if let writable = status.modeOpenToItsOwner(isPrivileged: isPrivileged) {
                // A read-only directory is emptied as its owner may: made writable first (it goes;
                // a set-group-ID bit the process may not set with it goes at once: `SetIDBits`).
                _ = try MirrorFailure.attempt("fchmod") {
                    try SetIDBits.set(
                        writable, on: directory.descriptor, current: status.permissions, group: status.groupID, device: status.device)
                }
                if found == nil { found = status }
            }
            // A run cancelled while it lists stops there (`cancelled`): the mode goes back below.
            let entries = try WalkWatch.list(directory.descriptor)
            return Level(name: name, identity: FileIdentity(status), handle: directory, entries: entries, found: found)
        } catch {
            if let found {
                var report = MirrorReport()
                give(found, to: directory.descriptor, at: path(), into: &report)
                tally.absorb(report)
            }
            throw error
        }
    }

    /// Opens the directory `name`, at `path` in reports, to empty it (one whose mode denies its
    /// owner `r` as its owner may: `OwnerOpening`, `found` then its status as found); nil when
    /// it turned out to be a file or link (removed here in one go) or to be gone already.
    private func openForRemoval(_ name: String, in parent: FileDescriptor, found: inout FileStatus?, at path: @autoclosure () -> String)
        throws(MirrorFailure) -> OwnedDescriptor?
    {
        do {
            do {
                return try MirrorFailure.opening(name, in: parent, side: .destination) {
                    try parent.openDirectory(at: name, noFollow: true)
                }
            } catch .system("open", .permissionDenied) where !isPrivileged {
                var report = MirrorReport()
                defer { tally.absorb(report) }
                return try OwnerOpening.open(
                    name, in: parent, refusing: sourceRoot, found: &found, report: &report, at: path(),
                    fullPath: settings.destinationPath(of: path()))
            }
        } catch .vanishedFromDestination {
            return nil
        } catch .replaced {
            try unlink(name, in: parent)
            tally.countDeletion()
            return nil
        }
    }

    private func unlink(_ name: String, in directory: FileDescriptor) throws(MirrorFailure) {
        do {
            try directory.unlink(at: name)
        } catch .noSuchFileOrDirectory {
            return
        } catch {
            throw .system("unlink", error)
        }
    }
}
