import Glibc

/// The file a Unix socket was bound to, as the kernel knows it (`sock_diag(7)`): which file,
/// not only which path, so that a socket file deleted and another made at its path are told
/// apart.
public struct BoundSocketFile: Hashable, Sendable {
    /// The device holding the file, as `st_dev` gives it.
    public var device: UInt64
    /// The low 32 bits of the file's inode number: all that the kernel says (`udiag_vfs_ino`).
    public var inodeLowBits: UInt32

    /// Creates one from its parts.
    public init(device: UInt64, inodeLowBits: UInt32) {
        self.device = device
        self.inodeLowBits = inodeLowBits
    }

    /// Whether `status` may be this file: a socket on its device, whose inode number has its
    /// low 32 bits.
    public func matches(_ status: FileStatus) -> Bool {
        status.kind == .socket && status.device == device && UInt32(truncatingIfNeeded: status.inode) == inodeLowBits
    }
}

extension FileDescriptor {
    /// The file this Unix socket was bound to, asked of the kernel over `NETLINK_SOCK_DIAG`
    /// (`SOCK_DIAG_BY_FAMILY` with `UDIAG_SHOW_VFS`, as `ss -x` does); nil for a socket bound
    /// to no file (abstract, unnamed). Throws what the kernel answered when it cannot say
    /// (`ENOENT` and the like without `unix_diag`, `CONFIG_UNIX_DIAG`; `EAFNOSUPPORT` or
    /// `EPERM` where netlink sockets are not allowed, as under `RestrictAddressFamilies=AF_UNIX`),
    /// or `EAGAIN` when it does not answer within a second (the receive timeout).
    public func boundSocketFile() throws(Errno) -> BoundSocketFile? {
        let socketInode = UInt32(truncatingIfNeeded: try status().inode)
        let raw = try DescriptorReserve.admit(valueOrErrno {
            socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Self.netlinkSockDiag)
        })
        let netlink = OwnedDescriptor(taking: FileDescriptor(rawValue: raw))
        try netlink.descriptor.setReceiveTimeout(.seconds(1))
        // struct nlmsghdr, then struct unix_diag_req, in the host's byte order.
        var request: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value) { request.append(contentsOf: $0) } }
        append(UInt32(16 + 24))  // nlmsg_len
        append(Self.sockDiagByFamily)  // nlmsg_type
        append(Self.netlinkRequest)  // nlmsg_flags
        append(UInt32(1))  // nlmsg_seq
        append(UInt32(0))  // nlmsg_pid: the kernel
        append(UInt8(AF_UNIX))  // sdiag_family
        append(UInt8(0))  // sdiag_protocol
        append(UInt16(0))  // pad
        append(UInt32.max)  // udiag_states: any
        append(socketInode)  // udiag_ino
        append(Self.showVFS)  // udiag_show
        append(UInt32.max)  // udiag_cookie: INET_DIAG_NOCOOKIE
        append(UInt32.max)
        _ = try request.withBytesTyped { (bytes) throws(Errno) -> Int in try netlink.descriptor.send(bytes) }
        let reply = try netlink.descriptor.receive(upToCount: 8192)
        return try reply.withBytesTyped { (bytes) throws(Errno) -> BoundSocketFile? in
            try Self.parseDiagReply(bytes, socketInode: socketInode)
        }
    }

    /// The file named by the reply to the request for the socket `socketInode` (nil when the
    /// socket is bound to none); throws the error the reply carries, or `ENOENT` for a reply
    /// that does not describe the socket.
    static func parseDiagReply(_ bytes: UnsafeRawBufferPointer, socketInode: UInt32) throws(Errno) -> BoundSocketFile? {
        var offset = 0
        while offset + 16 <= bytes.count {
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            let type = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self)
            guard length >= 16, offset + length <= bytes.count else { break }
            if type == netlinkError, length >= 20 {
                let error = bytes.loadUnaligned(fromByteOffset: offset + 16, as: Int32.self)
                throw Errno(rawValue: error < 0 ? -error : EPROTO)
            }
            // struct unix_diag_msg (16 bytes), then its attributes.
            if type == sockDiagByFamily, length >= 32, bytes.loadUnaligned(fromByteOffset: offset + 20, as: UInt32.self) == socketInode {
                var attribute = offset + 32
                while attribute + 4 <= offset + length {
                    let attributeLength = Int(bytes.loadUnaligned(fromByteOffset: attribute, as: UInt16.self))
                    let attributeType = bytes.loadUnaligned(fromByteOffset: attribute + 2, as: UInt16.self)
                    guard attributeLength >= 4, attribute + attributeLength <= offset + length else { break }
                    if attributeType == unixDiagVFS, attributeLength >= 12 {
                        let inode = bytes.loadUnaligned(fromByteOffset: attribute + 4, as: UInt32.self)
                        let device = bytes.loadUnaligned(fromByteOffset: attribute + 8, as: UInt32.self)
                        return BoundSocketFile(device: userDevice(kernel: device), inodeLowBits: inode)
                    }
                    attribute += (attributeLength + 3) & ~3
                }
                return nil
            }
            offset += (length + 3) & ~3
        }
        throw .noSuchFileOrDirectory
    }

    /// A kernel device number (`MAJOR << 20 | MINOR`, as `udiag_vfs_dev` gives it) as `st_dev`
    /// gives it (glibc's `makedev`).
    static func userDevice(kernel: UInt32) -> UInt64 {
        let major = UInt64(kernel >> 20)
        let minor = UInt64(kernel & 0xF_FFFF)
        return (minor & 0xFF) | ((major & 0xFFF) << 8) | ((minor & ~0xFF) << 12) | ((major & ~0xFFF) << 32)
    }

    static let netlinkSockDiag: Int32 = 4  // NETLINK_SOCK_DIAG
    static let netlinkRequest: UInt16 = 1  // NLM_F_REQUEST
    static let netlinkError: UInt16 = 2  // NLMSG_ERROR
    static let sockDiagByFamily: UInt16 = 20  // SOCK_DIAG_BY_FAMILY
    static let showVFS: UInt32 = 0x2  // UDIAG_SHOW_VFS
    static let unixDiagVFS: UInt16 = 1  // UNIX_DIAG_VFS
}
