import Synchronization
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Serves varlink on the control socket: `org.varlink.service` and `io.weavedi.Daemon`. Each
/// call runs in a WeaveDI request of its connection's session, within the call time limit;
/// privileged methods are checked against the `Authorizer`.
final class VarlinkService: ControlMessageHandler {
    let methods: DaemonMethods
    let store: ConfigurationStore
    let log: DaemonLog
    /// Whether the daemon's start is over: until it is, calls that read the services started
    /// after the control server wait for it (`DaemonMethods.isAnsweredWhileStarting`).
    let startGate: StartGate
    /// Who may change things: from the running configuration's admin lists (`adopt`).
    private let authorizer: Locked<Authorizer>
    /// Warnings any client can cause at will, each kind throttled (`LogThrottle`).
    private let malformedWarnings = LogThrottle()
    private let deniedWarnings = LogThrottle()
    /// Numbers the calls' requests.
    private let requestNumbers = Atomic<UInt64>(0)

    init(methods: DaemonMethods, store: ConfigurationStore, log: DaemonLog, startGate: StartGate) {
        self.methods = methods
        self.store = store
        self.log = log
        self.startGate = startGate
        let configuration = store.current
        authorizer = Locked(Authorizer(configuration.control, source: configuration.sourceName, log: log))
    }

    func mayAdminister(_ peer: ControlPeer) -> Bool {
        authorizer.withLock { $0 }.mayChange(peer.credentials, groups: { peer.groups })
    }

    /// A reload's admin users and groups, for the calls that follow. Names are looked up again
    /// at every reload, changed or not: an account deleted since, or whose id was given to
    /// another, must not keep its old id's rights.
    func adopt(_ configuration: DaemonConfiguration) {
        let control = configuration.control
        let fresh = Authorizer(control, source: configuration.sourceName, log: log)
        let previous = authorizer.withLock { current in
            defer { current = fresh }
            return current
        }
        guard fresh.adminUsers != previous.adminUsers || fresh.adminGroups != previous.adminGroups
            || fresh.adminUIDs != previous.adminUIDs || fresh.adminGIDs != previous.adminGIDs
        else { return }
        func list(_ accounts: [DaemonConfiguration.AccountReference]) -> String {
            accounts.isEmpty ? "none" : accounts.map(\.description).joined(separator: ", ")
        }
        func ids(_ ids: Set<UInt32>) -> String {
            ids.isEmpty ? "none" : ids.sorted().map(String.init).joined(separator: ", ")
        }
        log.notice("control", "administrators now: users \(list(control.adminUsers)); groups \(list(control.adminGroups)) "
            + "(uids \(ids(fresh.adminUIDs)); gids \(ids(fresh.adminGIDs)))")
    }

    /// The methods of `org.varlink.service` (`service(_:_:)` answers them): both read only.
    static let serviceMethods: Set<String> = ["GetInfo", "GetInterfaceDescription"]

    func handleInline(message: UnsafeBufferPointer<UInt8>, peer: ControlPeer, session: Session, replies: inout [UInt8]) -> Bool {
        let call: VarlinkCall
        switch decode(message, peer: peer) {
        case let .success(decoded): call = decoded
        case let .failure(failure):
            failure.reply.write(into: &replies)
            replies.append(0)
            return true
        }
        let (interface, method) = Self.split(call.method)
        // A oneway call of a method that changes nothing would come to nothing, not even a
        // reply: it is counted (its connection's session marked active) and not run, its
        // parameters not even read, so that such calls cost a client's turn no more than a parse.
        // (A method neither interface has is run, and answered `MethodNotFound` to nobody: it
        // counts as an error in the metrics.)
        if call.oneway, (interface == "org.varlink.service" && Self.serviceMethods.contains(method))
            || (interface == DaemonInterface.name && DaemonMethods.changesNothing(method))
        {
            countCall(in: session)
            methods.metrics.count(method: call.method, error: nil)
            return true
        }
        let inline = !call.upgrade && !call.more
            && (interface == "org.varlink.service" || (interface == DaemonInterface.name && DaemonMethods.isInline(method)))
        guard inline else { return false }
        // While the daemon starts, a call that waits for the start goes the asynchronous way.
        if interface == DaemonInterface.name, !DaemonMethods.isAnsweredWhileStarting(method), !startGate.isStarted { return false }
        // An inline call runs within one step of the I/O thread, so a request opened for it
        // could be seen by nothing but the call itself: only the methods that show open
        // requests run in one here. Every call still counts in its connection's session and
        // marks it active.
        let request = interface == DaemonInterface.name && DaemonMethods.requestShowingMethods.contains(method) ? open(session) : nil
        if request == nil { countCall(in: session) }
        let start = replies.count
        let error: String?
        if interface == "org.varlink.service" {
            let reply = service(method, call)
            reply.write(into: &replies)
            error = reply.error
        } else {
            error = methods.answerInline(method, call, into: &replies)
        }
        request?.closeWithoutWaiting()
        methods.metrics.count(method: call.method, error: error)
        if call.oneway { replies.removeLast(replies.count - start) } else { replies.append(0) }
        return true
    }

    func handle(message: [UInt8], peer: ControlPeer, session: Session, send: @escaping @Sendable ([UInt8]) -> Void) async -> [[UInt8]] {
        let call: VarlinkCall
        switch decode(message, peer: peer) {
        case let .success(decoded): call = decoded
        case let .failure(failure): return [failure.reply.encoded()]
        }
        let request = open(session)
        // A oneway call gets no reply at all: not the progress of `more` either.
        let reply = await answer(call, peer: peer) { early in if !call.oneway { send(early.encoded()) } }
        await request.close()
        methods.metrics.count(method: call.method, error: reply.error)
        return call.oneway ? [] : [reply.encoded()]
    }

    /// Decodes a call; a malformed one is logged, counted and answered with the failure.
    private func decode(_ message: [UInt8], peer: ControlPeer) -> Result<VarlinkCall, VarlinkFailure> {
        message.withUnsafeBufferPointer { decode($0, peer: peer) }
    }

    private func decode(_ message: UnsafeBufferPointer<UInt8>, peer: ControlPeer) -> Result<VarlinkCall, VarlinkFailure> {
        let control = store.current.control
        do {
            return .success(try VarlinkCall.decode(message, limits: JSONLimits(maxDepth: 64, maxBytes: control.maxMessageBytes, maxValues: VarlinkCall.maximumValues)))
        } catch {
            refuseMalformed(error, peer: peer)
            return .failure(error)
        }
    }

    /// Logs (throttled) and counts a malformed message's failure.
    private func refuseMalformed(_ failure: VarlinkFailure, peer: ControlPeer) {
        malformedWarnings.warning(log, "control", "connection \(peer.connectionID) (pid \(peer.credentials.pid), uid \(peer.credentials.uid)): malformed message: \(failure.reason ?? failure.name)")
        methods.metrics.count(method: "(malformed)", error: failure.name)
    }

    func unterminatedMessageReply(byteCount: Int, peer: ControlPeer) -> [UInt8]? {
        let failure = VarlinkFailure.invalidMessage(
            "the input ended inside a message: \(byteCount) bytes without the NUL byte that ends each message")
        refuseMalformed(failure, peer: peer)
        return failure.reply.encoded()
    }

    /// The call's WeaveDI request, in the connection's session (the call counted there).
    private func open(_ session: Session) -> Request {
        countCall(in: session)
        let request = session.openRequest(id: "call-\(requestNumbers.add(1, ordering: .relaxed).newValue)")
        _ = try? request.require(CallContext.self)
        return request
    }

    /// Counts a call in its connection's `ControlConnectionState` (resolving it marks the
    /// session active).
    private func countCall(in session: Session) {
        (try? session.require(ControlConnectionState.self))?.countCall()
    }

    /// `interface.Method` split at the last dot.
    static func split(_ method: String) -> (interface: String, method: String) {
        // The daemon's own interface without allocating its name (longer than a small string).
        var bytes = method
        let own = bytes.withUTF8 { utf8 -> String? in
            let prefix = daemonPrefix.count
            guard utf8.count > prefix, daemonPrefix.withUnsafeBufferPointer({ $0.elementsEqual(utf8[..<prefix]) }),
                !utf8[prefix...].contains(UInt8(ascii: "."))
            else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: utf8[prefix...]), as: UTF8.self)
        }
        if let own { return (DaemonInterface.name, own) }
        guard let dot = method.utf8.lastIndex(of: UInt8(ascii: ".")) else { return ("", method) }
        return (String(method[..<dot]), String(method[method.utf8.index(after: dot)...]))
    }

    private static let daemonPrefix = Array("\(DaemonInterface.name).".utf8)

    private func answer(_ call: VarlinkCall, peer: ControlPeer, stream: @escaping @Sendable (VarlinkReply) -> Void) async -> VarlinkReply {
        let (interface, method) = Self.split(call.method)
        if interface.isEmpty { return VarlinkFailure.methodNotFound(call.method).reply }
        if call.upgrade {
            return VarlinkFailure.invalidParameter("upgrade", reason: "no method of this service upgrades its connection to another protocol").reply
        }
        switch interface {
        case "org.varlink.service":
            return service(method, call)
        case DaemonInterface.name:
            // Closed by default: only a method listed as reading reaches its code for every
            // peer. An unknown name is MethodNotFound to whoever asks.
            if !DaemonInterface.readingMethods.contains(method), !mayAdminister(peer) {
                guard DaemonInterface.methodNames.contains(call.method) else { return VarlinkFailure.methodNotFound(call.method).reply }
                deniedWarnings.warning(log, "control", "denied \(call.method) to uid \(peer.credentials.uid) (pid \(peer.credentials.pid))")
                return VarlinkFailure.permissionDenied(call.method, uid: peer.credentials.uid).reply
            }
            let callTimeout = store.current.control.callTimeout
            // What is left of the call's time once the start is over: the time waited for it counts.
            var limit = callTimeout
            if !DaemonMethods.isAnsweredWhileStarting(method) {
                switch await waitForStart(call, peer: peer, limit: limit) {
                case let .success(left): limit = left
                case let .failure(failure): return failure.reply
                }
            }
            let methods = self.methods
            let outcome: Result<VarlinkReply, VarlinkFailure>
            if call.more && DaemonMethods.streams(method) {  // a stream (RunJob) runs as long as its job
                outcome = await Self.run { () async throws(VarlinkFailure) in try await methods.invoke(method, call, from: peer.credentials, stream: stream) }
            } else {
                let timed = await withTimeout(limit, clock: SystemHealthClock()) {
                    await Self.run { () async throws(VarlinkFailure) in try await methods.invoke(method, call, from: peer.credentials, stream: stream) }
                }
                // The limit the call had in all, `control.callTimeout`, as the client knows it:
                // not what was left of it after a wait for the start.
                outcome = timed ?? .failure(VarlinkFailure(
                    "io.weavedi.Daemon.CallTimedOut", [("method", .string(call.method)), ("seconds", .double(seconds(callTimeout)))]))
            }
            switch outcome {
            case let .success(reply): return reply
            case let .failure(failure): return failure.reply
            }
        default:
            return VarlinkFailure.interfaceNotFound(interface).reply
        }
    }

    /// Waits, within the call's time limit, for the daemon's start to be over: a call that
    /// reads the jobs or the health checks is never answered from a start half done (no jobs,
    /// checks not run yet). Returns what is left of `limit`, or the `NotReady` failure for a
    /// start still going at `limit`, or one that failed or that a shutdown ended.
    private func waitForStart(_ call: VarlinkCall, peer: ControlPeer, limit: Duration) async -> Result<Duration, VarlinkFailure> {
        if startGate.isStarted { return .success(limit) }
        log.debug("control", "connection \(peer.connectionID): \(call.method) waits for the daemon's start to finish")
        let began = ContinuousClock.now
        switch await startGate.wait(atMost: limit) {
        case .started:
            return .success(max(.zero, limit - (ContinuousClock.now - began)))
        case .starting:
            return .failure(.notReady(
                "the daemon is still starting after \(limit) (control.callTimeout); "
                    + "\(call.method) reads what is not started yet: call again once it is ready"))
        case let .ended(reason):
            return .failure(.notReady("the daemon \(reason)"))
        }
    }

    private static func run(_ body: () async throws(VarlinkFailure) -> VarlinkReply) async -> Result<VarlinkReply, VarlinkFailure> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    private func service(_ method: String, _ call: VarlinkCall) -> VarlinkReply {
        do { return try serviceReply(method, call) } catch { return error.reply }
    }

    private func serviceReply(_ method: String, _ call: VarlinkCall) throws(VarlinkFailure) -> VarlinkReply {
        switch method {
        case "GetInfo":
            try call.accept([])
            return VarlinkReply(parameters: [
                ("vendor", .string("WeaveDI")), ("product", .string("weavedid")), ("version", .string(DaemonVersion.current)),
                ("url", .string("file:///usr/share/doc/weavedi/README.md")),
                ("interfaces", .array([.string("org.varlink.service"), .string(DaemonInterface.name)])),
            ])
        case "GetInterfaceDescription":
            try call.accept(["interface"])
            guard let interface = try call.string("interface") else {
                throw .invalidParameter("interface", reason: "missing: the interface's name is required")
            }
            if let problem = VarlinkName.interfaceProblem(interface) { throw .invalidParameter("interface", reason: problem) }
            switch interface {
            case "org.varlink.service": return VarlinkReply(parameters: [("description", .string(DaemonInterface.serviceDescription))])
            case DaemonInterface.name: return VarlinkReply(parameters: [("description", .string(DaemonInterface.description))])
            default: return VarlinkFailure.interfaceNotFound(interface).reply
            }
        default:
            return VarlinkFailure.methodNotFound("org.varlink.service.\(method)").reply
        }
    }

    func limitReply(_ violation: ControlLimitViolation) -> [UInt8]? {
        let (limit, value): (String, Int) = switch violation {
        case let .messageTooLarge(bytes): ("message size", bytes)
        case let .tooManyClients(count): ("clients", count)
        case let .tooManyClientsOfUser(count): ("clients per user", count)
        case let .idle(duration): ("idle", Int(duration.components.seconds))
        }
        return VarlinkFailure("io.weavedi.Daemon.LimitExceeded", [("limit", .string(limit)), ("value", .int(value))]).reply.encoded()
    }
}
