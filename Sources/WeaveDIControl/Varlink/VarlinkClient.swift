import WeaveDI
import WeaveDIPosix

/// A blocking varlink client over a Unix stream socket (for weavedictl and tests).
public final class VarlinkClient {
    private let descriptor: FileDescriptor
    private var buffer: [UInt8] = []
    /// How much of `buffer` is known to hold no NUL: each byte is searched once.
    private var searched = 0
    /// The bytes received, and those searched for a NUL, over the client's life: equal when
    /// each byte is searched once, whatever the peer's chunks (a test holds it to that).
    private(set) var bytesReceived = 0, bytesSearched = 0
    /// The longest reply read, without its NUL: the most a JSON document may have
    /// (`JSONLimits.maxBytes`, 16 MiB), as a longer one could not be decoded anyway.
    public static let maximumReplyBytes = JSONLimits().maxBytes
    /// The socket path connected to.
    public let path: String

    /// Why a call could not be made at all.
    public enum ConnectionError: Error, CustomStringConvertible {
        /// Nothing listens at the path (or it does not exist).
        case unreachable(path: String, reason: String)
        /// The connection broke.
        case broken(String)
        /// What came back is not a varlink reply (not JSON, not an object, a member of the
        /// wrong type); `reason` says what is wrong with it.
        case malformedReply(String)
        /// No reply came within the client's `replyTimeout`.
        case timedOut(Duration)

        /// What happened.
        public var description: String {
            switch self {
            case let .unreachable(path, reason): "cannot connect to \(path): \(reason)"
            case let .broken(reason): "the connection broke: \(reason)"
            case let .malformedReply(reason): "the reply is not a valid varlink reply: \(reason)"
            case let .timedOut(wait): "no reply within \(Self.seconds(wait)) s"
            }
        }

        /// `30`, `2.5`, `0.000000001`: a timeout in seconds, as given: in decimal digits, never
        /// with an exponent (`1e-09`), as `--timeout` takes it, to the nanosecond.
        public static func seconds(_ duration: Duration) -> String {
            let (whole, attoseconds) = duration.components
            let nanoseconds = attoseconds / 1_000_000_000
            guard whole >= 0, nanoseconds > 0 else { return "\(whole)" }
            var digits = String(nanoseconds)
            digits = String(repeating: "0", count: 9 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            return "\(whole).\(digits)"
        }
    }

    /// Connects to the socket at `path`. With `timeout`, the connect waits at most that long
    /// for a place in the listen queue of a daemon that accepts none, and each reply at most
    /// that long (see `replyTimeout`); nil waits for ever.
    public init(path: String, timeout: Duration? = nil) throws(ConnectionError) {
        self.path = path
        let descriptor: FileDescriptor
        do {
            descriptor = try UnixSocket.connect(to: UnixSocketAddress(path: path), timeout: timeout).release()
        } catch .wouldBlock {
            throw .unreachable(path: path, reason: "its listen queue stayed full for \(ConnectionError.seconds(timeout ?? .zero)) s: the daemon is not accepting connections")
        } catch {
            throw .unreachable(path: path, reason: "\(error)")
        }
        self.descriptor = descriptor
        replyTimeout = timeout
        try? descriptor.setReceiveTimeout(timeout)  // didSet does not run in an initializer
    }

    /// The longest wait for each reply (of a `more` call, for each of its replies); nil waits
    /// for ever. A reply that does not come in time ends the call with
    /// `ConnectionError.timedOut`, however its bytes trickle in: the wait is for the whole
    /// reply, not for each read.
    public var replyTimeout: Duration? {
        didSet { try? descriptor.setReceiveTimeout(replyTimeout) }
    }

    deinit { try? descriptor.close() }

    /// Ends the connection (`shutdown(2)`, both ways): the peer reads its end at once, before
    /// the client is released, which closes it. No call can be made on it after this.
    public func disconnect() {
        try? descriptor.shutdown(.readWrite)
    }

    /// Sends `call` and returns its reply (the last one, for `more`; `onReply` sees each).
    /// A varlink error reply is thrown as `VarlinkFailure`; a reply that says more follow
    /// (`continues`) to a call without `more`, which varlink does not allow, as
    /// `ConnectionError.malformedReply` (waiting for the rest could wait for ever). When the
    /// call cannot be sent, an error reply the daemon sent before closing is thrown, not the
    /// broken connection. An error `onReply` throws ends the call, and is thrown as it is.
    @discardableResult
    public func call(_ call: VarlinkCall, onReply: (VarlinkReply) throws -> Void = { _ in }) throws -> VarlinkReply? {
        do { try send(call) } catch let ConnectionError.broken(reason) {
            // A daemon that refuses the connection (no place left) may answer and close before
            // the call is sent: its error reply is there to read all the same. Only what has
            // come is read; nothing more is waited for.
            try? descriptor.setNonBlocking(true)
            if let reply = try? receive(), let error = reply.error { throw VarlinkFailure(error, reply.parameters) }
            throw ConnectionError.broken(reason)
        }
        if call.oneway { return nil }
        while true {
            let reply = try receive()
            if reply.continues, !call.more {
                throw ConnectionError.malformedReply("\"continues\" in a reply to a call without \"more\"")
            }
            if let error = reply.error { throw VarlinkFailure(error, reply.parameters) }
            try onReply(reply)
            if !reply.continues { return reply }
        }
    }

    /// Calls `method` with `parameters` and returns the reply's parameters.
    public func call(_ method: String, _ parameters: [(String, JSONValue)] = []) throws -> VarlinkReply {
        try call(VarlinkCall(method: method, parameters: parameters))!
    }

    /// Sends one message.
    public func send(_ call: VarlinkCall) throws {
        do { try descriptor.sendAll(call.encoded() + [0]) } catch .wouldBlock {
            throw ConnectionError.timedOut(replyTimeout ?? .zero)  // the daemon reads nothing
        } catch {
            throw ConnectionError.broken("\(error)")
        }
    }

    /// Reads one reply; one that cannot be decoded is a `ConnectionError.malformedReply`,
    /// not a `VarlinkFailure`, which is an error the daemon sent. So is one longer than
    /// `maximumReplyBytes`, refused as soon as that many bytes came without a NUL. It waits
    /// `replyTimeout` at most in all, a peer that sends a byte now and then included.
    public func receive() throws -> VarlinkReply {
        let deadline = replyTimeout.flatMap { $0 > .zero ? ContinuousClock.now + $0 : nil }
        while true {
            if let end = buffer[searched...].firstIndex(of: 0) {
                bytesSearched += end + 1 - searched
                let message = Array(buffer[..<end])
                buffer.removeFirst(end + 1)
                searched = 0
                do { return try VarlinkReply.decode(message) } catch {
                    throw ConnectionError.malformedReply(error.reason ?? error.description)
                }
            }
            bytesSearched += buffer.count - searched
            searched = buffer.count
            guard buffer.count <= Self.maximumReplyBytes else {
                throw ConnectionError.malformedReply("more than \(Self.maximumReplyBytes) bytes without the NUL that ends a reply")
            }
            if let deadline, let replyTimeout {
                // Each read waits only for what is left of the reply's time.
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw ConnectionError.timedOut(replyTimeout) }
                try? descriptor.setReceiveTimeout(left)
            }
            let chunk: [UInt8]
            do { chunk = try descriptor.receive(upToCount: 65_536) } catch .wouldBlock {
                throw ConnectionError.timedOut(replyTimeout ?? .zero)
            } catch {
                throw ConnectionError.broken("\(error)")
            }
            if chunk.isEmpty { throw ConnectionError.broken("the daemon closed the connection") }
            bytesReceived += chunk.count
            buffer += chunk
        }
    }
}
