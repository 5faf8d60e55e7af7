import Glibc
import WeaveDI
import WeaveDIPosix

/// Copies files and links into the destination atomically: a worker of `MirrorEngine`.
///
/// The engine takes a fresh instance for each task of a run (`container.makeFresh`, or
/// `@Factory var copier: FileCopier` in your own workers), so register it as a transient:
///
/// ```swift
/// container.register(FileCopier.self, scope: .transient) { FileCopier() }
/// ```
///
/// A copy goes to `.weavedi-tmp.<name>.<random>` in the destination directory (created with
/// `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600), gets the source's content, mode (less set-user-ID
/// and set-group-ID where the copy's owner or group is not the source's: `permissionsOfCopy`)
/// and mtime, is
/// flushed (when durable: by `publish` with `fsync`, or by the engine's `syncfs` for a whole
/// batch before `publish`) and is renamed over the final name: the final name holds the old
/// version or the whole new one, never a torn file. A source that changes during the copy
/// (size, mtime or ctime moved, or a short read) is not published.
///
/// `Sendable`, as everything the container hands out: the buffer is used under its lock (taken
/// once per chunk, and never contended when, as the engine does, one task uses the instance).
public final class FileCopier: Sendable {
    /// The read/write buffer for file systems without `copy_file_range`, made on first need.
    private let buffer = Locked<UnsafeMutableRawBufferPointer?>(nil)
    /// Bytes moved by one `copy_file_range` call, between two cancellation checks.
    private static let chunk = 8 << 20
    /// The size of the fallback buffer.
    private static let bufferSize = 1 << 20

    /// A copier; the engine makes one per task.
    public init() {}

    deinit {
        buffer.withLock { $0?.deallocate() }
    }

    /// The first half of a copy of the regular file `name` of `source` to `name` in
    /// `destination`: the content, mode and mtime in a temporary file, checked against changes of
    /// the source, with its writeback started when `durable`; not visible yet. `noAccessTime`
    /// opens the source with `O_NOATIME` (allowed to its owner or a privileged process).
    /// `hasEarlierCopy`: whether `destination` has a regular file `name`, which stays should
    /// the source change during the copy (`MirrorFailure.changedWhileCopying(copyKept:)`).
    func prepare(
        _ name: String,
        from source: FileDescriptor,
        to destination: FileDescriptor,
        durable: Bool,
        noAccessTime: Bool,
        hasEarlierCopy: Bool
    ) throws(MirrorFailure) -> PreparedCopy {
        try WalkWatch.begin(.openingFile, name)
        // Not waiting on a fifo swapped in after the listing; only a regular file is read.
        let input = try RegularFileOpening.open(name, in: source, side: .source, noAccessTime: noAccessTime)
        let before = input.status

        let temporary = MirrorTemporaryName.make(for: name)
        try WalkWatch.begin(.creatingCopy, name)
        let output = try MirrorFailure.attempt("create (temporary copy)") {
            try destination.open(
                at: temporary, .writeOnly, options: [.create, .exclusiveCreate, .noFollow], permissions: 0o600)
        }
        let copy = PreparedCopy(name: name, temporary: temporary, file: output)
        do throws(MirrorFailure) {
            let copied = try copyContent(from: input.file.descriptor, to: copy.file.descriptor, size: before.size, name: name)
            let after = try MirrorFailure.attempt("fstat") { try input.file.descriptor.status() }
            if copied != before.size || after.size != before.size
                || after.modificationTime != before.modificationTime || after.changeTime != before.changeTime
            {
                throw MirrorFailure.changedWhileCopying(copyKept: hasEarlierCopy)
            }
            try WalkWatch.begin(.settingAttributes, name)
            if before.hasSetIDBits {
                // Kept only where the copy has the source's owner or group: see whose it is;
                // and where the process may set them (`SetIDBits`).
                let made = try MirrorFailure.attempt("fstat") { try copy.file.descriptor.status() }
                let permissions = before.permissionsOfCopy(ownedBy: made.userID, group: made.groupID)
                let given = try MirrorFailure.attempt("fchmod") {
                    try SetIDBits.set(
                        permissions, on: copy.file.descriptor, current: made.permissions, group: made.groupID, device: made.device)
                }
                copy.setIDBitsNotKept = SetIDBits.areMissing(permissions, in: given)
            } else {
                try MirrorFailure.attempt("fchmod") { try copy.file.descriptor.setPermissions(before.permissions) }
            }
            try MirrorFailure.attempt("futimens") {
                try copy.file.descriptor.setTimes(access: nil, modification: before.modificationTime)
            }
            if durable {
                try WalkWatch.begin(.flushing, name, bytes: copied)
                try MirrorFailure.attempt("sync_file_range") { try copy.file.descriptor.startWriteback() }
            }
            copy.bytes = copied
            return copy
        } catch {
            discard(copy, in: destination)
            throw error
        }
    }

    /// The second half: flushes the temporary file (`fsync`, when `durable`; pass false when the
    /// copy was already made durable another way) and renames it over the final name; returns
    /// the bytes copied. A failure removes the temporary file.
    func publish(_ copy: PreparedCopy, in destination: FileDescriptor, durable: Bool) throws(MirrorFailure) -> Int64 {
        do throws(MirrorFailure) {
            if durable {
                try WalkWatch.begin(.flushing, copy.name, bytes: copy.bytes)
                try MirrorFailure.attempt("fsync") { try copy.file.descriptor.fsync() }
            }
            // Also where a worker whose run was given up on (`WalkWatch`) stops: a copy is
            // renamed into place only by a run that still waits for it.
            try WalkWatch.begin(.renaming, copy.name)
            try MirrorFailure.attempt("rename") { try destination.rename(at: copy.temporary, to: copy.name) }
            return copy.bytes
        } catch {
            discard(copy, in: destination)
            throw error
        }
    }

    /// Removes a prepared copy that will not be published.
    func discard(_ copy: PreparedCopy, in destination: FileDescriptor) {
        try? destination.unlink(at: copy.temporary)
    }

    /// The first half of making `name` in `destination` a symbolic link to `target` with
    /// modification time `time`: the link under a temporary name next to `name`, not visible
    /// yet; returns that name. `publishLink` renames it over what is there.
    func prepareLink(_ name: String, target: String, modificationTime time: TimeSpec, in destination: FileDescriptor)
        throws(MirrorFailure) -> String
    {
        let temporary = MirrorTemporaryName.make(for: name)
        try WalkWatch.begin(.creatingCopy, name)
        try MirrorFailure.attempt("symlink (temporary link)") {
            try destination.createSymbolicLink(at: temporary, pointingTo: target)
        }
        do throws(MirrorFailure) {
            try MirrorFailure.attempt("utimensat") {
                try destination.setTimes(at: temporary, access: nil, modification: time, followSymlinks: false)
            }
            return temporary
        } catch {
            try? destination.unlink(at: temporary)
            throw error
        }
    }

    /// The second half: renames the temporary link over `name` (in a durable run, once the
    /// batch has put it on stable storage: see `FileBatch.run`).
    func publishLink(_ name: String, temporary: String, in destination: FileDescriptor) throws(MirrorFailure) {
        do throws(MirrorFailure) {
            try WalkWatch.begin(.renaming, name)
            try MirrorFailure.attempt("rename") { try destination.rename(at: temporary, to: name) }
        } catch {
            try? destination.unlink(at: temporary)
            throw error
        }
    }

    /// Gives the destination file `name` the mode (`permissionsOfCopy`) and mtime of `wanted`;
    /// returns whether anything had to change. A mode whose set-ID bits this process may not
    /// set is given without them (`SetIDBits`), and `setIDBitsNotKept` set then (also when the
    /// file had that mode already). The file is opened to read (without following a link, nor
    /// blocking on a fifo swapped in) and changed with `fchmod` and `futimens`;
    /// one whose mode denies its owner `r` (mode 000, say, the run not being root), where that
    /// open fails, through a handle that needs no permission (`O_PATH`) and `/proc/self/fd`,
    /// where it failed on every run before. Either way nothing but a regular file is changed.
    ///
    /// When `durable`, the change is flushed: with `fsync` of the file (through the handle,
    /// opened again before its new mode may deny that), or, should it not open, as for links
    /// (`BatchFlush.flush`: `syncfs` of the file system, then `fsync` of the directory).
    func fixAttributes(
        _ name: String, to wanted: FileStatus, in destination: FileDescriptor, durable: Bool, setIDBitsNotKept: inout Bool
    ) throws(MirrorFailure) -> Bool {
        try WalkWatch.begin(.settingAttributes, name)
        let opened = Result { () throws(Errno) -> FileDescriptor in
            try destination.open(at: name, .readOnly, options: [.noFollow, .nonBlocking]).release()
        }
        switch opened {
        case let .success(file):
            defer { try? file.close() }
            return try fixAttributes(
                name, of: file, pathOnly: false, to: wanted, in: destination, durable: durable, setIDBitsNotKept: &setIDBitsNotKept)
        case .failure(.permissionDenied):
            break  // opened as its owner may, below
        case .failure(.noSuchFileOrDirectory):
            throw .vanishedFromDestination
        case let .failure(error):
            throw .system("open", error)
        }
        let handle = try MirrorFailure.attempt("open (O_PATH)", vanishingFrom: .destination) {
            try destination.open(at: name, .pathOnly, options: [.noFollow])
        }
        return try fixAttributes(
            name, of: handle.descriptor, pathOnly: true, to: wanted, in: destination, durable: durable,
            setIDBitsNotKept: &setIDBitsNotKept)
    }

    /// `fixAttributes` on `name`'s open `file`: a descriptor opened to read, or a `pathOnly` handle.
    private func fixAttributes(
        _ name: String, of file: FileDescriptor, pathOnly: Bool, to wanted: FileStatus, in destination: FileDescriptor, durable: Bool,
        setIDBitsNotKept: inout Bool
    ) throws(MirrorFailure) -> Bool {
        let current = try MirrorFailure.attempt("fstat") { try file.status() }
        guard current.kind == .regular else { throw .replaced(current.kind) }
        // Changed in place only when it is the destination's own: not a file bind-mounted
        // there, nor one with other hard links (the scan has such a one copied afresh).
        if try MirrorFailure.attempt("statx", { try file.isMountRoot() }) { throw .mountPoint }
        if current.linkCount > 1 { throw .replaced(.regular) }
        let permissions = wanted.permissionsOfCopy(ownedBy: current.userID, group: current.groupID)
        var modeChanges = current.permissions != SetIDBits.attainable(permissions, on: current.device, group: current.groupID)
        let timeChanges = current.modificationTime != wanted.modificationTime
        guard modeChanges || timeChanges else {
            setIDBitsNotKept = SetIDBits.areMissing(permissions, in: current.permissions)
            return false
        }
        // A handle's file, opened for its flush before its mode changes; nil when it cannot be.
        let flushable = pathOnly && durable ? (try? file.reopenPathHandle(.readOnly, options: [.nonBlocking]))?.release() : nil
        defer { try? flushable?.close() }
        var given = current.permissions
        if modeChanges {
            given = try MirrorFailure.attempt(pathOnly ? "chmod (/proc/self/fd)" : "fchmod") {
                try SetIDBits.set(
                    permissions, on: file, pathOnly: pathOnly, current: current.permissions, group: current.groupID,
                    device: current.device)
            }
            // The set-ID bits refused, the copy may have had the mode it gets already.
            modeChanges = given != current.permissions
        }
        setIDBitsNotKept = SetIDBits.areMissing(permissions, in: given)
        guard modeChanges || timeChanges else { return false }
        if timeChanges {
            if pathOnly {
                try MirrorFailure.attempt("utimensat (/proc/self/fd)") {
                    try file.setTimesOfPathHandle(access: nil, modification: wanted.modificationTime)
                }
            } else {
                try MirrorFailure.attempt("futimens") { try file.setTimes(access: nil, modification: wanted.modificationTime) }
            }
        }
        if durable {
            try WalkWatch.begin(.flushing, name)
            if !pathOnly {
                try MirrorFailure.attempt("fsync") { try file.fsync() }
            } else if let flushable {
                try MirrorFailure.attempt("fsync") { try flushable.fsync() }
            } else {
                try BatchFlush.flush(destination)
            }
        }
        return true
    }

    /// Sets the mtime of the link `name` itself (never its target).
    func fixLinkTime(_ name: String, to time: TimeSpec, in destination: FileDescriptor) throws(MirrorFailure) {
        try WalkWatch.begin(.settingAttributes, name)
        try MirrorFailure.attempt("utimensat", vanishingFrom: .destination) {
            try destination.setTimes(at: name, access: nil, modification: time, followSymlinks: false)
        }
    }

    /// Copies `size` bytes from the start of `input`; returns how many there were (fewer means
    /// the file shrank). Checks for cancellation between chunks.
    private func copyContent(from input: FileDescriptor, to output: FileDescriptor, size: Int64, name: String)
        throws(MirrorFailure) -> Int64
    {
        var copied: Int64 = 0
        var kernelCopy = true
        while copied < size {
            if Task.isCancelled { throw .cancelled }
            let wanted = Int(min(size - copied, Int64(FileCopier.chunk)))
            try WalkWatch.begin(.copying, name, bytes: Int64(wanted))
            var moved = 0
            if kernelCopy {
                do {
                    moved = try input.copyRange(to: output, count: wanted)
                } catch .crossDeviceLink, .invalidArgument, .notSupported, .notImplemented {
                    kernelCopy = false
                    continue
                } catch {
                    throw .system("copy_file_range", error)
                }
            } else {
                moved = try copyThroughBuffer(from: input, to: output, count: wanted)
            }
            if moved == 0 { break }
            copied += Int64(moved)
        }
        return copied
    }

    /// Reads up to `count` bytes into the buffer and writes them all; returns 0 at end of file.
    private func copyThroughBuffer(from input: FileDescriptor, to output: FileDescriptor, count: Int)
        throws(MirrorFailure) -> Int
    {
        try self.buffer.withLock { stored throws(MirrorFailure) -> Int in
            let buffer = stored ?? UnsafeMutableRawBufferPointer.allocate(byteCount: FileCopier.bufferSize, alignment: 16)
            stored = buffer
            let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(count, buffer.count)])
            let read = try MirrorFailure.attempt("read") { try input.read(into: slice) }
            if read > 0 {
                try MirrorFailure.attempt("write") {
                    try output.writeAll(UnsafeRawBufferPointer(rebasing: slice[0..<read]))
                }
            }
            return read
        }
    }
}

/// A copy in its temporary file, written and checked, waiting to be flushed and renamed. Its
/// descriptor closes when the value goes away.
final class PreparedCopy {
    /// The final name.
    let name: String
    /// The temporary name in the same directory.
    let temporary: String
    /// The temporary file, open for writing.
    let file: OwnedDescriptor
    /// The bytes copied.
    var bytes: Int64 = 0
    /// Whether the copy did not get the source's set-ID bits, which the process may not set
    /// (`SetIDBits`).
    var setIDBitsNotKept = false

    init(name: String, temporary: String, file: consuming OwnedDescriptor) {
        self.name = name
        self.temporary = temporary
        self.file = file
    }
}
