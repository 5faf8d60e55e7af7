import Glibc

/// Whole-file locks that belong to an open file description (Linux "OFD locks").
///
/// A classic POSIX record lock (`F_SETLK`) belongs to the process, and the process loses it
/// when it closes any descriptor of that file, even one opened elsewhere for another reason (a
/// mirror walk that reads the file, say). An OFD lock belongs to the open file description: it
/// is released only when the last descriptor of that description is closed, or the process
/// ends. Two open file descriptions conflict even within one process.
extension FileDescriptor {
    /// Takes a write lock on the whole file without waiting (`fcntl(F_OFD_SETLK)` with
    /// `F_WRLCK`); the descriptor must be open for writing. Throws `EAGAIN` (or `EACCES`) when
    /// another open file description, of this process or another, holds a lock on any part of
    /// the file.
    ///
    /// The corresponding C function is `fcntl`.
    public func lockWholeFileForWriting() throws(Errno) {
        var lock = Glibc.flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 0  // to the end of the file, however long it grows
        lock.l_pid = 0  // must be 0 for F_OFD_SETLK
        try withUnsafeMutablePointer(to: &lock) { (pointer) throws(Errno) in
            try nothingOrErrno { fcntl(rawValue, LinuxSymbols.openFileDescriptionSetLock, UnsafeMutableRawPointer(pointer)) }
        }
    }
}
