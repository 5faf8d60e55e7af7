import WeaveDIPosix

/// Opening a destination directory whose mode denies its owner `r`: the copy of a source
/// directory the run reads as "others" (mode 0355, owned by another user), which the run's
/// user owns and so may not list. An ordinary `open` fails there with `EACCES`, on every run;
/// this opens it as its owner may, wherever the run meets one: a subdirectory of the walk, the
/// destination root, a tree being removed.
enum OwnerOpening {
    /// Opens the directory `name` in `parent` (never following a link) for listing, after an
    /// ordinary open failed with `EACCES` and the run is not root: through a handle that needs
    /// no permission (`O_PATH`), the owner's `rwx` added to its mode, then opened again. `found`
    /// is then its status as found, whose mode the caller gives back when done with it (or
    /// when it does not get there). When the opening fails after the mode changed, the mode is
    /// given back here: less a set-ID bit the process may not set, counted in `report` as not
    /// kept (`SetIDBits`), and what cannot be given back at all is a failure in `report`,
    /// naming the directory at `path` and the `chmod` that gives it back by hand (`fullPath`).
    ///
    /// The mode is changed on the handle's own directory (through `/proc/self/fd`), never on
    /// what the name leads to meanwhile; and never on `sourceRoot`'s (a bind mount of it in the
    /// destination: `.otherRoot`), nor on a directory that is not the run's user's, which stays
    /// `EACCES` as before. A directory that is the root of a mount is refused (`.mountPoint`: a
    /// mount inside the destination), unless `mountRoot` says it may be one: the destination
    /// root itself, which may be a mount point (`destinationMountPoint`).
    static func open(
        _ name: String, in parent: FileDescriptor, refusing sourceRoot: FileIdentity, found: inout FileStatus?,
        report: inout MirrorReport, at path: @autoclosure () -> String, fullPath: @autoclosure () -> String,
        mountRoot: Bool = false
    ) throws(MirrorFailure) -> OwnedDescriptor {
        // Gone or replaced since (`.vanishedFromDestination`, `.replaced`), as an ordinary open
        // would say.
        let handle = try MirrorFailure.opening(name, in: parent, side: .destination) {
            try parent.open(at: name, .pathOnly, options: [.directory, .noFollow])
        }
        let status = try MirrorFailure.attempt("fstat") { try handle.descriptor.status() }
        if FileIdentity(status) == sourceRoot { throw .otherRoot }
        if !mountRoot, try MirrorFailure.attempt("statx", { try handle.descriptor.isMountRoot() }) { throw .mountPoint }
        guard status.userID == CurrentProcess.effectiveUserID, let open = status.modeOpenToItsOwner(isPrivileged: false) else {
            throw .system("open", .permissionDenied)  // not the run's to change
        }
        // Less a set-group-ID bit the process may not set (`SetIDBits`): the caller gives the
        // directory its mode when done, and reports that bit not kept.
        let opened = try MirrorFailure.attempt("chmod (/proc/self/fd)") {
            try setPermissions(open, of: handle.descriptor, current: status.permissions, group: status.groupID, on: status.device)
        }
        do {
            let directory = try handle.descriptor.openDirectory(at: ".", noFollow: true)
            found = status
            return directory
        } catch {
            do throws(Errno) {
                let given = try setPermissions(
                    status.permissions, of: handle.descriptor, current: opened, group: status.groupID, on: status.device)
                if SetIDBits.areMissing(status.permissions, in: given) { report.noteSetIDBitsNotKept(path()) }
            } catch let giveBack {
                report.failToGiveBack(
                    path(), status.permissions, after: "added its owner's rwx to open it", "\(giveBack)", fullPath: fullPath())
            }
            throw .system("open", error)
        }
    }

    /// Gives the directory of `handle`, whose mode is `current`, the mode `permissions`
    /// (`SetIDBits.set`); returns the mode it has now.
    private static func setPermissions(
        _ permissions: FilePermissions, of handle: FileDescriptor, current: FilePermissions, group: UInt32, on device: UInt64
    ) throws(Errno) -> FilePermissions {
        try SetIDBits.set(permissions, on: handle, pathOnly: true, current: current, group: group, device: device)
    }
}
