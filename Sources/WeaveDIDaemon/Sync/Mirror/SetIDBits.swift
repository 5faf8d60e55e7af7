import WeaveDI
import WeaveDIPosix

/// Set-user-ID and set-group-ID bits where this process may not set them.
///
/// systemd's `RestrictSUIDSGID=yes`, which the shipped unit sets, makes every `chmod`,
/// `fchmod` and `fchmodat` whose mode has either bit fail with `EPERM`, whoever owns the file.
/// The mirror gives a copy the source's mode (`permissionsOfCopy`), so a source directory made
/// `chmod g+s` (a shared group directory in `/srv`) would fail the copy's whole mode, and the
/// copy would stay as made (0700). Instead, where setting a mode with those bits fails with
/// `EPERM` and the same mode without them is allowed, the copy gets that mode, and the run
/// reports the items it could not give them (`MirrorReport.setIDBitsNotKept`).
///
/// A refusal lasts as long as the process (a seccomp filter cannot be lifted), so it is
/// remembered, per file system (`st_dev`), for the process's lifetime: the next runs compare
/// copies with the mode they can have (`attainable`) and fix nothing again, and a new copy gets
/// it with one call, not a refused one first.
///
/// The kernel also clears set-group-ID without a word: a `chmod` that sets it on a file whose
/// group the process is not in (and that lacks `CAP_FSETID`) succeeds, and the file has the
/// mode without it (a copy made in a set-group-ID destination directory of another group gets
/// that group). So after a mode with set-ID bits is set, it is read back; a bit missing there
/// counts as not kept, like a refused one, and a dropped set-group-ID is remembered for the
/// group (group membership lasts as long as the process too), so that the next runs compare
/// such copies with the mode they can have as well.
enum SetIDBits {
    /// The file systems (`st_dev`) on which setting a set-ID bit was refused.
    private static let refusedDevices = Locked<Set<UInt64>>([])
    /// The groups on whose files the kernel cleared the set-group-ID bit that a mode set here
    /// had (the process is not in them).
    private static let droppedGroups = Locked<Set<UInt32>>([])

    /// Both bits.
    static let both: FilePermissions = [.setUserID, .setGroupID]

    /// Whether setting set-ID bits was refused to this process on `device`.
    static func areRefused(on device: UInt64) -> Bool {
        refusedDevices.withLock { $0.contains(device) }
    }

    /// The mode a copy of `group` on `device` can have when it should have `wanted`: `wanted`,
    /// less its set-ID bits where they were refused there, and less set-group-ID where the
    /// kernel cleared it from a file of `group`.
    static func attainable(_ wanted: FilePermissions, on device: UInt64, group: UInt32) -> FilePermissions {
        guard !wanted.isDisjoint(with: both) else { return wanted }
        if areRefused(on: device) { return wanted.subtracting(both) }
        if wanted.contains(.setGroupID), droppedGroups.withLock({ $0.contains(group) }) { return wanted.subtracting(.setGroupID) }
        return wanted
    }

    /// Whether a copy whose mode is `actual` lacks set-ID bits of `wanted`.
    static func areMissing(_ wanted: FilePermissions, in actual: FilePermissions) -> Bool {
        !wanted.intersection(both).isSubset(of: actual)
    }

    /// Gives a file of `group` whose mode is `current`, on `device`, the mode `wanted` with
    /// `set` (an `fchmod` or the like); returns the mode it has now. Where that fails with
    /// `EPERM`, and `wanted` has set-ID bits, it is given `wanted` less them, and when that is
    /// allowed the refusal is remembered for `device`; when it is not either (a file not the
    /// process's to change), the first error is thrown. Where the refusal is known already,
    /// only the mode without them is tried. A mode with set-ID bits that was set is read back
    /// with `readBack` (an `fstat`): the kernel may have cleared set-group-ID, which is then
    /// remembered for `group`, and the mode read is returned. Nothing is called when `current`
    /// is the mode to give.
    static func set(
        _ wanted: FilePermissions, current: FilePermissions, group: UInt32, on device: UInt64,
        readBack: () throws(Errno) -> FilePermissions, _ set: (FilePermissions) throws(Errno) -> Void
    ) throws(Errno) -> FilePermissions {
        let first = attainable(wanted, on: device, group: group)
        guard first != current else { return current }
        do {
            try set(first)
            guard !first.isDisjoint(with: both) else { return first }
            // Set, but maybe not kept; a failed read leaves the mode as set, as before it.
            guard let kept = try? readBack(), areMissing(first, in: kept) else { return first }
            if first.contains(.setGroupID), !kept.contains(.setGroupID) { droppedGroups.withLock { _ = $0.insert(group) } }
            return kept
        } catch .notPermitted where !first.isDisjoint(with: both) {
            // Tried even when it is the current mode: only its success shows that the bits
            // were what was refused.
            let without = first.subtracting(both)
            guard (try? set(without)) != nil else { throw .notPermitted }
            refusedDevices.withLock { _ = $0.insert(device) }
            return without
        }
    }

    /// `set` on the file of `file`, an open descriptor (`fchmod`) or, when `pathOnly`, an
    /// `O_PATH` handle (`chmod` through `/proc/self/fd`), read back with its `fstat`.
    static func set(
        _ wanted: FilePermissions, on file: FileDescriptor, pathOnly: Bool = false, current: FilePermissions, group: UInt32,
        device: UInt64
    ) throws(Errno) -> FilePermissions {
        try set(wanted, current: current, group: group, on: device, readBack: { () throws(Errno) in try file.status().permissions }) {
            (mode) throws(Errno) in
            if pathOnly { try file.setPermissionsOfPathHandle(mode) } else { try file.setPermissions(mode) }
        }
    }
}
