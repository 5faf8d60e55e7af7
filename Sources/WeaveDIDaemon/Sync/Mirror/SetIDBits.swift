import Synchronization
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
enum SetIDBits {
    /// The file systems (`st_dev`) on which setting a set-ID bit was refused.
    private static let refusedDevices = Mutex<Set<UInt64>>([])

    /// Both bits.
    static let both: FilePermissions = [.setUserID, .setGroupID]

    /// Whether setting set-ID bits was refused to this process on `device`.
    static func areRefused(on device: UInt64) -> Bool {
        refusedDevices.withLock { $0.contains(device) }
    }

    /// The mode a copy on `device` can have when it should have `wanted`: `wanted`, less its
    /// set-ID bits where they were refused there.
    static func attainable(_ wanted: FilePermissions, on device: UInt64) -> FilePermissions {
        guard !wanted.isDisjoint(with: both), areRefused(on: device) else { return wanted }
        return wanted.subtracting(both)
    }

    /// Whether a copy whose mode is `actual` lacks set-ID bits of `wanted`.
    static func areMissing(_ wanted: FilePermissions, in actual: FilePermissions) -> Bool {
        !wanted.intersection(both).isSubset(of: actual)
    }

    /// Gives a file whose mode is `current`, on `device`, the mode `wanted` with `set` (an
    /// `fchmod` or the like); returns the mode it has now. Where that fails with `EPERM`, and
    /// `wanted` has set-ID bits, it is given `wanted` less them, and when that is allowed the
    /// refusal is remembered for `device`; when it is not either (a file not the process's to
    /// change), the first error is thrown. Where the refusal is known already, only the mode
    /// without them is tried. Nothing is called when `current` is the mode to give.
    static func set(
        _ wanted: FilePermissions, current: FilePermissions, on device: UInt64,
        _ set: (FilePermissions) throws(Errno) -> Void
    ) throws(Errno) -> FilePermissions {
        let first = attainable(wanted, on: device)
        guard first != current else { return current }
        do {
            try set(first)
            return first
        } catch .notPermitted where !first.isDisjoint(with: both) {
            // Tried even when it is the current mode: only its success shows that the bits
            // were what was refused.
            let without = first.subtracting(both)
            guard (try? set(without)) != nil else { throw .notPermitted }
            refusedDevices.withLock { _ = $0.insert(device) }
            return without
        }
    }
}
