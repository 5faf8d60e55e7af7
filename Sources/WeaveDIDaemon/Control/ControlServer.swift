import Synchronization
import WeaveDI
import WeaveDIPosix

/// The control socket: binds it (or adopts the one systemd passed), and serves every
/// connection on one I/O thread that never blocks on a client. Each connection is a WeaveDI
/// session; its messages (NUL-terminated) go to the `ControlMessageHandler`, calls may be
/// pipelined, and replies go back in call order.
public final class ControlServer: DaemonService, @unchecked Sendable {  // I/O-thread state is confined; shared state is in `commands` and atomics
    public let name = "control"
    let store: ConfigurationStore
    let log: DaemonLog
    let activation: SocketActivation?
    let container: WeaveDI.Container
    let handler: any ControlMessageHandler
    let registry: UnifiedRegistry
    /// Where the socket file bound is noted, for an exit that does not wait for `stop()`.
    let socketFiles: BoundSocketFiles

    enum Command {
        case replaceListener(FileDescriptor)
        /// A call's replies, as wire bytes (each NUL-terminated).
        case finished(connection: UInt64, sequence: UInt64, replies: [UInt8])
        /// A reply sent before its call ended, as wire bytes.
        case streamed(connection: UInt64, sequence: UInt64, reply: [UInt8])
        /// The configuration was replaced: the limits are read again.
        case reloaded
        case stop
    }

    let commands = Locked<[Command]>([])
    private let wakeRead: FileDescriptor
    private let wakeWrite: FileDescriptor
    private var thread: PosixThread?
    private let finishedSignal = Locked<CheckedContinuation<[Session], Never>?>(nil)
    let clientCount = Atomic<Int>(0)
    /// Warnings any client can cause at will, each kind throttled (`LogThrottle`).
    let refusedClientWarnings = LogThrottle()
    let oversizeWarnings = LogThrottle()
    /// The socket path and its inode, when this process bound it (and so watches it, gives it
    /// a reloaded mode and group, and removes it at stop), and whether its directory was made
    /// then (and so carries the socket's group).
    private let bound = Locked<(path: String, inode: UInt64, madeDirectory: Bool)?>(nil)
    var boundPath: String? { bound.withLock { $0?.path } }
    /// The path the socket systemd passed is bound to, and the file it was bound to there (nil
    /// when the kernel could not say, nor the path when adopted), which the `control.socket`
    /// check watches; nil without one, or for one bound to no path it can watch.
    private let passedFile = Locked<(path: String, file: BoundSocketFile?)?>(nil)
    var listener: FileDescriptor?

    /// A server for the daemon's `container`, answering with `handler`.
    public init(
        store: ConfigurationStore, log: DaemonLog, activation: SocketActivation?, container: WeaveDI.Container,
        handler: any ControlMessageHandler, registry: UnifiedRegistry, socketFiles: BoundSocketFiles = BoundSocketFiles()
    ) throws(Errno) {
        self.registry = registry
        self.socketFiles = socketFiles
        self.store = store
        self.log = log
        self.activation = activation
        self.container = container
        self.handler = handler
        let ends = try OwnedPipe.make(closeOnExec: true, nonBlocking: true).release()
        wakeRead = ends.read
        wakeWrite = ends.write
    }

    /// How many clients are connected.
    public var connectedClients: Int { clientCount.load(ordering: .relaxed) }

    /// Binds (or adopts) the socket and starts the I/O thread.
    public func start() async throws {
        let configuration = store.current.control
        if let passed = try activation?.listener(named: "control") {
            try passed.descriptor.setNonBlocking(true)
            listener = passed.descriptor
            log.info("control", "using the control socket passed by systemd (descriptor \(passed.descriptor.rawValue), \(SocketActivation.shown(passed.name)))")
            watchPassedFile(of: passed.descriptor)
        } else {
            listener = try bindSocket()
            log.info("control", "listening on \(JSONValue.quotedPathForMessage(configuration.socket))")
        }
        registerHealthCheck()
        // The I/O thread reads the limits as it wakes: a reload wakes it, so that they apply
        // from the next connection or call on, and to the deadlines it waits for.
        store.onReplace { [weak self] in self?.send(.reloaded) }
        thread = try PosixThread { [self] in
            let sessions = ioLoop()
            finishedSignal.withLock { $0 }?.resume(returning: sessions)
        }
    }

    /// Stops accepting and reading, answers the calls in flight (within the drain's grace: see
    /// `ioLoop`), closes every connection (closing its session) and removes the socket file if
    /// this process created it.
    public func stop() async {
        guard let thread else { return }
        let sessions = await withCheckedContinuation { (continuation: CheckedContinuation<[Session], Never>) in
            finishedSignal.withLock { $0 = continuation }
            send(.stop)
        }
        thread.join()
        self.thread = nil
        for session in sessions { await session.close() }
        if let bound = bound.withLock({ $0 }), BoundSocketFiles.remove(bound.path, ifInode: bound.inode) {
            log.info("control", "removed \(JSONValue.quotedPathForMessage(bound.path))")
        }
        socketFiles.forget(self)
    }

    /// Binds the configured socket and remembers its inode.
    private func bindSocket() throws -> FileDescriptor {
        let current = store.current
        let origin = current.socketOrigin
        let configuration = current.control
        var madeDirectory = false
        let owned = try ControlSocketBinder.bind(
            path: configuration.socket, mode: configuration.socketMode.rawValue, group: configuration.socketGroup, origin: origin,
            file: current.sourceName, log: log, madeDirectory: &madeDirectory)
        let inode = (try? FileStatus(path: configuration.socket, followSymlinks: false))?.inode ?? 0
        // A rebind (the health fix) into the directory made at start keeps it as the socket's.
        let carried = madeDirectory || bound.withLock { $0?.madeDirectory == true && $0?.path == configuration.socket }
        bound.withLock { $0 = (configuration.socket, inode, carried) }
        socketFiles.note(self, path: configuration.socket, inode: inode)
        return owned.release()
    }

    /// What is wrong with the socket file this process bound: missing, or replaced; nil while
    /// it is there and ours (or this process bound none).
    private func socketFileProblem() -> String? {
        guard let bound = bound.withLock({ $0 }) else { return nil }
        guard let status = try? FileStatus(path: bound.path, followSymlinks: false) else {
            return "the socket file \(JSONValue.quotedPathForMessage(bound.path)) is missing"
        }
        guard status.kind == .socket, status.inode == bound.inode else { return "the socket file \(JSONValue.quotedPathForMessage(bound.path)) was replaced" }
        return nil
    }

    /// Notes the path the socket systemd passed is bound to, and which file that was: the
    /// kernel says (`boundSocketFile`); where it cannot (no `unix_diag`), the file at the path
    /// now stands for it.
    private func watchPassedFile(of descriptor: FileDescriptor) {
        guard let path = (try? descriptor.localAddress())?.absoluteTextPath else { return }
        var file: BoundSocketFile?
        do { file = try descriptor.boundSocketFile() } catch {
            if let status = try? FileStatus(path: path, followSymlinks: false), status.kind == .socket {
                file = BoundSocketFile(device: status.device, inodeLowBits: UInt32(truncatingIfNeeded: status.inode))
            }
            log.info("control", "the kernel cannot say which file the passed socket is bound to (\(error)): "
                + "the control.socket check compares \(JSONValue.quotedPathForMessage(path)) with the file there now")
        }
        passedFile.withLock { $0 = (path, file) }
    }

    /// What is wrong with the socket file of the socket systemd passed: missing, or replaced
    /// (not the file it is bound to); nil while it is there, or when there is no path to watch.
    private func passedFileProblem() -> String? {
        guard let passed = passedFile.withLock({ $0 }) else { return nil }
        let restart = "restart weavedid.socket and weavedid.service (systemctl restart weavedid.socket weavedid.service): "
            + "systemd made the socket, and only it can make it again"
        guard let status = try? FileStatus(path: passed.path, followSymlinks: false) else {
            return "the socket file \(JSONValue.quotedPathForMessage(passed.path)) that systemd passed is missing, so no new client can connect; \(restart)"
        }
        if !(passed.file?.matches(status) ?? (status.kind == .socket)) {
            return "the socket file \(JSONValue.quotedPathForMessage(passed.path)) that systemd passed was replaced, so no new client reaches the daemon; \(restart)"
        }
        return nil
    }

    /// `control.socket`: the socket file is still there and still the socket's. For the socket
    /// this process bound, the fix binds it again (refusing if another daemon now listens
    /// there), and does nothing to a socket that is fine: binding it again would find itself
    /// listening there. The socket systemd passed has no fix: systemd owns it, and the daemon
    /// cannot make it again; the check says what to restart.
    private func registerHealthCheck() {
        if activation != nil, bound.withLock({ $0 }) == nil {
            registry.register(HealthCheck(name: "control.socket", tags: [HealthCheck.liveness, HealthCheck.readiness]) { [self] in
                guard let path = passedFile.withLock({ $0?.path }) else {
                    return .healthy("socket passed by systemd, bound to no path to watch")
                }
                if let problem = passedFileProblem() { return .unhealthy(problem, data: ["socket": path]) }
                return .healthy("listening on \(JSONValue.quotedPathForMessage(path)), passed by systemd", data: ["socket": path, "clients": "\(connectedClients)"])
            })
            return
        }
        registry.register(HealthCheck(name: "control.socket", tags: [HealthCheck.liveness, HealthCheck.readiness]) { [self] in
            guard let bound = bound.withLock({ $0 }) else { return .healthy("not listening yet") }
            if let problem = socketFileProblem() { return .unhealthy(problem, data: ["socket": bound.path]) }
            return .healthy("listening on \(JSONValue.quotedPathForMessage(bound.path))", data: ["socket": bound.path, "clients": "\(connectedClients)"])
        } fix: { [self] in
            let path = store.current.control.socket
            guard socketFileProblem() != nil else {
                throw FixNotApplicable("\(JSONValue.quotedPathForMessage(path)) is in place and listening: nothing to do")
            }
            let descriptor = try bindSocket()
            send(.replaceListener(descriptor))
            log.notice("control", "bound \(JSONValue.quotedPathForMessage(path)) again")
            return "bound \(JSONValue.quotedPathForMessage(path)) again"
        })
    }

    /// Refuses a reload that moves the socket (a restart is needed for that), or names a
    /// `socketGroup` that does not exist; otherwise applies the new `socketMode` and
    /// `socketGroup` to the socket this process bound (and the group to its directory, when
    /// made at start), and the new admin users and groups to the calls that follow.
    ///
    /// The first service offered a reload, and the only one that refuses any: it checks
    /// everything before it changes anything, so a refused reload changes nothing.
    public func reload(_ configuration: DaemonConfiguration) async throws {
        let current = store.current.control
        let wanted = configuration.control
        if wanted.socket != current.socket {
            let change = Self.socketChange(
                from: (current.socket, store.current.socketOrigin), to: (wanted.socket, configuration.socketOrigin))
            guard activation != nil else { throw ReloadRefusal(description: change + "; restart the daemon to move it") }
            // The socket systemd passed is the one served whatever the file says: a change
            // there moves nothing, which the operator is to hear rather than believe it did.
            let served = passedFile.withLock { $0?.path }.map { " (\(JSONValue.quotedPathForMessage($0)))" } ?? ""
            log.warning("control", "\(change): not used, as the daemon serves the socket systemd passed\(served); to move "
                + "it, change ListenStream= of weavedid.socket (systemctl edit weavedid.socket), then restart the socket and the service")
        }
        if let bound = bound.withLock({ $0 }) {
            let changed = wanted.socketMode != current.socketMode || wanted.socketGroup != current.socketGroup
            try applySocketAttributes(
                wanted, file: configuration.sourceName, to: bound, onlyWhereTheFileDiffers: !changed)
        }
        handler.adopt(configuration)
    }

    /// A move of the socket, saying where each path came from when the field does not set it:
    /// `control.socket (from runtimeDirectory) changed from "/run/a/control.sock" to
    /// "/run/b/control.sock"` (the operator changed `runtimeDirectory`, not `control.socket`), or,
    /// for two origins, `… changed from "…" (from control.socket) to "…" (from runtimeDirectory)`.
    static func socketChange(
        from old: (path: String, origin: DaemonConfiguration.SocketOrigin), to new: (path: String, origin: DaemonConfiguration.SocketOrigin)
    ) -> String {
        let paths = (JSONValue.quotedPathForMessage(old.path), JSONValue.quotedPathForMessage(new.path))
        if old.origin == new.origin {
            let origin = old.origin == .controlSocket ? "" : " (from \(old.origin))"
            return "control.socket\(origin) changed from \(paths.0) to \(paths.1)"
        }
        return "control.socket changed from \(paths.0) (from \(old.origin)) to \(paths.1) (from \(new.origin))"
    }

    /// Gives the bound socket file `wanted`'s mode and group (no group: the daemon's own, as a
    /// new socket gets), and its directory the group when it was made at start; warns when the
    /// group cannot reach it through a directory the daemon did not make. `file`, the
    /// configuration's source, is named in a refusal.
    ///
    /// The group's name is looked up again at every reload: with `onlyWhereTheFileDiffers`
    /// (the fields are as they were), the file is changed only when its mode or group is not
    /// what they give now, as after the group was deleted and its name given to another gid;
    /// a socket file missing or replaced is left to the `control.socket` check.
    private func applySocketAttributes(
        _ wanted: DaemonConfiguration.Control, file: String, to bound: (path: String, inode: UInt64, madeDirectory: Bool),
        onlyWhereTheFileDiffers: Bool = false
    ) throws {
        var gid: UInt32
        do {
            gid = try wanted.socketGroup.map { (group) throws(ControlSocketBinder.Refusal) in try ControlSocketBinder.groupID(group, file: file) }
                ?? CurrentProcess.effectiveGroupID
        } catch {
            throw ReloadRefusal(description: error.description)
        }
        if onlyWhereTheFileDiffers {
            guard let status = try? FileStatus(path: bound.path, followSymlinks: false), status.kind == .socket,
                status.inode == bound.inode
            else { return }
            // Without a configured group, the file keeps the group it was bound with (a set-gid
            // directory's, say): nothing changed asks for another.
            if wanted.socketGroup == nil { gid = status.groupID }
            if status.groupID == gid, status.permissions.rawValue & 0o7777 == wanted.socketMode.rawValue { return }
        }
        let before: FileStatus
        do {
            before = try ControlSocketBinder.setAttributes(ofSocket: bound.path, mode: wanted.socketMode, group: gid, inode: bound.inode)
        } catch {
            throw ReloadRefusal(description: "control.socket: \(error.description); let the control.socket health check bind it "
                + "again, or restart the daemon")
        }
        let directory = ControlSocketBinder.parent(of: bound.path)
        if bound.madeDirectory {
            do { try FileDescriptor.currentWorkingDirectory.changeOwner(at: directory, group: gid) } catch {
                _ = try? ControlSocketBinder.setAttributes(
                    ofSocket: bound.path, mode: before.permissions, group: before.groupID, inode: bound.inode)
                throw ReloadRefusal(description: "control.socket: cannot give \(directory) the group \(gid): \(error)")
            }
        } else if wanted.socketGroup != nil {
            ControlSocketBinder.warnIfGroupCannotReach(bound.path, gid, log: log)
        }
        log.notice("control", "\(JSONValue.quotedPathForMessage(bound.path)): mode \(wanted.socketMode), group \(gid)")
    }

    func send(_ command: Command) {
        commands.withLock { $0.append(command) }
        var byte: UInt8 = 1
        _ = withUnsafeBytes(of: &byte) { try? wakeWrite.write($0) }
    }

    func drainWake() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while let n = try? buffer.withUnsafeMutableBytes({ try wakeRead.read(into: $0) }), n > 0 {}
    }

    var wakeDescriptor: FileDescriptor { wakeRead }
}

/// A reload a service cannot apply.
public struct ReloadRefusal: Error, CustomStringConvertible {
    /// Why.
    public var description: String
}
