import Glibc

/// Which direction `shutdown(2)` closes.
public enum ShutdownDirection: Sendable {
    /// No more receives (`SHUT_RD`).
    case read
    /// No more sends; the peer reads end of file (`SHUT_WR`).
    case write
    /// Both directions (`SHUT_RDWR`).
    case readWrite
}

/// Socket operations on `AF_UNIX` descriptors. Sends always pass `MSG_NOSIGNAL`,
/// so a vanished peer yields `EPIPE` instead of a process-killing `SIGPIPE`.
extension FileDescriptor {
    /// Binds the socket to `address` (`bind(2)`); a path address creates the socket file.
    public func bind(to address: UnixSocketAddress) throws(Errno) {
        try address.withSockaddr { (pointer, length) throws(Errno) in
            try nothingOrErrno { Glibc.bind(rawValue, pointer, length) }
        }
    }

    /// Marks a bound stream socket as accepting connections (`listen(2)`).
    public func listen(backlog: Int32 = SOMAXCONN) throws(Errno) {
        try nothingOrErrno { Glibc.listen(rawValue, backlog) }
    }

    /// Accepts a pending connection (`accept4(2)`), close-on-exec and by default non-blocking.
    ///
    /// On a non-blocking listener with nothing pending this throws `Errno.wouldBlock`.
    public func accept(nonBlocking: Bool = true) throws(Errno) -> OwnedDescriptor {
        var flags = O_CLOEXEC
        if nonBlocking { flags |= O_NONBLOCK }
        let raw = try DescriptorReserve.admit(valueOrErrno { LinuxSymbols.accept4(rawValue, nil, nil, flags) })
        return OwnedDescriptor(taking: FileDescriptor(rawValue: raw))
    }

    /// Accepts a pending connection as `accept` does, onto a descriptor below the reserve
    /// (`DescriptorReserve`) whatever other threads open meanwhile.
    ///
    /// With a reserve, the lowest free descriptor is taken first (a duplicate of the listener):
    /// when it lies in the reserve, every descriptor below it is in use, and this throws
    /// `EMFILE`, leaving the connection in the listen queue. Otherwise that place is held while
    /// `accept4(2)` runs: if other threads took the last descriptors below the reserve
    /// meanwhile, and the kernel numbers the connection in the reserve (where `accept` would
    /// close it unanswered), the connection is moved onto the place held (`dup3(2)`). Without a
    /// reserve, this is `accept`.
    public func acceptOutsideReserve(nonBlocking: Bool = true) throws(Errno) -> OwnedDescriptor {
        guard DescriptorReserve.size > 0 else { return try accept(nonBlocking: nonBlocking) }
        let place = try duplicate()
        return try accept(nonBlocking: nonBlocking, holding: place, isReserved: DescriptorReserve.isReserved)
    }

    /// `acceptOutsideReserve` with `place`, a descriptor below the reserve, held: the
    /// connection is moved onto it when `isReserved` says the one the kernel gave it lies in
    /// the reserve; `place` is closed otherwise.
    func accept(
        nonBlocking: Bool, holding place: consuming OwnedDescriptor, isReserved: (Int32) -> Bool
    ) throws(Errno) -> OwnedDescriptor {
        var flags = O_CLOEXEC
        if nonBlocking { flags |= O_NONBLOCK }
        let raw = try valueOrErrno { LinuxSymbols.accept4(rawValue, nil, nil, flags) }
        let accepted = OwnedDescriptor(taking: FileDescriptor(rawValue: raw))
        guard isReserved(accepted.rawValue) else { return accepted }
        // `dup3` closes what the place held (the listener's duplicate) and gives its number
        // the connection, in one step no other thread can come between; the number in the
        // reserve is closed as `accepted` goes (`O_NONBLOCK` belongs to the connection, not to
        // the number, and stays).
        let target = place.release()
        do {
            try nothingOrErrno { LinuxSymbols.dup3(accepted.rawValue, target.rawValue, O_CLOEXEC) }
        } catch {
            _ = Glibc.close(target.rawValue)
            throw error
        }
        return OwnedDescriptor(taking: target)
    }

    /// Connects the socket to `address` (`connect(2)`); `EINTR` is not retried because
    /// the connection continues asynchronously, so it is reported to the caller.
    public func connect(to address: UnixSocketAddress) throws(Errno) {
        try address.withSockaddr { (pointer, length) throws(Errno) in
            try nothingOrErrno(retryOnInterrupt: false) { Glibc.connect(rawValue, pointer, length) }
        }
    }

    /// Bounds how long a blocking receive waits for data (`SO_RCVTIMEO`): after `timeout` it
    /// fails with `Errno.wouldBlock`. Nil (or zero) waits for ever.
    public func setReceiveTimeout(_ timeout: Duration?) throws(Errno) {
        try setTimeout(SO_RCVTIMEO, timeout)
    }

    /// Bounds how long a blocking send, or a `connect` to a Unix socket whose listen queue is
    /// full, waits (`SO_SNDTIMEO`): after `timeout` it fails with `Errno.wouldBlock`. Nil (or
    /// zero) waits for ever.
    public func setSendTimeout(_ timeout: Duration?) throws(Errno) {
        try setTimeout(SO_SNDTIMEO, timeout)
    }

    private func setTimeout(_ option: Int32, _ timeout: Duration?) throws(Errno) {
        let wait = Swift.max(.zero, timeout ?? .zero)
        let (seconds, attoseconds) = wait.components
        var microseconds = attoseconds / 1_000_000_000_000
        // A positive wait shorter than a microsecond is one: zero would mean no timeout at all.
        if seconds == 0, microseconds == 0, wait > .zero { microseconds = 1 }
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int(microseconds))
        try nothingOrErrno { setsockopt(rawValue, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size)) }
    }

    /// Sends some of `buffer` on a connected socket (`send(2)` with `MSG_NOSIGNAL`).
    public func send(_ buffer: UnsafeRawBufferPointer, flags: Int32 = 0) throws(Errno) -> Int {
        try valueOrErrno { Glibc.send(rawValue, buffer.baseAddress, buffer.count, flags | Int32(MSG_NOSIGNAL)) }
    }

    /// Sends all of `bytes` on a connected blocking socket, looping over partial sends.
    public func sendAll(_ bytes: some Collection<UInt8>) throws(Errno) {
        try Array(bytes).withBytesTyped { (buffer) throws(Errno) in
            var offset = 0
            while offset < buffer.count {
                offset += try send(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
            }
        }
    }

    /// Receives up to `buffer.count` bytes (`recv(2)`); 0 means the peer closed a stream.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, flags: Int32 = 0) throws(Errno) -> Int {
        try valueOrErrno { recv(rawValue, buffer.baseAddress, buffer.count, flags) }
    }

    /// Receives up to `count` bytes in one `recv(2)`; empty means end of stream.
    public func receive(upToCount count: Int) throws(Errno) -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: Swift.max(count, 0)) { buffer, initialized throws(Errno) in
            initialized = try receive(into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// Sends one datagram to `address` (`sendto(2)` with `MSG_NOSIGNAL` and the exact address length).
    public func send(_ message: some Collection<UInt8>, to address: UnixSocketAddress) throws(Errno) -> Int {
        try Array(message).withBytesTyped { (buffer) throws(Errno) -> Int in
            try address.withSockaddr { (pointer, length) throws(Errno) -> Int in
                try valueOrErrno {
                    sendto(rawValue, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), pointer, length)
                }
            }
        }
    }

    /// Receives one datagram of at most `maximumCount` bytes with its sender (`recvfrom(2)`).
    ///
    /// Longer datagrams are truncated. Unbound senders, like `sd_notify`, show as `.unnamed`.
    public func receiveMessage(
        maximumCount: Int = 64 * 1024
    ) throws(Errno) -> (bytes: [UInt8], sender: UnixSocketAddress) {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let bytes = try [UInt8](unsafeUninitializedCapacity: Swift.max(maximumCount, 0)) {
            buffer, initialized throws(Errno) in
            initialized = try withUnsafeMutablePointer(to: &address) { (pointer) throws(Errno) -> Int in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (generic) throws(Errno) -> Int in
                    try valueOrErrno { recvfrom(rawValue, buffer.baseAddress, buffer.count, 0, generic, &length) }
                }
            }
        }
        return (bytes, UnixSocketAddress(address, length: length))
    }

    /// Shuts down one or both directions of a connected socket (`shutdown(2)`).
    public func shutdown(_ direction: ShutdownDirection) throws(Errno) {
        let how = switch direction {
        case .read: Int32(SHUT_RD)
        case .write: Int32(SHUT_WR)
        case .readWrite: Int32(SHUT_RDWR)
        }
        try nothingOrErrno { Glibc.shutdown(rawValue, how) }
    }

    /// The address the socket is bound to (`getsockname(2)`).
    public func localAddress() throws(Errno) -> UnixSocketAddress {
        try socketAddress { (fd, address, length) in getsockname(fd, address, length) }
    }

    /// The address of the connected peer (`getpeername(2)`).
    public func peerAddress() throws(Errno) -> UnixSocketAddress {
        try socketAddress { (fd, address, length) in getpeername(fd, address, length) }
    }

    private func socketAddress(
        _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) throws(Errno) -> UnixSocketAddress {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        try withUnsafeMutablePointer(to: &address) { (pointer) throws(Errno) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (generic) throws(Errno) in
                try nothingOrErrno { call(rawValue, generic, &length) }
            }
        }
        return UnixSocketAddress(address, length: length)
    }
}
