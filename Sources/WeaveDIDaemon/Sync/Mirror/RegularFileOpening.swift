import WeaveDIPosix

/// Opening a file of the mirror to read its content: a source file to copy, either side's file
/// to checksum.
///
/// What the listing found a regular file may be anything by the time it is opened: whoever may
/// write the source may swap in a fifo, a device node, a link. It is opened without following a
/// link (`O_NOFOLLOW`) and without waiting (`O_NONBLOCK`: opening a fifo to read waits for a
/// writer, for ever, and the run with it; opening a file another process holds a write lease
/// on waits for the lease's break), its kind is read from the opened descriptor, and only a
/// regular file is kept. `O_NONBLOCK` is then turned off for the reads: a network or FUSE file
/// system may pass it on and answer a read with `EAGAIN`.
enum RegularFileOpening {
    /// An opened regular file and its status as opened.
    struct Opened: ~Copyable {
        let file: OwnedDescriptor
        let status: FileStatus
    }

    /// Opens the regular file `name` in `directory`, of the tree `side`, to read (one gone is
    /// `MirrorFailure.vanishing(from: side)`); with `noAccessTime`, with
    /// `O_NOATIME` where allowed (a file that changed hands since is opened without). What is
    /// no regular file now is `.replaced` by what it is (a link, a socket: `MirrorFailure.opening`;
    /// a fifo, a device, a directory), without waiting on it.
    static func open(_ name: String, in directory: FileDescriptor, side: WalkStepKind.Side, noAccessTime: Bool)
        throws(MirrorFailure) -> Opened
    {
        let options: FileDescriptor.OpenOptions = [.noFollow, .nonBlocking]
        let file = try MirrorFailure.opening(name, in: directory, side: side) {
            if noAccessTime {
                do {
                    return try directory.open(at: name, .readOnly, options: options.union(.noAccessTime))
                } catch Errno.notPermitted {
                    // Not the owner after all (the file changed hands): open without O_NOATIME.
                }
            }
            return try directory.open(at: name, .readOnly, options: options)
        }
        let status = try MirrorFailure.attempt("fstat") { try file.descriptor.status() }
        guard status.kind == .regular else { throw .replaced(status.kind) }
        try MirrorFailure.attempt("fcntl") { try file.descriptor.setNonBlocking(false) }
        return Opened(file: file, status: status)
    }
}
