import WeaveDIPosix

/// Makes the copies of one durable batch durable together, with one `syncfs(2)` on the
/// destination's file system instead of one `fsync` per file.
///
/// Made when the batch starts, before its first write: `handle` is the destination directory
/// opened anew, so its `syncfs` reports any writeback error of the file system since then
/// (Linux 5.8 and later), whichever worker's write it was, and no other batch's `syncfs`
/// consumes that report. After `flush` returns, every copy the batch wrote (content, size,
/// mode, mtime) is on stable storage and may be renamed into place; the renames themselves
/// become durable with the directory's `fsync` when the directory is finished (and with any
/// later `syncfs`).
///
/// Used only where `syncfs` is known to be complete: ext2/3/4, XFS and Btrfs, on Linux 5.8 or
/// later (earlier kernels do not report writeback errors through it). Elsewhere (FUSE, NFS,
/// other file systems) `begin` returns nil and the batch flushes each file with `fsync`.
struct BatchFlush: ~Copyable {
    private let handle: OwnedDescriptor

    /// Whether the running kernel reports writeback errors through `syncfs` (Linux 5.8).
    static let kernelReportsErrors: Bool = {
        guard let release = KernelRelease.current else { return false }
        return release >= KernelRelease(major: 5, minor: 8)
    }()

    /// The file systems whose `syncfs` writes and waits for all data and metadata and flushes
    /// the device cache.
    static let completeFileSystems: Set<FileSystemType> = [.ext4, .xfs, .btrfs]

    private init(handle: consuming OwnedDescriptor) {
        self.handle = handle
    }

    /// A batch flush for the destination directory `directory`, or nil when its copies must be
    /// flushed one by one (old kernel, another file system, or the directory cannot be opened
    /// again).
    static func begin(in directory: FileDescriptor) -> BatchFlush? {
        guard kernelReportsErrors else { return nil }
        guard let handle = try? directory.open(at: ".", .readOnly, options: [.directory, .noFollow]),
            let type = try? handle.descriptor.fileSystemType(), completeFileSystems.contains(type)
        else { return nil }
        return BatchFlush(handle: handle)
    }

    /// Writes out and flushes the file system, then the directory: `syncfs` waits for every
    /// dirty page and inode of the file system and flushes the device cache; the directory's
    /// `fsync` flushes the device cache once more, which ext4 without a journal needs (its
    /// `syncfs` writes the last metadata blocks after its cache flush). `failure`, for tests,
    /// stands for a write error `syncfs` reports.
    func flush(failure: Errno? = nil) throws(MirrorFailure) {
        try BatchFlush.flush(handle.descriptor, failure: failure)
    }

    /// The same flush of `directory` and its file system, also for the links a batch made where
    /// there is no batch flush: a link cannot be opened to be flushed, so the file system is
    /// written out (`syncfs`, whose errors only Linux 5.8 and later report) and the directory
    /// flushed (`fsync`, which on a journaling file system commits the links' inodes with it).
    static func flush(_ directory: FileDescriptor, failure: Errno? = nil) throws(MirrorFailure) {
        try MirrorFailure.attempt("syncfs") {
            if let failure { throw failure }
            try directory.syncFileSystem()
        }
        try MirrorFailure.attempt("fsync") { try directory.fsync() }
    }
}
