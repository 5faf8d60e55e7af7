import WeaveDI
import WeaveDIPosix

/// One client connection, touched only by the control server's I/O thread.
final class ControlConnection {
    let id: UInt64
    let descriptor: FileDescriptor
    let peer: ControlPeer
    let session: Session
    var input: [UInt8] = []
    var output: [UInt8] = []
    var outputOffset = 0
    /// The sequence number of the next message read, and of the next reply to write.
    var nextCallSequence: UInt64 = 0
    var nextReplySequence: UInt64 = 0
    /// Finished calls' replies waiting for earlier calls to finish.
    var finished: [UInt64: [[UInt8]]] = [:]
    /// Replies sent early by calls still running (streams), by call.
    var streamed: [UInt64: [[UInt8]]] = [:]
    var lastActivity: Duration
    /// Set when the connection must close once its output is written.
    var closeAfterFlush = false

    init(id: UInt64, descriptor: FileDescriptor, peer: ControlPeer, session: Session, now: Duration) {
        self.id = id
        self.descriptor = descriptor
        self.peer = peer
        self.session = session
        lastActivity = now
    }

    var hasPendingOutput: Bool { outputOffset < output.count }
    var callsInFlight: Bool { nextReplySequence < nextCallSequence }

    /// Queues `reply` (NUL-terminated on the wire).
    func enqueue(_ reply: [UInt8]) {
        if outputOffset > 0, outputOffset == output.count {
            output.removeAll(keepingCapacity: true)
            outputOffset = 0
        }
        output.append(contentsOf: reply)
        output.append(0)
    }

    /// Moves replies into the output in call order: streamed replies of the oldest running
    /// call, then every finished call in sequence.
    func flushInOrder() {
        while true {
            if let early = streamed.removeValue(forKey: nextReplySequence) { early.forEach(enqueue) }
            guard let replies = finished.removeValue(forKey: nextReplySequence) else { return }
            replies.forEach(enqueue)
            nextReplySequence += 1
        }
    }

    /// Splits complete messages off the input; nil when a message exceeds `limit` bytes.
    func takeMessages(limit: Int) -> [[UInt8]]? {
        var messages: [[UInt8]] = []
        var start = 0
        while let end = input[start...].firstIndex(of: 0) {
            if end - start > limit { return nil }
            messages.append(Array(input[start..<end]))
            start = end + 1
        }
        input.removeFirst(start)
        if input.count > limit { return nil }
        return messages
    }
}
