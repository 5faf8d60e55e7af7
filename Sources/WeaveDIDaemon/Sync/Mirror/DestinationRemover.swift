import WeaveDIPosix

/// Removes entries from the destination: files and links with `unlinkat`, directories depth
/// first through descriptors opened with `O_NOFOLLOW`, so a link inside never leads out.
struct DestinationRemover {
    /// The source root: a destination directory that is it (through a bind mount) is refused.
    let sourceRoot: FileIdentity
    /// Whether the run is root, which may remove entries from a directory whose mode denies it.
    let isPrivileged: Bool

    /// Removes `name` from `directory`, whatever it is; `removed` counts every entry removed,
    /// also when a failure stops the removal part way.
    func remove(_ name: String, kind: FileKind, in directory: FileDescriptor, removed: inout Int)
        throws(MirrorFailure)
    {
        WalkWatch.pulse()  // each entry removed starts the step's limit again
        var kind = kind
        if kind == .unknown {
            kind = try MirrorFailure.attempt("lstat", missingMeansVanished: true) {
                try directory.status(at: name, followSymlinks: false)
            }.kind
        }
        if kind == .directory {
            try removeTree(name, in: directory, removed: &removed)
        } else {
            try unlink(name, in: directory)
            removed += 1
        }
    }

    /// Whether the directory `name` has no entries (or is gone): asked before a read-only
    /// directory is made writable to remove it with `removeIfEmpty`, so that one that is in
    /// the way for good is refused without touching its parent's mode (and ctime).
    func isEmptyDirectory(_ name: String, in parent: FileDescriptor) throws(MirrorFailure) -> Bool {
        do {
            let directory = try MirrorFailure.opening { try parent.openDirectory(at: name, noFollow: true) }
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

    private func removeTree(_ name: String, in parent: FileDescriptor, removed: inout Int) throws(MirrorFailure) {
        guard let directory = try openForRemoval(name, in: parent, removed: &removed) else { return }
        let status = try MirrorFailure.attempt("fstat") { try directory.descriptor.status() }
        if FileIdentity(status) == sourceRoot { throw .otherRoot }
        // Nothing is deleted inside a mount: it may hold any tree, the source's among them.
        if try MirrorFailure.attempt("statx", { try directory.descriptor.isMountRoot() }) { throw .mountPoint }
        if let writable = status.modeOpenToItsOwner(isPrivileged: isPrivileged) {
            // A read-only directory is emptied as its owner may: made writable first (it goes).
            try MirrorFailure.attempt("fchmod") { try directory.descriptor.setPermissions(writable) }
        }
        let entries = try MirrorFailure.attempt("readdir") { try directory.descriptor.directoryEntries() }
        for entry in entries {
            guard entry.nameIsExact else { throw .nameNotUTF8 }
            try remove(entry.name, kind: entry.kind, in: directory.descriptor, removed: &removed)
        }
        do {
            try parent.removeDirectory(at: name)
            removed += 1
        } catch .noSuchFileOrDirectory {
            return
        } catch {
            throw .system("rmdir", error)
        }
    }

    /// Opens the directory `name` to empty it (one whose mode denies its owner `r` as its
    /// owner may: `OwnerOpening`; it goes, so its mode is not given back); nil when it turned
    /// out to be a file or link (removed here in one go) or to be gone already.
    private func openForRemoval(_ name: String, in parent: FileDescriptor, removed: inout Int)
        throws(MirrorFailure) -> OwnedDescriptor?
    {
        do {
            do {
                return try MirrorFailure.opening { try parent.openDirectory(at: name, noFollow: true) }
            } catch .system("open", .permissionDenied) where !isPrivileged {
                var found: FileStatus?
                return try OwnerOpening.open(name, in: parent, refusing: sourceRoot, found: &found)
            }
        } catch .vanished {
            return nil
        } catch .replaced {
            try unlink(name, in: parent)
            removed += 1
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
