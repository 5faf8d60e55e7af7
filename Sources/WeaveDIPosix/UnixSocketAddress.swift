import Glibc

/// A validated `AF_UNIX` socket address: a file system path, a Linux abstract name, or unnamed.
///
/// A string starting with `@` denotes the abstract namespace, the convention
/// used by systemd's `NOTIFY_SOCKET`: the kernel address has `sun_path[0] == 0`
/// followed by the name bytes, and its length is exactly
/// `offsetof(sockaddr_un, sun_path) + 1 + name length` (no terminator), because
/// abstract names are compared over the full address length.
public struct UnixSocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// Which namespace the address lives in.
    public enum Kind: Hashable, Sendable {
        /// A path in the file system.
        case path
        /// A name in the Linux abstract namespace (written with a leading `@`).
        case abstract
        /// No address: an unbound socket, as reported for unnamed datagram senders.
        case unnamed
    }

    /// The namespace of the address.
    public let kind: Kind
    /// The path bytes, or the abstract name bytes without the leading `@`/NUL.
    public let bytes: [UInt8]

    /// Size of `sun_path` on Linux.
    public static let pathCapacity = MemoryLayout<sockaddr_un>.size - pathOffset
    /// Longest path that fits in `sun_path` with its NUL terminator (107 bytes).
    public static let maximumPathLength = pathCapacity - 1
    /// Longest abstract name that fits after the leading NUL byte (107 bytes).
    public static let maximumAbstractNameLength = pathCapacity - 1
    /// `offsetof(struct sockaddr_un, sun_path)`.
    static let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!

    /// Parses `string`: a leading `@` selects the abstract namespace, anything else is a path.
    public init(_ string: String) throws(UnixSocketAddressError) {
        if string.hasPrefix("@") {
            try self.init(abstractName: String(string.dropFirst()))
        } else {
            try self.init(path: string)
        }
    }

    /// A file system path address; throws if it is empty, contains NUL or exceeds 107 bytes.
    public init(path: String) throws(UnixSocketAddressError) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty else { throw .emptyPath }
        guard !bytes.contains(0) else { throw .containsNul(path) }
        guard bytes.count <= Self.maximumPathLength else {
            throw .pathTooLong(path: path, byteCount: bytes.count, maximum: Self.maximumPathLength)
        }
        self.kind = .path
        self.bytes = bytes
    }

    /// An abstract-namespace address for `name` (given without `@`); throws if over 107 bytes.
    public init(abstractName name: String) throws(UnixSocketAddressError) {
        let bytes = Array(name.utf8)
        guard bytes.count <= Self.maximumAbstractNameLength else {
            throw .abstractNameTooLong(name: name, byteCount: bytes.count,
                                       maximum: Self.maximumAbstractNameLength)
        }
        self.kind = .abstract
        self.bytes = bytes
    }

    private init(kind: Kind, bytes: [UInt8]) {
        self.kind = kind
        self.bytes = bytes
    }

    /// The address of an unbound socket.
    public static var unnamed: UnixSocketAddress { UnixSocketAddress(kind: .unnamed, bytes: []) }

    /// The path, `@name` for abstract addresses, or an empty string when unnamed.
    public var description: String {
        let text = String(decoding: bytes, as: UTF8.self)
        switch kind {
        case .path: return text
        case .abstract: return "@" + text
        case .unnamed: return ""
        }
    }

    /// The exact `socklen_t` passed to `bind`, `connect` and `sendto` for this address.
    public var length: socklen_t {
        switch kind {
        case .path: socklen_t(Self.pathOffset + bytes.count + 1)
        case .abstract: socklen_t(Self.pathOffset + 1 + bytes.count)
        case .unnamed: socklen_t(MemoryLayout<sa_family_t>.size)
        }
    }

    /// Decodes a kernel-filled `sockaddr_un` of `length` bytes (from `accept`, `recvfrom`, `getsockname`).
    init(_ address: sockaddr_un, length: socklen_t) {
        let nameLength = Swift.max(0, Int(length) - Self.pathOffset)
        var raw = address
        let path = withUnsafeBytes(of: &raw.sun_path) { Array($0.prefix(nameLength)) }
        if path.isEmpty {
            self.init(kind: .unnamed, bytes: [])
        } else if path[0] == 0 {
            self.init(kind: .abstract, bytes: Array(path.dropFirst()))
        } else {
            self.init(kind: .path, bytes: Array(path.prefix { $0 != 0 }))
        }
    }

    /// Calls `body` with a `sockaddr` pointer and the exact address length.
    func withSockaddr<R>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Errno) -> R
    ) throws(Errno) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            let start = kind == .abstract ? 1 : 0  // abstract: sun_path[0] stays 0
            for (index, byte) in bytes.enumerated() { path[start + index] = byte }
        }
        let length = self.length
        return try withUnsafePointer(to: &address) { (pointer) throws(Errno) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (generic) throws(Errno) -> R in
                try body(generic, length)
            }
        }
    }
}

/// Why a string cannot be used as a Unix socket address.
public enum UnixSocketAddressError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The path does not fit in `sun_path` (at most 107 bytes plus the terminator).
    case pathTooLong(path: String, byteCount: Int, maximum: Int)
    /// The abstract name does not fit in `sun_path` after the leading NUL byte.
    case abstractNameTooLong(name: String, byteCount: Int, maximum: Int)
    /// The path is empty.
    case emptyPath
    /// The path contains a NUL byte.
    case containsNul(String)

    /// A message naming the limit and the offending value.
    public var description: String {
        switch self {
        case let .pathTooLong(path, count, maximum):
            "Unix socket path is \(count) bytes, longer than the \(maximum)-byte limit of sun_path: \(path)"
        case let .abstractNameTooLong(name, count, maximum):
            "Abstract Unix socket name is \(count) bytes, longer than the \(maximum)-byte limit: @\(name)"
        case .emptyPath:
            "Unix socket path is empty"
        case let .containsNul(path):
            "Unix socket path contains a NUL byte: \(path.debugDescription)"
        }
    }
}
