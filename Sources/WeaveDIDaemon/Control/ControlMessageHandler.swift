import WeaveDI
import WeaveDIPosix

/// Who is on the other end of a control connection.
public struct ControlPeer: Sendable, Equatable {
    /// A number unique to the connection in this daemon's life.
    public var connectionID: UInt64
    /// The peer's credentials from `SO_PEERCRED`.
    public var credentials: PeerCredentials
    /// The peer's supplementary groups from `SO_PEERGROUPS`.
    public var groups: [UInt32]
}

/// Answers the messages of one control connection (the protocol lives behind this).
public protocol ControlMessageHandler: Sendable {
    /// Handles one complete message (its NUL terminator removed) from `peer`, whose connection
    /// is `session`; returns the replies to send, each without its NUL terminator, in order
    /// (none for a one-way call; several for a call that streams). `send` delivers a reply
    /// before the call ends (streaming progress); replies are kept in call order.
    func handle(message: [UInt8], peer: ControlPeer, session: Session, send: @escaping @Sendable ([UInt8]) -> Void) async -> [[UInt8]]

    /// Answers `message` at once, on the I/O thread, when it is a call that never suspends
    /// (reading methods such as `Ping`): appends its replies to `replies`, each followed by
    /// its NUL terminator, in order, and returns true; returns false, appending nothing, to
    /// take the async path.
    func handleInline(message: UnsafeBufferPointer<UInt8>, peer: ControlPeer, session: Session, replies: inout [UInt8]) -> Bool

    /// The reply sent before closing a connection that broke a limit (too large a message,
    /// too many clients, idle too long); nil to close silently.
    func limitReply(_ violation: ControlLimitViolation) -> [UInt8]?

    /// The reply to the last message of a connection whose client ended its input before the
    /// message's NUL terminator (`byteCount` bytes of it came); nil to send none.
    func unterminatedMessageReply(byteCount: Int, peer: ControlPeer) -> [UInt8]?

    /// Takes on a reloaded configuration's `control` (who may change things) for the calls
    /// that follow.
    func adopt(_ configuration: DaemonConfiguration)

    /// Whether `peer` has administrator rights (and so may take the places kept for them).
    func mayAdminister(_ peer: ControlPeer) -> Bool
}

extension ControlMessageHandler {
    /// A handler with nothing to take on.
    public func adopt(_ configuration: DaemonConfiguration) {}

    /// Root and the daemon's own user.
    public func mayAdminister(_ peer: ControlPeer) -> Bool {
        peer.credentials.uid == 0 || peer.credentials.uid == CurrentProcess.effectiveUserID
    }
}

/// A limit a control client broke.
public enum ControlLimitViolation: Sendable, Equatable {
    /// A message longer than the limit (bytes).
    case messageTooLarge(limit: Int)
    /// More clients than the limit.
    case tooManyClients(limit: Int)
    /// More clients of one user (no administrator) than the limit.
    case tooManyClientsOfUser(limit: Int)
    /// No complete message for longer than the idle limit.
    case idle(limit: Duration)
}
