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

    enum Command {
        case finished(connection: UInt64, sequence: UInt64, replies: [[UInt8]])
        case streamed(connection: UInt64, sequence: UInt64, reply: [UInt8])
        case stop
    }

    let commands = Locked<[Command]>([])
    private let wakeRead: FileDescriptor
    private let wakeWrite: FileDescriptor
    private var thread: PosixThread?
    private let finishedSignal = Locked<CheckedContinuation<[Session], Never>?>(nil)
    let clientCount = Atomic<Int>(0)
    /// The socket path, when this process bound it (and so removes it at stop).
    private(set) var boundPath: String?
    var listener: FileDescriptor?

    /// A server for the daemon's `container`, answering with `handler`.
    public init(
        store: ConfigurationStore, log: DaemonLog, activation: SocketActivation?, container: WeaveDI.Container,
        handler: any ControlMessageHandler
    ) throws(Errno) {
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
            try passed.setNonBlocking(true)
            listener = passed
            log.info("control", "using the control socket passed by systemd (descriptor \(passed.rawValue))")
        } else {
            let owned = try ControlSocketBinder.bind(path: configuration.socket, mode: configuration.socketMode.rawValue, group: configuration.socketGroup, log: log)
            listener = owned.release()
            boundPath = configuration.socket
            log.info("control", "listening on \(configuration.socket)")
        }
        thread = try PosixThread { [self] in
            let sessions = ioLoop()
            finishedSignal.withLock { $0 }?.resume(returning: sessions)
        }
    }

    /// Stops accepting, closes every connection (closing its session) and removes the socket
    /// file if this process created it.
    public func stop() async {
        guard let thread else { return }
        let sessions = await withCheckedContinuation { (continuation: CheckedContinuation<[Session], Never>) in
            finishedSignal.withLock { $0 = continuation }
            send(.stop)
        }
        thread.join()
        self.thread = nil
        for session in sessions { await session.close() }
        if let boundPath {
            try? FileDescriptor.currentWorkingDirectory.unlink(at: boundPath)
            log.info("control", "removed \(boundPath)")
        }
    }

    /// Refuses a reload that moves the socket (a restart is needed for that).
    public func reload(_ configuration: DaemonConfiguration) async throws {
        let current = store.current.control
        if configuration.control.socket != current.socket, activation == nil {
            throw ReloadRefusal(description: "control.socket changed from \(current.socket) to \(configuration.control.socket); restart the daemon to move it")
        }
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
