import WeaveDI
import WeaveDIPosix

extension ControlServer {
    /// The I/O thread: accept, read, dispatch, write, enforce limits; returns, once told to
    /// stop and drained, the sessions of the connections it closed since.
    ///
    /// Told to stop, it closes the listener and dispatches nothing more, but goes on writing:
    /// each connection closes once the calls it had begun are answered and the replies
    /// written (a `RunJob` whose run the shutdown cancelled hears so), or when the drain's
    /// grace (`drainGrace`) is over.
    func ioLoop() -> [Session] {
        var connections: [UInt64: ControlConnection] = [:]
        var nextID: UInt64 = 1
        /// Set by `stop`: when the connections still open are closed whatever they wait for.
        var drainDeadline: Duration?
        /// The sessions of the connections closed while draining: `stop` closes them.
        var drained: [Session] = []
        // One receive buffer for every connection: messages are taken from it in place.
        let receiveBuffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 65_536)
        defer { receiveBuffer.deallocate() }
        var acceptPause = AcceptPause()
        // The limits in effect, read once each time the loop wakes (the configuration is copied
        // to read them): a reload wakes the loop (`onReplace`), so what it waits for next is by
        // the limits read after its wait.
        var limits = store.current.control
        while true {
            let now = monotonicNow()
            var entries = [PollDescriptor(wakeDescriptor, events: .readable)]
            // While accept fails for want of descriptors, the listener is left out: a pending
            // connection keeps it readable, and polling it would spin.
            let listening = listener != nil && !acceptPause.isPaused(at: now)
            if let listener, listening { entries.append(PollDescriptor(listener, events: .readable)) }
            let order = Array(connections.keys)
            var polled: [UInt64: Int] = [:]
            for id in order {
                let connection = connections[id]!
                var events: PollEvents = []
                if connection.wantsInput(outputBound: limits.maxMessageBytes) { events.insert(.readable) }
                if connection.hasPendingOutput { events.insert(.writable) }
                // Nothing to wait for on the socket (only for calls in flight): not polled, for
                // poll would report a hang-up again and again.
                if events.isEmpty { continue }
                polled[id] = entries.count
                entries.append(PollDescriptor(connection.descriptor, events: events))
            }
            let nextIdle = connections.values.compactMap { $0.idleDeadline(limits.idleTimeout) }.min()
            var wakeAt = [nextIdle, listener == nil ? nil : acceptPause.pausedUntil(now), drainDeadline].compactMap { $0 }.min()
            // A connection whose calls, read already, wait only for its next turn: no waiting.
            if connections.values.contains(where: { $0.hasHeldBackCalls(outputBound: limits.maxMessageBytes) }) { wakeAt = now }
            _ = try? PollDescriptor.poll(&entries, timeout: wakeAt.map { max(.zero, $0 - now) })
            let after = monotonicNow()
            limits = store.current.control
            let idleLimit = limits.idleTimeout

            if entries[0].returnedEvents.contains(.readable) {
                drainWake()
                let pending = commands.withLock { queue in
                    defer { queue.removeAll() }
                    return queue
                }
                for command in pending {
                    switch command {
                    case .stop:
                        guard drainDeadline == nil else { continue }
                        drainDeadline = after + drainGrace
                        if let listener {
                            try? listener.close()
                            self.listener = nil
                        }
                        for connection in connections.values { connection.draining = true }
                    case let .replaceListener(descriptor):
                        guard drainDeadline == nil else {
                            try? descriptor.close()  // bound again as the server stops: not listened on
                            continue
                        }
                        try? listener?.close()
                        listener = descriptor
                    case let .finished(id, sequence, replies):
                        guard let connection = connections[id] else { continue }
                        connection.finish(sequence, replies: replies)
                        connection.lastActivity = after
                    case let .streamed(id, sequence, reply):
                        guard let connection = connections[id] else { continue }
                        connection.stream(reply, sequence: sequence)
                    case .reloaded:
                        continue  // the limits were read as the loop woke
                    }
                }
            }
            if listening, entries[1].returnedEvents.contains(.readable) {
                acceptAll(into: &connections, nextID: &nextID, now: after, limits: limits, pause: &acceptPause)
            } else if listener != nil, !listening, !acceptPause.isPaused(at: after) {
                // The pause is over: try at once rather than after the next poll.
                acceptAll(into: &connections, nextID: &nextID, now: after, limits: limits, pause: &acceptPause)
            }
            for id in order {
                guard let connection = connections[id] else { continue }
                let events = polled[id].map { entries[$0].returnedEvents } ?? []
                var alive = true
                connection.callsLeftInTurn = Self.callsPerTurn
                // Calls that waited for the one that ran go before anything read later.
                startQueuedCalls(on: connection)
                // Messages held back while the connection waited (output, calls in flight, or its turn) go first.
                if connection.hasUnscannedInput, connection.mayDispatch(outputBound: limits.maxMessageBytes),
                    !takeBufferedMessages(on: connection, limit: limits.maxMessageBytes, now: after)
                {
                    refuseTooLarge(connection, limit: limits.maxMessageBytes)
                }
                if connection.wantsInput(outputBound: limits.maxMessageBytes),
                    events.contains(.readable) || events.contains(.hangUp) || events.contains(.error)
                {
                    alive = read(connection, now: after, limit: limits.maxMessageBytes, buffer: receiveBuffer)
                }
                if alive { answerUnterminatedMessage(on: connection) }
                if alive, connection.hasPendingOutput { alive = write(connection, now: after) }
                if alive, connection.isDone, !connection.hasPendingOutput {
                    alive = linger(connection, now: after)
                }
                if alive, let deadline = connection.idleDeadline(idleLimit), after >= deadline {
                    // Silent, or waiting to close while its client reads nothing.
                    log.debug("control", "connection \(id) idle for \(idleLimit); closing")
                    if !connection.closeAfterFlush, let reply = handler.limitReply(.idle(limit: idleLimit)) { connection.enqueue(reply) }
                    _ = write(connection, now: after)
                    alive = false
                }
                if !alive {
                    let session = close(connection, in: &connections)
                    if drainDeadline == nil {
                        Task { await session.close() }
                    } else {
                        drained.append(session)
                    }
                }
            }
            if let drainDeadline, connections.isEmpty || after >= drainDeadline {
                return drained + shutDown(Array(connections.values))
            }
        }
    }

    /// How long a stop waits for the calls in flight: 1 s, or half of `shutdownTimeout` when
    /// that is shorter, so that the drain never costs a shutdown its exit status (the shutdown's
    /// own, read once when it began: `ConfigurationStore.beginShutdown()`).
    private var drainGrace: Duration {
        min(.seconds(1), store.shutdownTimeout / 2)
    }

    /// How many of `maxClients` places only administrators may take: one in eight (none
    /// below 8).
    static func placesKeptForAdministrators(of maxClients: Int) -> Int {
        maxClients / 8
    }

    /// Why `peer` may not connect, if it may not: every place taken; the last places, kept for
    /// administrators, left; or, for a user who is no administrator, `maxClientsPerUser`
    /// connections of theirs open already.
    static func refusal(
        of peer: ControlPeer, among connections: [UInt64: ControlConnection], limits: DaemonConfiguration.Control,
        mayAdminister: @autoclosure () -> Bool
    ) -> (why: String, violation: ControlLimitViolation)? {
        if connections.count >= limits.maxClients {
            return ("\(limits.maxClients) clients already connected", .tooManyClients(limit: limits.maxClients))
        }
        let reserved = placesKeptForAdministrators(of: limits.maxClients)
        let nearlyFull = connections.count >= limits.maxClients - reserved
        guard nearlyFull || connections.count >= limits.maxClientsPerUser, !mayAdminister() else { return nil }
        if nearlyFull {
            return (
                "\(connections.count) clients connected, and the last \(reserved) places are kept for administrators",
                .tooManyClients(limit: limits.maxClients))
        }
        let uid = peer.credentials.uid
        let own = connections.values.reduce(0) { $1.peer.credentials.uid == uid ? $0 + 1 : $0 }
        guard own >= limits.maxClientsPerUser else { return nil }
        return (
            "uid \(uid) has \(own) connections open already, the most one user may have (control.maxClientsPerUser)",
            .tooManyClientsOfUser(limit: limits.maxClientsPerUser))
    }

    /// Accepts every pending connection. When accept fails for another reason than an empty
    /// queue (no descriptor left, `EMFILE` or `ENFILE`, or no memory), or only descriptors of
    /// the reserve are free, the listener pauses: the connections wait in the listen queue until
    /// a retry succeeds.
    private func acceptAll(
        into connections: inout [UInt64: ControlConnection], nextID: inout UInt64, now: Duration,
        limits: DaemonConfiguration.Control, pause: inout AcceptPause
    ) {
        guard let listener else { return }
        while true {
            let accepted: OwnedDescriptor
            do {
                // Never into the reserve kept free for the runtime (`DescriptorReserve`): while
                // only its descriptors are free, clients wait in the listen queue (`EMFILE`),
                // and a connection the kernel numbers in it, as another thread took the last
                // descriptors below it, is moved onto one held for it, not closed unanswered.
                accepted = try listener.acceptOutsideReserve(nonBlocking: true)
            } catch .wouldBlock {
                return
            } catch .connectionAborted {
                continue  // a client that gave up while queued
            } catch {
                pause.failed(error, at: now, connections: connections.count, log: log)
                return
            }
            pause.succeeded(at: now, log: log)
            let descriptor = accepted.release()
            guard let credentials = try? descriptor.peerCredentials() else {
                try? descriptor.close()
                continue
            }
            let id = nextID
            let peer = ControlPeer(connectionID: id, credentials: credentials, groups: (try? descriptor.peerGroups()) ?? [])
            // The last places are kept for administrators, so that no other user can lock
            // them (root among them) out by holding every connection.
            if let (why, violation) = Self.refusal(of: peer, among: connections, limits: limits, mayAdminister: handler.mayAdminister(peer)) {
                refusedClientWarnings.warning(log, "control", "refused a client (pid \(credentials.pid), uid \(credentials.uid)): \(why)")
                if var reply = handler.limitReply(violation) {
                    reply.append(0)
                    _ = try? descriptor.sendAll(reply)
                }
                // What the client sent already (its call, as a rule) is read first: closing with
                // it unread would reset the connection, and the client would not see the reply.
                try? descriptor.shutdown(.write)
                var scratch = [UInt8](repeating: 0, count: 4096)
                for _ in 0..<64 {
                    guard let count = try? scratch.withUnsafeMutableBytes({ try descriptor.receive(into: $0) }), count > 0 else { break }
                }
                try? descriptor.close()
                continue
            }
            nextID += 1
            // The connection's own limit (`control.idleTimeout`) ends an idle one, and its session
            // with it: the `container.sessions` fix must not close the session of a connection
            // still open (a long idleTimeout beside a short health.sessionIdleLimit).
            let session = container.openSession(
                id: "control-\(id)",
                attributes: ["uid": "\(credentials.uid)", "gid": "\(credentials.gid)", "pid": "\(credentials.pid)", "kind": "control"],
                closesWhenIdle: false)
            connections[id] = ControlConnection(id: id, descriptor: descriptor, peer: peer, session: session, now: now)
            clientCount.add(1, ordering: .relaxed)
            log.debug("control", "connection \(id) from pid \(credentials.pid) uid \(credentials.uid)")
        }
    }

    /// Reads what is available and dispatches complete messages, until the connection may not
    /// dispatch more (its pending output is over `limit`, the message size limit, or it has
    /// the most calls in flight) or has had its turn (`callsPerTurn` messages dispatched, or
    /// `readsPerTurn` reads); false when the connection ends. Messages read beyond its turn
    /// stay buffered, and nothing more is read until they are dispatched.
    private func read(_ connection: ControlConnection, now: Duration, limit: Int, buffer: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        if connection.lingering { return discardInput(connection, buffer: buffer) }
        for _ in 0..<Self.readsPerTurn where connection.mayDispatch(outputBound: limit) && connection.callsLeftInTurn > 0 {
            let count: Int
            do {
                count = try connection.descriptor.receive(into: UnsafeMutableRawBufferPointer(buffer))
            } catch {
                return isTransient(error)
            }
            if count == 0 {
                // The client shut its writing side: it is read no more; the connection closes
                // once the calls read are answered and written (or at its idle deadline).
                connection.inputClosed = true
                return true
            }
            // Bytes alone are no activity (a client sending one byte at a time would hold its
            // place for ever): only a complete message is, or a reply delivered.
            let received = UnsafeBufferPointer(rebasing: buffer[..<count])
            let complete: Bool
            if !connection.hasBufferedInput {
                // Messages are taken from the receive buffer in place; only a rest is kept.
                connection.input.removeAll(keepingCapacity: true)
                let (start, scanned, fits) = takeMessages(
                    from: received, start: 0, scanned: 0, on: connection, limit: limit, now: now)
                connection.input.append(contentsOf: received[start...])
                connection.inputStart = 0
                connection.inputScanned = scanned - start
                complete = fits
            } else {
                connection.input.append(contentsOf: received)
                complete = takeBufferedMessages(on: connection, limit: limit, now: now)
            }
            guard complete else {
                refuseTooLarge(connection, limit: limit)
                return true
            }
            if count < buffer.count || connection.hasUnscannedInput { return true }
        }
        return true
    }

    /// The most reads of one connection in one turn of the I/O loop (256 KiB with the 64 KiB
    /// receive buffer), however few messages they hold.
    static let readsPerTurn = 4

    /// The most messages of one connection dispatched in one turn of the I/O loop: a client
    /// that sends without pause, calls that need no reply (`oneway`) say, which neither fill
    /// its output nor stay in flight, has the rest dispatched at its next turn, after every
    /// other connection has had its own. A turn of a flooding client is what another waits
    /// for: bounded in bytes alone (256 KiB), it was some 4,700 small calls answered on this
    /// thread, each as costly as its method (`CheckCycles`, `ListSessions`), and 16 such
    /// connections held a `Ping` of root's for seconds.
    static let callsPerTurn = 32

    /// Whether a connection with nothing left to write stays open: one that broke a limit
    /// and whose client may still be sending lingers (`ControlConnection.lingering`) with
    /// its writing side shut, until its client closes, its idle deadline or the server's stop;
    /// any other closes.
    private func linger(_ connection: ControlConnection, now: Duration) -> Bool {
        if connection.lingering { return !connection.draining }
        guard connection.closeAfterFlush, !connection.inputClosed, !connection.draining else { return false }
        guard (try? connection.descriptor.shutdown(.write)) != nil else { return false }
        connection.lingering = true
        connection.lastActivity = now
        return true
    }

    /// Reads and drops what a lingering connection's client sends (a bounded amount per turn,
    /// so that it cannot keep the I/O thread from the others); false at its end.
    private func discardInput(_ connection: ControlConnection, buffer: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        for _ in 0..<16 {
            do {
                if try connection.descriptor.receive(into: UnsafeMutableRawBufferPointer(buffer)) == 0 { return false }
            } catch {
                return isTransient(error)
            }
        }
        return true
    }

    /// At end of input, once every complete message is dispatched, the bytes after the last NUL
    /// are a message that never ended: answered in call order with the handler's error, so that
    /// the client learns why its call got no reply (only whitespace there is no message).
    private func answerUnterminatedMessage(on connection: ControlConnection) {
        guard connection.inputClosed, !connection.hasUnscannedInput, connection.hasBufferedInput,
            !connection.closeAfterFlush, !connection.draining
        else { return }
        defer { connection.discardInput() }
        let rest = connection.input[connection.inputStart...]
        let whitespace: [UInt8] = [0x20, 0x09, 0x0A, 0x0D]
        guard rest.contains(where: { !whitespace.contains($0) }),
            let reply = handler.unterminatedMessageReply(byteCount: rest.count, peer: connection.peer)
        else { return }
        connection.answerInOrder(reply)
    }

    /// Answers a message over `limit` bytes with the limit error, in call order (after the
    /// replies of the calls before it), then closes once everything is written.
    private func refuseTooLarge(_ connection: ControlConnection, limit: Int) {
        let peer = connection.peer.credentials
        oversizeWarnings.warning(
            log, "control", "connection \(connection.id) (pid \(peer.pid), uid \(peer.uid)) sent a message over \(limit) bytes; closing it")
        if let reply = handler.limitReply(.messageTooLarge(limit: limit)) { connection.answerInOrder(reply) }
        connection.discardInput()
        connection.closeAfterFlush = true
    }

    /// Dispatches the complete messages buffered in the connection's input.
    private func takeBufferedMessages(on connection: ControlConnection, limit: Int, now: Duration) -> Bool {
        let (start, scanned, fits) = connection.input.withUnsafeBufferPointer { input in
            takeMessages(
                from: input, start: connection.inputStart, scanned: connection.inputScanned, on: connection, limit: limit, now: now)
        }
        connection.inputStart = start
        connection.inputScanned = scanned
        connection.compactInput()
        return fits
    }

    /// Dispatches every complete (NUL-terminated) message of `bytes` from `start` on, in order,
    /// while the connection may dispatch (its pending output within `limit`, calls in flight
    /// under the cap, messages left in its turn: `callsLeftInTurn`), searching for NULs only from `scanned` (the bytes before it hold none); returns where the
    /// first message not dispatched starts and how far the bytes were searched, and false as
    /// `fits` when a message exceeds `limit` bytes. A message taken is the connection's
    /// activity (`now`).
    private func takeMessages(
        from bytes: UnsafeBufferPointer<UInt8>, start: Int, scanned: Int, on connection: ControlConnection, limit: Int,
        now: Duration
    ) -> (start: Int, scanned: Int, fits: Bool) {
        var start = start
        var from = scanned
        while connection.mayDispatch(outputBound: limit), connection.callsLeftInTurn > 0 {
            guard let end = bytes[from...].firstIndex(of: 0) else { return (start, bytes.count, bytes.count - start <= limit) }
            if end - start > limit { return (start, end, false) }
            connection.callsLeftInTurn -= 1
            dispatch(UnsafeBufferPointer(rebasing: bytes[start..<end]), on: connection)
            connection.lastActivity = now
            start = end + 1
            from = start
        }
        return (start, from, true)  // the rest waits until the connection may dispatch again
    }

    /// Dispatches call `message`: it starts at once when no earlier call of the connection
    /// runs or waits its turn (the fast path: an inline call is answered straight into the
    /// output); otherwise it is queued behind them, to start once they have ended
    /// (`startQueuedCalls`). A connection's calls, `oneway` ones included, so run one at a time,
    /// in the order sent, whether they are answered on this thread or run as tasks.
    private func dispatch(_ message: UnsafeBufferPointer<UInt8>, on connection: ControlConnection) {
        let sequence = connection.nextCallSequence
        connection.nextCallSequence += 1
        if connection.isBusy {
            connection.enqueueCall(sequence, Array(message))
            return
        }
        start(message, sequence: sequence, on: connection)
    }

    /// Starts the calls that waited for the one that ran, oldest first, while none runs (an
    /// inline call ends as it starts) and the connection has calls left in its turn.
    private func startQueuedCalls(on connection: ControlConnection) {
        while connection.hasCallReadyToStart, connection.callsLeftInTurn > 0, let next = connection.dequeueCall() {
            connection.callsLeftInTurn -= 1
            next.message.withUnsafeBufferPointer { start($0, sequence: next.sequence, on: connection) }
        }
    }

    /// Starts call `sequence`, the oldest unanswered one, while no other runs: answered at once
    /// on this thread when it never suspends (its reply straight into the output), or run as a
    /// task, the connection's `running` call until its end (`.finished`).
    private func start(_ message: UnsafeBufferPointer<UInt8>, sequence: UInt64, on connection: ControlConnection) {
        assert(connection.running == nil && sequence == connection.nextReplySequence, "call \(sequence) started out of turn")
        connection.compactOutput()
        if handler.handleInline(message: message, peer: connection.peer, session: connection.session, replies: &connection.output) {
            connection.nextReplySequence += 1
            // A call that waited its turn may have a refusal parked behind it (a message too
            // large, one cut short by the end of input): out now, as the output of a `oneway`
            // call, which has none, would not bring it.
            if !connection.finished.isEmpty { connection.flushInOrder() }
            return
        }
        connection.running = sequence
        let id = connection.id, peer = connection.peer, session = connection.session
        let handler = self.handler
        let owned = Array(message)
        // Open while the call runs. Progress is queued with this lock held, and the call's end
        // takes it before its final reply is queued: no progress can follow the final reply,
        // even sent by code that kept the closure past the call.
        let streaming = Locked(true)
        Task {
            let replies = await handler.handle(message: owned, peer: peer, session: session) { [weak self] reply in
                streaming.withLock { open in
                    if open { self?.send(.streamed(connection: id, sequence: sequence, reply: reply + [0])) }
                }
            }
            streaming.withLock { $0 = false }
            var wire: [UInt8] = []
            for reply in replies {
                wire.append(contentsOf: reply)
                wire.append(0)
            }
            self.send(.finished(connection: id, sequence: sequence, replies: wire))
        }
    }

    /// Writes what the socket takes; false when the peer is gone. A client that has taken
    /// every reply is active.
    private func write(_ connection: ControlConnection, now: Duration) -> Bool {
        while connection.hasPendingOutput {
            do {
                let sent = try connection.output[connection.outputOffset...].withUnsafeBytes { try connection.descriptor.send($0) }
                connection.outputOffset += sent
                if !connection.hasPendingOutput {
                    connection.lastActivity = now
                    connection.flushInOrder()  // the progress kept while the client was behind
                }
            } catch {
                return isTransient(error)
            }
        }
        return true
    }

    /// Closes the connection; returns its session, for the caller to close.
    private func close(_ connection: ControlConnection, in connections: inout [UInt64: ControlConnection]) -> Session {
        connections.removeValue(forKey: connection.id)
        try? connection.descriptor.close()
        clientCount.add(-1, ordering: .relaxed)
        log.debug("control", "connection \(connection.id) closed")
        return connection.session
    }

    /// Closes the connections the drain's grace left open (writing what each socket still
    /// takes); returns their sessions.
    private func shutDown(_ open: [ControlConnection]) -> [Session] {
        let now = monotonicNow()
        for connection in open {
            _ = write(connection, now: now)
            if connection.callsInFlight {
                // Calls waiting behind the one still running are never started, and a reply
                // behind it (a refusal) is not written either: replies go in call order.
                let unanswered = connection.callsPending
                let waiting = connection.queue.count - connection.queueStart
                let behind = waiting == 0 ? "" : ", \(waiting) waiting behind it, not started"
                log.warning("control", "connection \(connection.id) closed with \(unanswered) call(s) unanswered (\(connection.running == nil ? 0 : 1) still running \(drainGrace) into the shutdown\(behind))")
            }
            try? connection.descriptor.close()
        }
        clientCount.store(0, ordering: .relaxed)
        return open.map(\.session)
    }

    /// Whether a socket error only means "not now".
    private func isTransient(_ error: any Error) -> Bool {
        guard let errno = error as? Errno else { return false }
        return errno == .wouldBlock || errno == .resourceTemporarilyUnavailable || errno == .interrupted
    }

    func monotonicNow() -> Duration {
        .nanoseconds(Int64(SystemClock.monotonicNanoseconds()))
    }
}
