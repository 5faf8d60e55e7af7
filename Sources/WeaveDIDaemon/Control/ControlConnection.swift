import WeaveDI
import WeaveDIPosix

/// One client connection, touched only by the control server's I/O thread.
final class ControlConnection {
    let id: UInt64
    let descriptor: FileDescriptor
    let peer: ControlPeer
    let session: Session
    /// Bytes read but not dispatched yet, from `inputStart` on: the start of a message not
    /// complete yet (and, while the connection is paused, complete messages waiting their turn).
    var input: [UInt8] = []
    var inputStart = 0
    /// Where the search for the next NUL resumes: the bytes from `inputStart` up to here hold
    /// none, so each byte is scanned once however small the pieces a message comes in.
    var inputScanned = 0
    /// Wire bytes (NUL-terminated replies) not written yet, from `outputOffset` on.
    var output: [UInt8] = []
    var outputOffset = 0
    /// The sequence number of the next message read, and of the next reply to write.
    var nextCallSequence: UInt64 = 0
    var nextReplySequence: UInt64 = 0
    /// Finished calls' replies (wire bytes) waiting for earlier calls to finish.
    var finished: [UInt64: [UInt8]] = [:]
    /// The call running as a task, if one is: the connection's calls run one at a time, in
    /// the order sent, so that none starts before the one before it has ended.
    var running: UInt64?
    /// Calls read while an earlier one still runs, each waiting its turn (oldest first, from
    /// `queueStart` on): at most `maxCallsInFlight`, as they count among the calls pending.
    var queue: [(sequence: UInt64, message: [UInt8])] = []
    var queueStart = 0
    /// The newest progress reply (wire bytes) of each call still running (a `more` call's
    /// stream) that is not in the output yet: one at most per call, for each supersedes the
    /// one before.
    var progress: [UInt64: [UInt8]] = [:]
    var lastActivity: Duration
    /// Set when the connection must close once the calls it had begun are answered and its
    /// output is written; nothing more is read from it.
    var closeAfterFlush = false
    /// Set once a connection that broke a limit has written its reply and shut its writing
    /// side: what its client still sends is read and dropped until it closes (or the idle
    /// deadline), so that the client, still sending, reads the reply rather than a broken pipe
    /// or a reset.
    var lingering = false
    /// Set at end of file: the client sends no more; the connection closes once the calls
    /// already read are answered and their replies written.
    var inputClosed = false
    /// Set when the server stops: nothing more is read or dispatched; the connection closes
    /// once the calls already dispatched are answered and their replies written.
    var draining = false
    /// How many more messages the connection may have dispatched in the I/O loop's current
    /// turn (`ControlServer.callsPerTurn` at the start of each): the rest wait, buffered, for
    /// its next turn, after every other connection has had its own.
    var callsLeftInTurn = 0

    init(id: UInt64, descriptor: FileDescriptor, peer: ControlPeer, session: Session, now: Duration) {
        self.id = id
        self.descriptor = descriptor
        self.peer = peer
        self.session = session
        lastActivity = now
    }

    var hasPendingOutput: Bool { outputOffset < output.count }
    var hasBufferedInput: Bool { inputStart < input.count }
    /// Whether buffered input may still hold a complete message (bytes not searched yet).
    var hasUnscannedInput: Bool { inputScanned < input.count }

    /// Whether the connection has nothing left to do but write its output: it broke a limit,
    /// the client sent everything, or the server stops, and every call is answered.
    var isDone: Bool {
        !callsInFlight && (closeAfterFlush || (inputClosed && !hasUnscannedInput) || draining)
    }

    /// When the connection is closed for silence (`lastActivity` plus `limit`); none while a
    /// call runs (but for a lingering connection, which is done with its calls). The same
    /// deadline counts for a connection waiting to close whose client reads nothing.
    func idleDeadline(_ limit: Duration) -> Duration? {
        callsInFlight && !lingering ? nil : lastActivity + limit
    }

    /// Drops all buffered input (dispatched or not), keeping the buffer's capacity.
    func discardInput() {
        input.removeAll(keepingCapacity: true)
        inputStart = 0
        inputScanned = 0
    }

    /// Drops the input already dispatched once it is at least half the buffer, so that each
    /// byte is moved at most a bounded number of times.
    func compactInput() {
        if inputStart == input.count {
            discardInput()
        } else if inputStart > 0, inputStart >= input.count / 2 {
            input.removeSubrange(..<inputStart)
            inputScanned -= inputStart
            inputStart = 0
        }
    }
    var callsInFlight: Bool { nextReplySequence < nextCallSequence }
    /// Whether a call runs or waits its turn: a call read now must wait behind it.
    var isBusy: Bool { running != nil || queueStart < queue.count }
    /// Whether the oldest call waiting may start: none runs.
    var hasCallReadyToStart: Bool { running == nil && queueStart < queue.count }

    /// Puts call `sequence` behind the calls before it.
    func enqueueCall(_ sequence: UInt64, _ message: [UInt8]) {
        queue.append((sequence, message))
    }

    /// Takes the oldest call waiting its turn.
    func dequeueCall() -> (sequence: UInt64, message: [UInt8])? {
        guard queueStart < queue.count else { return nil }
        let next = queue[queueStart]
        queue[queueStart].message = []
        queueStart += 1
        if queueStart == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueStart = 0
        } else if queueStart >= 32, queueStart * 2 >= queue.count {
            // A queue that never empties (a client keeping one call waiting behind a slow one)
            // drops the entries taken, so that it holds no more than the calls in flight.
            queue.removeFirst(queueStart)
            queueStart = 0
        }
        return next
    }
    /// Calls read but not answered yet (running, or finished behind one still running).
    var callsPending: UInt64 { nextCallSequence - nextReplySequence }

    /// The most calls of one connection read and not answered yet: at this many, its input
    /// waits (neither read nor parsed) until one is answered.
    static let maxCallsInFlight: UInt64 = 32

    /// Whether another message may be dispatched: not once closing or draining, nor while more than
    /// `outputBound` bytes of replies wait to be written (the client does not read), nor
    /// with `maxCallsInFlight` calls unanswered. Otherwise input waits (backpressure).
    func mayDispatch(outputBound: Int) -> Bool {
        !closeAfterFlush && !draining && output.count - outputOffset <= outputBound && callsPending < Self.maxCallsInFlight
    }

    /// Whether the socket is polled for input: not after end of file, nor while messages
    /// may not be dispatched, nor while bytes already read still wait to be dispatched (so
    /// that what a connection holds stays one read beside a message not complete yet).
    func wantsInput(outputBound: Int) -> Bool {
        !inputClosed && (lingering || (mayDispatch(outputBound: outputBound) && !hasUnscannedInput))
    }

    /// Whether calls wait for nothing but the connection's next turn (messages read already, or
    /// calls queued behind one that has ended): the loop is not to wait in `poll` for them.
    func hasHeldBackCalls(outputBound: Int) -> Bool {
        hasCallReadyToStart || (!lingering && hasUnscannedInput && mayDispatch(outputBound: outputBound))
    }

    /// Drops the output already written, so that appending does not grow the buffer.
    func compactOutput() {
        if outputOffset > 0, outputOffset == output.count {
            output.removeAll(keepingCapacity: true)
            outputOffset = 0
        }
    }

    /// Queues `reply` (NUL-terminated on the wire).
    func enqueue(_ reply: [UInt8]) {
        compactOutput()
        output.append(contentsOf: reply)
        output.append(0)
    }

    /// Queues wire bytes (replies already NUL-terminated).
    func enqueueWire(_ bytes: [UInt8]) {
        compactOutput()
        output.append(contentsOf: bytes)
    }

    /// Takes a reply that running call `sequence` sent before its end (a `more` call's
    /// progress). It goes out at once when the call is the oldest unanswered one and nothing
    /// waits to be written; otherwise (the client does not keep up, or an earlier call still
    /// runs) it is kept as the call's newest progress, replacing the one kept before, and goes
    /// out once the client has taken everything before it. Each progress reply reports a
    /// state the next one supersedes: the client misses intermediate states, never a call's
    /// final reply, and a call that streams for hours holds one reply at most, however little
    /// its client reads.
    func stream(_ reply: [UInt8], sequence: UInt64) {
        // The server queues no progress after a call's final reply (`dispatch`): coming
        // later, it could only be kept for ever, as nothing would take it.
        guard sequence >= nextReplySequence, finished[sequence] == nil else {
            assertionFailure("progress of call \(sequence) of connection \(id) after its final reply")
            return
        }
        progress[sequence] = reply
        flushInOrder()
    }

    /// Takes the replies (wire bytes) of call `sequence`, which has ended: its progress not
    /// written yet is dropped (the final reply supersedes it), and the replies go out in call
    /// order.
    func finish(_ sequence: UInt64, replies: [UInt8]) {
        if running == sequence { running = nil }
        progress[sequence] = nil
        finished[sequence] = replies
        flushInOrder()
    }

    /// Answers a message that is refused whole, never dispatched (too large, cut short by the
    /// end of input), with `reply` (without its NUL), in call order: after the replies of the
    /// calls before it.
    func answerInOrder(_ reply: [UInt8]) {
        finished[nextCallSequence] = reply + [0]
        nextCallSequence += 1
        flushInOrder()
    }

    /// Moves replies into the output in call order: every finished call in sequence, then the
    /// newest progress of the oldest call still running, once nothing else waits to be
    /// written (called again when the output is written, so that it never waits longer).
    func flushInOrder() {
        while let replies = finished.removeValue(forKey: nextReplySequence) {
            enqueueWire(replies)
            nextReplySequence += 1
        }
        if !hasPendingOutput, let newest = progress.removeValue(forKey: nextReplySequence) {
            enqueueWire(newest)
        }
    }
}
