import Glibc
import WeaveDI
import WeaveDIPosix

/// Computes SHA-256 digests of files, for mirrors with `compare: checksum`: a worker of
/// `MirrorEngine`, which takes a fresh instance for each task that compares contents.
///
/// ```swift
/// container.register(FileHasher.self, scope: .transient) { FileHasher() }
/// ```
///
/// `Sendable`, as everything the container hands out: the buffer is used under its lock (taken
/// once per file, and never contended when, as the engine does, one task uses the instance).
public final class FileHasher: Sendable {
    /// The read buffer, made on first use and kept for the instance's files.
    private let buffer = Locked<UnsafeMutableRawBufferPointer?>(nil)
    static let bufferSize = 256 << 10

    /// A hasher; the engine makes one per task.
    public init() {}

    deinit {
        buffer.withLock { $0?.deallocate() }
    }

    /// The SHA-256 digest of the regular file at `path` (symbolic links followed), as 64 hex
    /// digits. Anything else is refused at once, never read: a directory with `EISDIR`, a fifo
    /// (whose opening would wait for a writer, for ever) or a device with `EINVAL`, a socket
    /// with `ENXIO`.
    public func hexDigest(ofFileAt path: String) throws(Errno) -> String {
        let file = try FileDescriptor.open(path, .readOnly, options: [.nonBlocking])
        let kind = try file.descriptor.status().kind
        guard kind == .regular else { throw kind == .directory ? .isDirectory : .invalidArgument }
        try file.descriptor.setNonBlocking(false)
        do {
            return SHA256.hex(try digest(of: file.descriptor))
        } catch .system(_, let errno) {
            throw errno
        } catch {
            throw Errno(rawValue: ECANCELED)  // the only other failure reading an open file
        }
    }

    /// The digest of the regular file `name` in `directory`, of the tree `side`, opened without
    /// following a link nor waiting on what is no regular file (`RegularFileOpening`).
    func digest(of name: String, in directory: FileDescriptor, side: WalkStepKind.Side, noAccessTime: Bool)
        throws(MirrorFailure) -> [UInt8]
    {
        let opened = try RegularFileOpening.open(name, in: directory, side: side, noAccessTime: noAccessTime)
        return try digest(of: opened.file.descriptor)
    }

    /// The digest of the run's own copy `name` whose mode denies its owner `r` (the copy of a
    /// source file the run reads as "others"), opened as its owner may: through a handle that
    /// needs no permission (`O_PATH`), the owner's `r` added for as long as it takes to open it
    /// through `/proc/self/fd`, then its mode given back (its ctime changes). Only a regular
    /// file of the run's user, with no other hard link and not mounted there, is opened so;
    /// any other stays `open: Permission denied`.
    func digest(ofOwnUnreadable name: String, in directory: FileDescriptor) throws(MirrorFailure) -> [UInt8] {
        let handle = try MirrorFailure.opening(name, in: directory, side: .destination) {
            try directory.open(at: name, .pathOnly, options: [.noFollow])
        }
        let status = try MirrorFailure.attempt("fstat") { try handle.descriptor.status() }
        guard status.kind == .regular else { throw .replaced(status.kind) }
        guard status.userID == CurrentProcess.effectiveUserID, status.linkCount == 1,
            try !MirrorFailure.attempt("statx", { try handle.descriptor.isMountRoot() })
        else { throw .system("open", .permissionDenied) }
        let readable = FilePermissions(rawValue: status.permissions.rawValue | 0o400)
        // Less a set-user-ID bit the process may not set (`SetIDBits`), for good: a copy keeps
        // it only where the process may set it.
        let file = handle.descriptor
        func setMode(_ mode: FilePermissions, _ current: FilePermissions) throws(Errno) -> FilePermissions {
            try SetIDBits.set(mode, on: file, pathOnly: true, current: current, group: status.groupID, device: status.device)
        }
        let madeReadable = try MirrorFailure.attempt("chmod (/proc/self/fd)") { try setMode(readable, status.permissions) }
        // Not waiting on a write lease of another process; the reads then wait as usual.
        let opened = Result { () throws(Errno) -> FileDescriptor in
            let file = try handle.descriptor.reopenPathHandle(.readOnly, options: [.nonBlocking])
            try file.descriptor.setNonBlocking(false)
            return file.release()
        }
        // A mode not given back needs no report of its own: the only caller (a checksum
        // comparison, `FileBatch`) goes on to give this copy the source's mode
        // (`FileCopier.fixAttributes`, which finds the owner's `r` still there) or to replace it
        // with a fresh copy, and a failure of either is the item's error.
        _ = try? setMode(status.permissions, madeReadable)
        switch opened {
        case let .success(file):
            defer { try? file.close() }
            return try digest(of: file)
        case let .failure(error):
            throw .system("open (/proc/self/fd)", error)
        }
    }

    /// Reads `file` from its current position to the end; checks for cancellation per buffer.
    private func digest(of file: FileDescriptor) throws(MirrorFailure) -> [UInt8] {
        try self.buffer.withLock { stored throws(MirrorFailure) -> [UInt8] in
            let buffer = stored ?? UnsafeMutableRawBufferPointer.allocate(byteCount: FileHasher.bufferSize, alignment: 16)
            stored = buffer
            var hash = SHA256()
            while true {
                if Task.isCancelled { throw .cancelled }
                WalkWatch.pulse()  // each buffer starts the step's limit again
                let count = try MirrorFailure.attempt("read") { try file.read(into: buffer) }
                if count == 0 { return hash.finalize() }
                hash.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            }
        }
    }
}
