import Glibc

/// The process credentials of a Unix socket peer, captured by the kernel at `connect`/`listen` time.
public struct PeerCredentials: Hashable, Sendable, CustomStringConvertible {
    /// The peer's process id.
    public var pid: Int32
    /// The peer's effective user id.
    public var uid: UInt32
    /// The peer's effective group id.
    public var gid: UInt32

    /// Creates credentials from their parts.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// A textual form such as `pid=42 uid=1000 gid=1000`.
    public var description: String {
        "pid=\(pid) uid=\(uid) gid=\(gid)"
    }
}

/// Socket options used by a daemon to authenticate clients and validate inherited sockets.
extension FileDescriptor {
    /// The credentials of the connected peer (`getsockopt(SO_PEERCRED)`).
    public func peerCredentials() throws(Errno) -> PeerCredentials {
        var credentials = LinuxUcred()
        try socketOption(SO_PEERCRED, into: &credentials)
        return PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
    }

    /// The socket's type (`getsockopt(SO_TYPE)`); throws `ENOTSOCK` for non-sockets.
    public func socketType() throws(Errno) -> SocketType {
        var value: Int32 = 0
        try socketOption(SO_TYPE, into: &value)
        return SocketType(rawValue: value)
    }

    /// The socket's address family (`getsockopt(SO_DOMAIN)`), e.g. `AF_UNIX`.
    public func socketDomain() throws(Errno) -> Int32 {
        var value: Int32 = 0
        try socketOption(SO_DOMAIN, into: &value)
        return value
    }

    /// Whether the socket is listening (`getsockopt(SO_ACCEPTCONN)`), as checked for socket activation.
    public func isListening() throws(Errno) -> Bool {
        var value: Int32 = 0
        try socketOption(SO_ACCEPTCONN, into: &value)
        return value != 0
    }

    /// Reads and clears the pending socket error (`getsockopt(SO_ERROR)`); `nil` when none.
    public func pendingSocketError() throws(Errno) -> Errno? {
        var value: Int32 = 0
        try socketOption(SO_ERROR, into: &value)
        return value == 0 ? nil : Errno(rawValue: value)
    }

    private func socketOption<T>(_ option: Int32, into value: inout T) throws(Errno) {
        var length = socklen_t(MemoryLayout<T>.size)
        try withUnsafeMutablePointer(to: &value) { (pointer) throws(Errno) in
            try nothingOrErrno { getsockopt(rawValue, SOL_SOCKET, option, pointer, &length) }
        }
    }
}

extension FileDescriptor {
    /// Whether the descriptor is an `AF_UNIX` socket.
    public func isUnixSocket() throws(Errno) -> Bool {
        try socketDomain() == AF_UNIX
    }
}

extension FileDescriptor {
    /// The supplementary groups of the connected peer (`getsockopt(SO_PEERGROUPS)`, Linux 4.13+).
    public func peerGroups() throws(Errno) -> [UInt32] {
        let soPeerGroups: Int32 = 59  // SO_PEERGROUPS, missing from the Glibc module
        var count = 64
        while true {
            var groups = [gid_t](repeating: 0, count: count)
            var length = socklen_t(count * MemoryLayout<gid_t>.size)
            let result = groups.withUnsafeMutableBytes { getsockopt(rawValue, SOL_SOCKET, soPeerGroups, $0.baseAddress, &length) }
            if result == 0 { return Array(groups.prefix(Int(length) / MemoryLayout<gid_t>.size)) }
            let error = Errno.current
            guard error == Errno(rawValue: ERANGE) else { throw error }
            count = max(count * 2, Int(length) / MemoryLayout<gid_t>.size)
        }
    }
}
