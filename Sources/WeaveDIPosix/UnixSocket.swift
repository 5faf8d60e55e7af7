import Glibc

/// The socket type of an `AF_UNIX` socket (`SOCK_STREAM`, `SOCK_DGRAM`, `SOCK_SEQPACKET`).
public struct SocketType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The raw `SOCK_*` value.
    public let rawValue: Int32
    /// Wraps a raw `SOCK_*` value.
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// Reliable byte stream (`SOCK_STREAM`).
    public static var stream: SocketType { SocketType(rawValue: Int32(SOCK_STREAM.rawValue)) }
    /// Message-preserving datagrams (`SOCK_DGRAM`).
    public static var datagram: SocketType { SocketType(rawValue: Int32(SOCK_DGRAM.rawValue)) }
    /// Reliable, message-preserving connections (`SOCK_SEQPACKET`).
    public static var sequentialPacket: SocketType { SocketType(rawValue: Int32(SOCK_SEQPACKET.rawValue)) }

    /// A name such as `SOCK_STREAM`.
    public var description: String {
        switch self {
        case .stream: "SOCK_STREAM"
        case .datagram: "SOCK_DGRAM"
        case .sequentialPacket: "SOCK_SEQPACKET"
        default: "SOCK(\(rawValue))"
        }
    }
}

/// Factories for `AF_UNIX` sockets; each returns an `OwnedDescriptor`, always close-on-exec.
public enum UnixSocket {
    /// Creates an unbound `AF_UNIX` socket (`socket(2)` with `SOCK_CLOEXEC`).
    public static func make(_ type: SocketType, nonBlocking: Bool = false) throws(Errno) -> OwnedDescriptor {
        var flags = type.rawValue | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { flags |= Int32(SOCK_NONBLOCK.rawValue) }
        let raw = try DescriptorReserve.admit(valueOrErrno { socket(AF_UNIX, flags, 0) })
        return OwnedDescriptor(taking: FileDescriptor(rawValue: raw))
    }

    /// Creates a listening stream socket bound to `address`.
    ///
    /// With `removingStaleSocket`, an existing *socket* file at a path address
    /// is unlinked first, as daemons do after an unclean exit; other file types
    /// are never removed, so `bind` then fails with `EADDRINUSE`.
    public static func listen(
        at address: UnixSocketAddress,
        backlog: Int32 = SOMAXCONN,
        nonBlocking: Bool = true,
        removingStaleSocket: Bool = false,
        permissions: FilePermissions? = nil
    ) throws(Errno) -> OwnedDescriptor {
        let socket = try make(.stream, nonBlocking: nonBlocking)
        if removingStaleSocket, address.kind == .path {
            let path = address.description
            if let existing = try? FileStatus(path: path, followSymlinks: false), existing.kind == .socket {
                try FileDescriptor.currentWorkingDirectory.unlink(at: path)
            }
        }
        try socket.descriptor.bind(to: address)
        if let permissions, address.kind == .path {
            try FileDescriptor.currentWorkingDirectory.setPermissions(at: address.description, permissions)
        }
        try socket.descriptor.listen(backlog: backlog)
        return socket
    }

    /// Creates a socket of `type` connected to `address` (blocking connect). With `timeout`,
    /// the connect waits at most that long for a place in a full listen queue (then
    /// `Errno.wouldBlock`), and so do sends on the socket (`SO_SNDTIMEO`).
    public static func connect(
        to address: UnixSocketAddress,
        type: SocketType = .stream,
        nonBlocking: Bool = false,
        timeout: Duration? = nil
    ) throws(Errno) -> OwnedDescriptor {
        let socket = try make(type)
        if let timeout { try socket.descriptor.setSendTimeout(timeout) }
        try socket.descriptor.connect(to: address)
        if nonBlocking { try socket.descriptor.setNonBlocking(true) }
        return socket
    }

    /// Creates a datagram socket bound to `address` for receiving, e.g. a test `NOTIFY_SOCKET`.
    public static func bindDatagram(
        at address: UnixSocketAddress,
        nonBlocking: Bool = false
    ) throws(Errno) -> OwnedDescriptor {
        let socket = try make(.datagram, nonBlocking: nonBlocking)
        try socket.descriptor.bind(to: address)
        return socket
    }

    /// Sends one datagram to `address` from a temporary unbound socket: what `sd_notify` does.
    ///
    /// Returns the number of bytes sent; a datagram is sent whole or not at all.
    @discardableResult
    public static func sendDatagram(
        _ message: some Collection<UInt8>,
        to address: UnixSocketAddress
    ) throws(Errno) -> Int {
        let socket = try make(.datagram)
        let sent = try socket.descriptor.send(message, to: address)
        try socket.close()
        return sent
    }
}
