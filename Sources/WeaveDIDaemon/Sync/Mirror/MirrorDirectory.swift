import Glibc
import Synchronization
import WeaveDI
import WeaveDIPosix

/// One directory of the source and its counterpart in the destination, both open, while the
/// run works on it.
///
/// Every entry inside is reached with `*at` calls on these descriptors and a single name from
/// `readdir`, never a concatenated path, and each subdirectory is opened with `O_NOFOLLOW`: a
/// symbolic link planted in the destination cannot send a write outside it.
///
/// The source descriptor is closed as soon as no work item needs it (`releaseSource`: the
/// directory is listed, its files are copied and its subdirectories opened), for `finish` only
/// needs the source's status, taken when the directory was opened (a change to the source
/// directory's mode or mtime during the run is mirrored by the next run). The destination
/// descriptor closes when the last work item that needs the directory lets go of it. Deep
/// down a tree, the walk thus holds one descriptor, not two, for each level above whose work
/// is all handed out.
final class MirrorDirectory: Sendable {
    /// The directory's name in its parent: `""` for the roots. Its path is not kept but built
    /// from the names up the chain of parents when a report or a stuck step needs it (`path`):
    /// a path in each open directory took memory in the square of the tree's depth (1.7 GB for
    /// a chain of 3,000 directories with names of 200 bytes).
    let name: String
    /// The source directory's status when it was opened: the mode and mtime `finish` gives the
    /// destination.
    let sourceStatus: FileStatus
    /// The destination directory.
    let destination: OwnedDescriptor
    /// The directory this one is in; nil for the roots. Kept open until this one is finished.
    let parent: MirrorDirectory?
    /// The remembered mount points at or below this directory (`SourceMounts`), nil when none.
    let mounts: SourceMounts.Node?
    /// Whether the source directory is a mount point: the root of a mount (where the kernel
    /// does not say, on another device than its parent); false for the roots.
    let sourceIsMountPoint: Bool
    private let openSource: FileDescriptor
    private let sourceReleased = Atomic<Bool>(false)
    /// The mode that lets the run write in the destination directory (its own plus the owner's
    /// `rwx`), when its own denies that and the run is not root; nil when it need not change.
    private let writableMode: FilePermissions?
    /// The destination directory's mode as opened.
    private let openedMode: FilePermissions
    /// The destination directory's file system (`st_dev`), for `SetIDBits`.
    private let destinationDevice: UInt64
    /// The destination directory's group, as opened: whether the kernel keeps its set-group-ID.
    private let destinationGroup: UInt32
    /// Whether `makeWritable` changed the mode; held through the change, as several batches of
    /// a checksum run may ask at once.
    private let madeWritable: Locked<Bool>

    /// `destinationStatus` is the destination directory's status as opened (as found, when
    /// the opener `madeWritable` already); `isPrivileged`, whether the run may write in it
    /// whatever its mode says (root).
    init(
        name: String, source: consuming OwnedDescriptor, sourceStatus: FileStatus, destination: consuming OwnedDescriptor,
        destinationStatus: FileStatus, madeWritable: Bool = false, isPrivileged: Bool, parent: MirrorDirectory?,
        mounts: SourceMounts.Node? = nil, sourceIsMountPoint: Bool = false
    ) {
        self.name = name
        self.mounts = mounts
        self.sourceIsMountPoint = sourceIsMountPoint
        openSource = source.release()
        self.sourceStatus = sourceStatus
        self.destination = destination
        self.parent = parent
        writableMode = destinationStatus.modeOpenToItsOwner(isPrivileged: isPrivileged)
        openedMode = destinationStatus.permissions
        destinationDevice = destinationStatus.device
        destinationGroup = destinationStatus.groupID
        self.madeWritable = Locked(madeWritable && writableMode != nil)
    }

    /// Whether the destination directory's mode denies the run listing it (no owner `r-x`,
    /// the run not being root): the scan makes it writable, and so listable, first.
    var deniesListing: Bool {
        writableMode != nil && openedMode.rawValue & 0o500 != 0o500
    }

    /// The path relative to the roots, for reports: `""` for the roots themselves. Built from
    /// the names up the chain of parents, in time and memory linear in the path's length: only
    /// for a report, or a step of a run that has a thread stuck (`WalkWatch`).
    var path: String {
        var names: [String] = []
        var directory = self
        while let parent = directory.parent {
            names.append(directory.name)
            directory = parent
        }
        return names.reversed().joined(separator: "/")
    }

    /// The path for reports: `.` for the roots.
    var reportPath: String {
        parent == nil ? "." : path
    }

    deinit {
        if !sourceReleased.load(ordering: .relaxed) { try? openSource.close() }
    }

    /// The source directory, opened read-only; only until `releaseSource`.
    var source: FileDescriptor {
        // A descriptor number used after its close may already name another open file.
        precondition(!sourceReleased.load(ordering: .relaxed), "the source of \"\(path)\" was used after it was released")
        return openSource
    }

    /// Closes the source directory: no work item will list it, open anything in it, or copy
    /// from it any more. Called once, by the coordinator, which alone knows.
    func releaseSource() {
        guard !sourceReleased.exchange(true, ordering: .relaxed) else { return }
        try? openSource.close()
    }

    /// The report path of `name` inside this directory (built from the chain of parents: for
    /// reports only, never for each entry).
    func path(of name: String) -> String {
        parent == nil ? name : path + "/" + name
    }

    /// Lets the run write in the destination directory when its mode denies that (a read-only
    /// directory, the run not being root): called before the first change in it (by the
    /// scan, or by a checksum comparison that found a difference), it adds the owner's `rwx`
    /// once; `finish` gives the directory the source's mode afterwards. A directory in which
    /// nothing changes keeps its mode, and its ctime (but for one whose mode denies its owner
    /// `r`, which is made writable as it is opened: no other way lists it).
    func makeWritable() throws(MirrorFailure) {
        guard let writableMode else { return }
        try madeWritable.withLock { (made: inout Bool) throws(MirrorFailure) in
            guard !made else { return }
            try WalkWatch.begin(.settingAttributes, nil, in: self)
            // A set-group-ID directory as found loses the bit where the process may not set it
            // (`SetIDBits`); `finish` gives it the source's mode, and reports the bit not kept.
            _ = try MirrorFailure.attempt("fchmod") { try setPermissions(writableMode, current: openedMode) }
            made = true
        }
    }

    /// Gives the mode `makeWritable` (or the opening as its owner may) changed back, for a
    /// directory that will not be finished (its listing failed, the run was cancelled): less
    /// set-ID bits this process may not set (`SetIDBits`), counted in `report` as not kept; a
    /// failure (often the file system's, as the listing's may be) is in `report` too, with the
    /// `chmod` that gives the mode back by hand, the directory's whole path found from the
    /// destination root of `settings`. Nothing is done once the run is given up on (`WalkWatch`).
    func undoMakeWritable(report: inout MirrorReport, settings: MirrorSettings) {
        madeWritable.withLock { made in
            guard made, (try? WalkWatch.begin(.settingAttributes, nil, in: self)) != nil else { return }
            do {
                let given = try setPermissions(openedMode, current: writableMode ?? openedMode)
                made = false
                if SetIDBits.areMissing(openedMode, in: given) { report.noteSetIDBitsNotKept(reportPath) }
            } catch {
                report.failToGiveBack(
                    reportPath, openedMode, after: "added its owner's rwx to work in it", "\(error)",
                    fullPath: settings.destinationPath(of: path),
                    subject: parent == nil ? "the destination root's mode" : "its mode")
            }
        }
    }

    /// Gives the destination directory the source directory's mode and mtime once its content
    /// is done, then flushes it when `durable` and anything in it changed (one fsync per
    /// directory, after all of its renames). Returns whether the metadata had to change. A mode
    /// whose set-ID bits this process may not set is given without them (`SetIDBits`), and
    /// the directory counted in `report` as not keeping them.
    func finish(modified: Bool, durable: Bool, report: inout MirrorReport) throws(MirrorFailure) -> Bool {
        let wanted = sourceStatus
        try WalkWatch.begin(.settingAttributes, nil, in: self)
        let current = try MirrorFailure.attempt("fstat") { try destination.descriptor.status() }
        var changed = false
        let permissions = wanted.permissionsOfCopy(ownedBy: current.userID, group: current.groupID)
        let given = try MirrorFailure.attempt("fchmod") { try setPermissions(permissions, current: current.permissions) }
        if given != current.permissions { changed = true }
        if SetIDBits.areMissing(permissions, in: given) { report.noteSetIDBitsNotKept(reportPath) }
        if current.modificationTime != wanted.modificationTime {
            try MirrorFailure.attempt("futimens") {
                try destination.descriptor.setTimes(access: nil, modification: wanted.modificationTime)
            }
            changed = true
        }
        if durable && (modified || changed) {
            try WalkWatch.begin(.flushing, nil)
            try MirrorFailure.attempt("fsync") { try destination.descriptor.fsync() }
        }
        return changed
    }

    /// Gives the destination directory, whose mode is `current`, the mode `permissions`, or
    /// that less its set-ID bits where the process may not set them (`SetIDBits`); returns
    /// the mode it has now.
    private func setPermissions(_ permissions: FilePermissions, current: FilePermissions) throws(Errno) -> FilePermissions {
        try SetIDBits.set(permissions, on: destination.descriptor, current: current, group: destinationGroup, device: destinationDevice)
    }
}

extension FileStatus {
    /// The mode a copy of this source entry is to have, the copy being owned by `owner` and
    /// `group`: the source's permission bits, less, for a regular file, set-user-ID when the
    /// copy's owner is not the source's and set-group-ID when its group is not the source's.
    /// Owner and group are not mirrored: a root run's copy of a user's `chmod 6755` file would
    /// otherwise be a set-user-ID-root program, made by whoever may write the source (and a
    /// run as `weavedi`, one running as `weavedi`). A directory keeps its bits: set-group-ID
    /// there only has new entries inherit its group (in the destination, the copy's own), and
    /// Linux ignores set-user-ID on a directory.
    ///
    /// Where this process may not set set-ID bits at all (systemd's `RestrictSUIDSGID=yes`),
    /// a copy gets this mode without them, and the run reports it (`SetIDBits`).
    ///
    /// The one rule for the mode a run gives a copy (`FileCopier.prepare`), fixes
    /// (`FileCopier.fixAttributes`, `MirrorDirectory.finish`) and compares with
    /// (`DirectoryScanner`): any other would have every run fix the mode again.
    func permissionsOfCopy(ownedBy owner: UInt32, group: UInt32) -> FilePermissions {
        var permissions = self.permissions
        guard kind == .regular else { return permissions }
        if owner != userID { permissions.remove(.setUserID) }
        if group != groupID { permissions.remove(.setGroupID) }
        return permissions
    }

    /// Whether the mode has set-user-ID or set-group-ID, which a copy may not keep
    /// (`permissionsOfCopy`).
    var hasSetIDBits: Bool {
        !permissions.isDisjoint(with: [.setUserID, .setGroupID])
    }

    /// The mode that gives the owner `rwx` (this one plus 0700), for a run that must list,
    /// enter and change a directory whose mode denies it that; nil when the mode allows it
    /// already, or when the run is root (`isPrivileged`), which no mode stops.
    func modeOpenToItsOwner(isPrivileged: Bool) -> FilePermissions? {
        let owner: UInt32 = 0o700
        return isPrivileged || permissions.rawValue & owner == owner ? nil : FilePermissions(rawValue: mode | owner)
    }
}

/// What every work item of a run shares: the settings, the container workers come from, and
/// the identities of both roots.
struct MirrorContext: Sendable {
    let settings: MirrorSettings
    let container: WeaveDI.Container
    let sourceRoot: FileIdentity
    let destinationRoot: FileIdentity
    /// Whether the engine runs as root, which may open any file with `O_NOATIME` and write in
    /// directories whose mode denies it.
    let isPrivileged: Bool
    /// The run's counts and issues so far, which work items add to as they go (each file of a
    /// batch, each entry deleted): a run given up on reports them.
    let tally: MirrorTally

    init(settings: MirrorSettings, container: WeaveDI.Container, roots: borrowing MirrorRoots, tally: MirrorTally) {
        self.settings = settings
        self.container = container
        self.tally = tally
        sourceRoot = roots.sourceIdentity
        destinationRoot = roots.destinationIdentity
        isPrivileged = geteuid() == 0
    }

    /// Whether reading a file with this owner may use `O_NOATIME` (owner or privileged).
    func mayAvoidAccessTime(owner: UInt32) -> Bool {
        isPrivileged || owner == geteuid()
    }
}
