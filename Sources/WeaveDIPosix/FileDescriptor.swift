import Glibc

/// A non-owning, typed handle for a POSIX file descriptor.
///
/// `FileDescriptor` is a plain value: copying it does not duplicate the
/// descriptor and dropping it does not close it. Functions that create a
/// descriptor return an `OwnedDescriptor`, which closes on deinit; borrow its
/// `descriptor` property to perform operations.
public struct FileDescriptor: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The raw C file descriptor number.
    public let rawValue: Int32

    /// Wraps a raw descriptor number without taking ownership of it.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// Standard input, descriptor 0.
    public static var standardInput: FileDescriptor { FileDescriptor(rawValue: STDIN_FILENO) }
    /// Standard output, descriptor 1.
    public static var standardOutput: FileDescriptor { FileDescriptor(rawValue: STDOUT_FILENO) }
    /// Standard error, descriptor 2.
    public static var standardError: FileDescriptor { FileDescriptor(rawValue: STDERR_FILENO) }
    /// The `AT_FDCWD` marker: `*at` operations on it resolve paths against the working directory.
    public static var currentWorkingDirectory: FileDescriptor { FileDescriptor(rawValue: AT_FDCWD) }

    /// A textual form such as `FileDescriptor(5)`.
    public var description: String { "FileDescriptor(\(rawValue))" }

    /// How a file is opened: for reading, writing or both.
    public struct AccessMode: RawRepresentable, Hashable, Sendable {
        /// The raw `O_RDONLY`/`O_WRONLY`/`O_RDWR` value.
        public let rawValue: Int32
        /// Wraps a raw access mode value.
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// Open for reading only (`O_RDONLY`).
        public static var readOnly: AccessMode { AccessMode(rawValue: O_RDONLY) }
        /// Open for writing only (`O_WRONLY`).
        public static var writeOnly: AccessMode { AccessMode(rawValue: O_WRONLY) }
        /// Open for reading and writing (`O_RDWR`).
        public static var readWrite: AccessMode { AccessMode(rawValue: O_RDWR) }
        /// Open a handle on the file itself, neither for reading nor writing (`O_PATH`): it
        /// needs no permission on the file, and serves for `fstat`, as the directory of `*at`
        /// calls, and for `setPermissionsOfPathHandle`; `read`, `fchmod` and the like fail
        /// with `EBADF`.
        public static var pathOnly: AccessMode { AccessMode(rawValue: LinuxSymbols.openPathOnly) }
    }

    /// Flags for `open`; `O_CLOEXEC` is controlled separately and on by default.
    public struct OpenOptions: OptionSet, Hashable, Sendable {
        /// The raw `O_*` flag bits.
        public let rawValue: Int32
        /// Wraps raw `O_*` flag bits.
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// Create the file if it does not exist (`O_CREAT`).
        public static var create: OpenOptions { OpenOptions(rawValue: O_CREAT) }
        /// Fail with `EEXIST` if the file exists; use with `create` (`O_EXCL`).
        public static var exclusiveCreate: OpenOptions { OpenOptions(rawValue: O_EXCL) }
        /// Truncate an existing regular file to zero length (`O_TRUNC`).
        public static var truncate: OpenOptions { OpenOptions(rawValue: O_TRUNC) }
        /// Append every write at the end of the file (`O_APPEND`).
        public static var append: OpenOptions { OpenOptions(rawValue: O_APPEND) }
        /// Fail with `ELOOP` if the last path component is a symbolic link (`O_NOFOLLOW`).
        public static var noFollow: OpenOptions { OpenOptions(rawValue: O_NOFOLLOW) }
        /// Fail with `ENOTDIR` unless the path is a directory (`O_DIRECTORY`).
        public static var directory: OpenOptions { OpenOptions(rawValue: O_DIRECTORY) }
        /// Open in non-blocking mode (`O_NONBLOCK`).
        public static var nonBlocking: OpenOptions { OpenOptions(rawValue: O_NONBLOCK) }
        /// Do not make a terminal the controlling terminal (`O_NOCTTY`).
        public static var noControllingTerminal: OpenOptions { OpenOptions(rawValue: O_NOCTTY) }
        /// Do not update the access time on reads (`O_NOATIME`); only the file's owner or a
        /// process with `CAP_FOWNER` may use it, others get `EPERM`.
        public static var noAccessTime: OpenOptions { OpenOptions(rawValue: LinuxSymbols.openNoAccessTime) }
    }

    /// Opens `path` (`open(2)`), adding `O_CLOEXEC` unless `closeOnExec` is false.
    public static func open(
        _ path: String,
        _ mode: AccessMode,
        options: OpenOptions = [],
        permissions: FilePermissions = .defaultFile,
        closeOnExec: Bool = true
    ) throws(Errno) -> OwnedDescriptor {
        try FileDescriptor.currentWorkingDirectory.open(
            at: path, mode, options: options, permissions: permissions, closeOnExec: closeOnExec)
    }

    /// Reads up to `buffer.count` bytes (`read(2)`); returns 0 at end of file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try valueOrErrno { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Reads up to `count` bytes in one `read(2)` call; an empty result means end of file.
    public func read(upToCount count: Int) throws(Errno) -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: Swift.max(count, 0)) { buffer, initialized throws(Errno) in
            initialized = try read(into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// Reads at `offset` without moving the file position (`pread(2)`).
    public func read(
        fromAbsoluteOffset offset: Int64,
        into buffer: UnsafeMutableRawBufferPointer
    ) throws(Errno) -> Int {
        try valueOrErrno { Glibc.pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Reads until end of file, blocking as needed; throws `EAGAIN` on an empty non-blocking descriptor.
    public func readToEnd(chunkSize: Int = 16 * 1024) throws(Errno) -> [UInt8] {
        var result: [UInt8] = []
        while true {
            let chunk = try read(upToCount: chunkSize)
            if chunk.isEmpty { return result }
            result.append(contentsOf: chunk)
        }
    }

    /// Writes some of `buffer` (`write(2)`), returning how many bytes were written.
    public func write(_ buffer: UnsafeRawBufferPointer) throws(Errno) -> Int {
        try valueOrErrno { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Writes all of `buffer`, looping over partial writes.
    public func writeAll(_ buffer: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < buffer.count {
            offset += try write(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
        }
    }

    /// Writes all of `bytes`, looping over partial writes.
    public func writeAll(_ bytes: some Collection<UInt8>) throws(Errno) {
        try Array(bytes).withBytesTyped { (buffer) throws(Errno) in try writeAll(buffer) }
    }

    /// Flushes file data and metadata to storage (`fsync(2)`); works on directories too.
    public func fsync() throws(Errno) {
        try nothingOrErrno { Glibc.fsync(rawValue) }
    }

    /// Starts writing the file's dirty pages to storage without waiting for them
    /// (`sync_file_range(2)` with `SYNC_FILE_RANGE_WRITE` over the whole file).
    ///
    /// Not a durability guarantee (metadata and the disk cache are not flushed): call it on
    /// several files, then `fsync` each, and the writes and the journal commits overlap.
    public func startWriteback() throws(Errno) {
        try nothingOrErrno { LinuxSymbols.syncFileRange(rawValue, 0, 0, LinuxSymbols.syncFileRangeWrite) }
    }

    /// Flushes file data and the metadata needed to read it (`fdatasync(2)`).
    public func fdatasync() throws(Errno) {
        try nothingOrErrno { Glibc.fdatasync(rawValue) }
    }

    /// Closes the descriptor (`close(2)`); never retried, since Linux releases it even on `EINTR`.
    public func close() throws(Errno) {
        try nothingOrErrno(retryOnInterrupt: false) { Glibc.close(rawValue) }
    }

    /// Turns `O_NONBLOCK` on or off with `fcntl(F_SETFL)`.
    public func setNonBlocking(_ nonBlocking: Bool = true) throws(Errno) {
        let flags = try valueOrErrno { fcntl(rawValue, F_GETFL) }
        let updated = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if updated != flags {
            try nothingOrErrno { fcntl(rawValue, F_SETFL, updated) }
        }
    }

    /// Whether `O_NONBLOCK` is set (`fcntl(F_GETFL)`).
    public func isNonBlocking() throws(Errno) -> Bool {
        try valueOrErrno { fcntl(rawValue, F_GETFL) } & O_NONBLOCK != 0
    }

    /// Turns `FD_CLOEXEC` on or off with `fcntl(F_SETFD)`.
    public func setCloseOnExec(_ closeOnExec: Bool = true) throws(Errno) {
        let flags = try valueOrErrno { fcntl(rawValue, F_GETFD) }
        let updated = closeOnExec ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC
        try nothingOrErrno { fcntl(rawValue, F_SETFD, updated) }
    }

    /// Whether `FD_CLOEXEC` is set (`fcntl(F_GETFD)`).
    public func isCloseOnExec() throws(Errno) -> Bool {
        try valueOrErrno { fcntl(rawValue, F_GETFD) } & FD_CLOEXEC != 0
    }

    /// Duplicates the descriptor onto the lowest free number (`F_DUPFD_CLOEXEC` or `dup(2)`).
    public func duplicate(closeOnExec: Bool = true) throws(Errno) -> OwnedDescriptor {
        let raw = try DescriptorReserve.admit(valueOrErrno {
            closeOnExec ? fcntl(rawValue, F_DUPFD_CLOEXEC, 0) : Glibc.dup(rawValue)
        })
        return OwnedDescriptor(taking: FileDescriptor(rawValue: raw))
    }

    /// Moves the file position (`lseek(2)`) and returns the new absolute offset.
    public func seek(offset: Int64, from whence: Int32 = SEEK_SET) throws(Errno) -> Int64 {
        Int64(try valueOrErrno { lseek(rawValue, off_t(offset), whence) })
    }

    /// Truncates or extends the file to `size` bytes (`ftruncate(2)`).
    public func resize(to size: Int64) throws(Errno) {
        try nothingOrErrno { ftruncate(rawValue, off_t(size)) }
    }

    /// Copies up to `count` bytes from this file's position to `destination`'s position inside
    /// the kernel (`copy_file_range(2)`), advancing both; returns the bytes copied, 0 at end of file.
    ///
    /// Throws `EXDEV`, `EINVAL`, `EOPNOTSUPP` or `ENOSYS` where the kernel or file systems cannot
    /// do it (across some file systems, special files); fall back to `read`/`write` then.
    public func copyRange(to destination: FileDescriptor, count: Int) throws(Errno) -> Int {
        try valueOrErrno { LinuxSymbols.copyFileRange(rawValue, nil, destination.rawValue, nil, count, 0) }
    }
}
