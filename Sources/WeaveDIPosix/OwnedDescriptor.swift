import Glibc

/// A file descriptor with exactly one owner that is closed when the owner goes away.
///
/// Every function in this module that creates a descriptor (open, socket,
/// accept, pipe, signalfd, dup) returns an `OwnedDescriptor`. Because the type
/// is `~Copyable`, the compiler rejects accidental copies, and `deinit` closes
/// the descriptor on every path that forgets to, including thrown errors, so a
/// daemon cannot leak client sockets. Use `close()` to observe close errors,
/// and `release()` to hand the raw descriptor to code that takes ownership.
public struct OwnedDescriptor: ~Copyable, Sendable {
    /// The borrowed handle used to perform operations; do not close it directly, nor use it
    /// after the owner is gone. Keep the owner in a variable: in one expression such as
    /// `try directory.open(at: name, .readOnly).descriptor.status()`, the temporary owner's
    /// lifetime may end (closing the descriptor) before the call that uses the handle, which
    /// then fails with `EBADF`, or acts on whatever file was given that number meanwhile.
    public let descriptor: FileDescriptor

    /// Takes ownership of `descriptor`, which must not be closed by anyone else.
    public init(taking descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    /// The raw descriptor number, for logging and `poll`.
    public var rawValue: Int32 { descriptor.rawValue }

    /// Closes the descriptor now, reporting any error; `close(2)` is never retried.
    public consuming func close() throws(Errno) {
        let descriptor = self.descriptor
        discard self
        try descriptor.close()
    }

    /// Gives up ownership without closing, returning the raw handle to the caller.
    public consuming func release() -> FileDescriptor {
        let descriptor = self.descriptor
        discard self
        return descriptor
    }

    deinit {
        // Errors cannot be reported from deinit; the descriptor is released either way.
        _ = Glibc.close(descriptor.rawValue)
    }
}

/// The two ends of a pipe created by `OwnedPipe.make()`.
public struct OwnedPipe: ~Copyable, Sendable {
    /// The end that reads bytes written to `writeEnd`.
    public var readEnd: OwnedDescriptor
    /// The end that writes bytes readable from `readEnd`.
    public var writeEnd: OwnedDescriptor

    /// Creates a pipe with `pipe2(2)`, close-on-exec by default.
    public static func make(closeOnExec: Bool = true, nonBlocking: Bool = false) throws(Errno) -> OwnedPipe {
        var flags: Int32 = 0
        if closeOnExec { flags |= O_CLOEXEC }
        if nonBlocking { flags |= O_NONBLOCK }
        var fds: (Int32, Int32) = (-1, -1)
        try withUnsafeMutablePointer(to: &fds) { (pointer) throws(Errno) in
            try pointer.withMemoryRebound(to: Int32.self, capacity: 2) { (ends) throws(Errno) in
                try nothingOrErrno { LinuxSymbols.pipe2(ends, flags) }
            }
        }
        do {
            _ = try DescriptorReserve.admit(fds.1)
        } catch {
            _ = Glibc.close(fds.0)
            throw error
        }
        // The read end has the lower number: below the ceiling when the write end is.
        return OwnedPipe(
            readEnd: OwnedDescriptor(taking: FileDescriptor(rawValue: fds.0)),
            writeEnd: OwnedDescriptor(taking: FileDescriptor(rawValue: fds.1)))
    }

    /// Gives up ownership of both ends, for a pipe that lives as long as the process.
    public consuming func release() -> (read: FileDescriptor, write: FileDescriptor) {
        (readEnd.release(), writeEnd.release())
    }
}
