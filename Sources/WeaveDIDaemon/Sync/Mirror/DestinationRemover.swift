import WeaveDIPosix

/// Removes entries from the destination: files and links with `unlinkat`, directories depth
/// first through descriptors opened with `O_NOFOLLOW`, so a link inside never leads out; a
/// tree of any depth with a stack of its own and at most `openLevels` descriptors.
struct DestinationRemover {
    /// The source root: a destination directory that is it (through a bind mount) is refused.
    let sourceRoot: FileIdentity
    /// Whether the run is root, which may remove entries from a directory whose mode denies it.
    let isPrivileged: Bool
    /// The run's tally, which counts every entry removed as it goes: a removal that a failure
    /// stops part way, or that the run gives up on while it waits in a call, has counted what
    /// went.
    let tally: MirrorTally

    /// Removes `name` from `directory`, whatever it is, counting each entry removed in `tally`.
    func remove(_ name: String, kind: FileKind, in directory: FileDescriptor) throws(MirrorFailure) {
        WalkWatch.pulse()  // each entry removed starts the step's limit again
        if try self.kind(of: name, listed: kind, in: directory) == .directory {
            try removeTree(name, in: directory)
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
            let directory = try MirrorFailure.opening(name, in: parent) { try parent.openDirectory(at: name, noFollow: true) }
            return try MirrorFailure.attempt("readdir") {
                try directory.descriptor.directoryEntries { _ in WalkWatch.pulse() }
            }.isEmpty
        } catch .vanished, .replaced, .system("open", .permissionDenied) {
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
    /// descriptor (nil while closed, the removal being deeper than `openLevels` below it), and
    /// its entries, listed when it was opened, the first `next` of them done.
    private final class Level {
        let name: String
        let identity: FileIdentity
        private(set) var handle: FileDescriptor?
        let entries: [DirectoryEntry]
        var next = 0

        init(name: String, identity: FileIdentity, handle: consuming OwnedDescriptor, entries: [DirectoryEntry]) {
            self.name = name
            self.identity = identity
            self.entries = entries
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
    /// holding at most `openLevels` descriptors whatever its depth.
    private func removeTree(_ name: String, in parent: FileDescriptor) throws(MirrorFailure) {
        guard let top = try openLevel(name, in: parent) else { return }
        var levels = [top]
        /// `levels[firstOpen...]` are open; those below were closed, the removal being deeper.
        var firstOpen = 0
        while let level = levels.last {
            if level.next < level.entries.count {
                let entry = level.entries[level.next]
                level.next += 1
                WalkWatch.pulse()  // each entry removed starts the step's limit again
                guard entry.nameIsExact else { throw .nameNotUTF8 }
                let directory = level.descriptor
                if try kind(of: entry.name, listed: entry.kind, in: directory) == .directory {
                    guard let below = try openLevel(entry.name, in: directory) else { continue }
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
            WalkWatch.pulse()
            levels.removeLast()
            var container = parent
            if let above = levels.last {
                if firstOpen == levels.count {
                    try above.reopen(from: level)
                    firstOpen -= 1
                }
                container = above.descriptor
            }
            level.close()
            do {
                try container.removeDirectory(at: level.name)
                tally.countDeletion()
            } catch .noSuchFileOrDirectory {
                continue
            } catch {
                throw .system("rmdir", error)
            }
        }
    }

    /// The kind of the entry `name`, `listed` by `readdir`: asked with `lstat` when the file
    /// system does not say (`DT_UNKNOWN`).
    private func kind(of name: String, listed: FileKind, in directory: FileDescriptor) throws(MirrorFailure) -> FileKind {
        guard listed == .unknown else { return listed }
        return try MirrorFailure.attempt("lstat", missingMeansVanished: true) {
            try directory.status(at: name, followSymlinks: false)
        }.kind
    }

    /// Opens the directory `name` of a tree being removed, refusing the source root and a
    /// mount point, makes it writable when its mode denies its owner that (it goes), and
    /// lists it; nil when there is no directory to remove there any more.
    private func openLevel(_ name: String, in parent: FileDescriptor) throws(MirrorFailure) -> Level? {
        guard let directory = try openForRemoval(name, in: parent) else { return nil }
        let status = try MirrorFailure.attempt("fstat") { try directory.descriptor.status() }
        if FileIdentity(status) == sourceRoot { throw .otherRoot }
        // Nothing is deleted inside a mount: it may hold any tree, the source's among them.
        if try MirrorFailure.attempt("statx", { try directory.descriptor.isMountRoot() }) { throw .mountPoint }
        if let writable = status.modeOpenToItsOwner(isPrivileged: isPrivileged) {
            // A read-only directory is emptied as its owner may: made writable first (it goes;
            // a set-group-ID bit the process may not set with it goes at once: `SetIDBits`).
            _ = try MirrorFailure.attempt("fchmod") {
                try SetIDBits.set(
                    writable, current: status.permissions, group: status.groupID, on: status.device,
                    readBack: { () throws(Errno) in try directory.descriptor.status().permissions }
                ) { (mode) throws(Errno) in
                    try directory.descriptor.setPermissions(mode)
                }
            }
        }
        let entries = try MirrorFailure.attempt("readdir") {
            try directory.descriptor.directoryEntries { _ in WalkWatch.pulse() }
        }
        return Level(name: name, identity: FileIdentity(status), handle: directory, entries: entries)
    }

    /// Opens the directory `name` to empty it (one whose mode denies its owner `r` as its
    /// owner may: `OwnerOpening`; it goes, so its mode is not given back); nil when it turned
    /// out to be a file or link (removed here in one go) or to be gone already.
    private func openForRemoval(_ name: String, in parent: FileDescriptor) throws(MirrorFailure) -> OwnedDescriptor? {
        do {
            do {
                return try MirrorFailure.opening(name, in: parent) { try parent.openDirectory(at: name, noFollow: true) }
            } catch .system("open", .permissionDenied) where !isPrivileged {
                var found: FileStatus?
                return try OwnerOpening.open(name, in: parent, refusing: sourceRoot, found: &found)
            }
        } catch .vanished {
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
