import WeaveDI
import WeaveDIPosix

/// What the daemon knows about its process before anything starts: the environment, how it
/// was started, where it logs and how it talks to systemd.
public final class DaemonContext: Sendable {
    /// The process environment at start.
    public let environment: [String: String]
    /// The working directory at start.
    public let workingDirectory: String
    /// `--config PATH`, if given.
    public let configPath: String?
    /// The logger.
    public let log: DaemonLog
    /// systemd notifications.
    public let notifier: SystemdNotifier
    /// Sockets passed by systemd, if any.
    public let activation: SocketActivation?
    /// Wakes the main loop when the daemon is done.
    public let waker: Waker
    /// The control socket files bound (and not removed yet), which an exit past
    /// `shutdownTimeout` removes.
    public let socketFiles = BoundSocketFiles()
    /// Whether the start is over: the control calls that read the services wait on it.
    let startGate = StartGate()

    /// Creates the context.
    public init(
        environment: [String: String], workingDirectory: String, configPath: String?, log: DaemonLog,
        notifier: SystemdNotifier, activation: SocketActivation?, waker: Waker
    ) {
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.configPath = configPath
        self.log = log
        self.notifier = notifier
        self.activation = activation
        self.waker = waker
    }

    /// The listening socket systemd passed for the control service, the one it serves
    /// (`SocketActivation.listener(named:)`), and the address it is bound to (nil when that
    /// cannot be read); nil without socket activation, or when the passed sockets name none.
    var passedControlSocket: (descriptor: FileDescriptor, address: UnixSocketAddress?)? {
        guard let passed = try? activation?.listener(named: "control") else { return nil }
        return (passed.descriptor, try? passed.descriptor.localAddress())
    }

    /// The path the control socket systemd passed is bound to, which no mirror destination may
    /// reach, as it may not reach `control.socket` (`ReservedPath`). Nil without one, and for
    /// one bound to no path (abstract or unnamed), or to a path that is relative (bound in a
    /// working directory the daemon cannot know) or not UTF-8 (which text would repair into
    /// another path): there is then no path of the daemon's to keep destinations off.
    var passedControlSocketPath: String? {
        passedControlSocket?.address?.absoluteTextPath
    }

    /// Loads the configuration the way the command line asked: `--config PATH`, else
    /// /etc/weavedi/weavedid.json if it exists, else the built-in default; then checks what
    /// only this machine can say, that no mirror trees overlap through symbolic links or mounts
    /// (`checkMirrorTreesOnDisk`), nor reach the daemon's own paths, the control socket systemd
    /// passed among them (`passedControlSocketPath`). The daemon's start and `--check-config`
    /// come through here; reloads through the async form.
    ///
    /// All of it runs on a thread of its own, and a step (the file read, a path resolved) that
    /// does not answer within `StepDeadline.stepLimit` fails the load (`ETIMEDOUT`): a dead
    /// network mount cannot hang the start. Checking what was read (decoding the file,
    /// comparing the jobs' roots) has no such limit (`LoadStep.checking`): however many jobs
    /// there are, it is not a file system that does not answer. Blocks the calling thread
    /// meanwhile.
    public func loadConfiguration() throws(ConfigurationError) -> DaemonConfiguration {
        try StepDeadline.run(limit: StepDeadline.stepLimit, first: firstLoadStep, for: "a configuration load") {
            [self] note throws(ConfigurationError) in
            try load(noting: note)
        }
    }

    /// `loadConfiguration()` for the reloads: the caller (the `Supervisor` actor) is suspended
    /// meanwhile, not blocked, so a dead mount can hold neither it nor a shutdown.
    public func loadConfiguration() async throws(ConfigurationError) -> DaemonConfiguration {
        try await StepDeadline.run(limit: StepDeadline.stepLimit, first: firstLoadStep, for: "a configuration load") {
            [self] note throws(ConfigurationError) in
            try load(noting: note)
        }
    }

    /// The load's first step: reading the file (the default's path when none was given).
    private var firstLoadStep: LoadStep {
        let file = configPath ?? DaemonConfiguration.defaultPath
        return LoadStep("reading", file: file, fieldPath: nil, path: file)
    }

    private func load(
        noting note: @escaping @Sendable (LoadStep) throws(ConfigurationError) -> Void
    ) throws(ConfigurationError) -> DaemonConfiguration {
        let configuration = try DaemonConfiguration.resolve(
            explicitPath: configPath, environment: environment, workingDirectory: workingDirectory, noting: note)
        try configuration.checkMirrorTreesOnDisk(passedSocket: passedControlSocketPath, noting: note)
        return configuration
    }
}

/// The configuration in effect; replaced on a successful reload.
public final class ConfigurationStore: Sendable {
    private let value: Locked<(configuration: DaemonConfiguration, shutdownTimeout: Duration?)>

    /// A store holding `configuration`.
    public init(_ configuration: DaemonConfiguration) {
        value = Locked((configuration, nil))
    }

    /// The configuration in effect.
    public var current: DaemonConfiguration { value.withLock { $0.configuration } }

    /// Called after each `replace`, in the order added.
    private let replaced = Locked<[@Sendable () -> Void]>([])

    /// Replaces it, then tells whoever asked (`onReplace`).
    public func replace(with configuration: DaemonConfiguration) {
        value.withLock { $0.configuration = configuration }
        for body in replaced.withLock({ $0 }) { body() }
    }

    /// Calls `body` after every `replace` from now on (once the new configuration is
    /// `current`), as a thread that reads it only when it wakes must be woken.
    public func onReplace(_ body: @escaping @Sendable () -> Void) {
        replaced.withLock { $0.append(body) }
    }

    /// Begins the shutdown: reads `shutdownTimeout` once, for all the shutdown does (the main
    /// loop's deadline, the `EXTEND_TIMEOUT_USEC=` systemd is sent, the control socket's drain),
    /// and returns it. A reload that ends after this (one under way when the signal came)
    /// changes it no more, so that they cannot differ; a second call returns the same.
    @discardableResult
    public func beginShutdown() -> Duration {
        value.withLock { state in
            let timeout = state.shutdownTimeout ?? state.configuration.shutdownTimeout
            state.shutdownTimeout = timeout
            return timeout
        }
    }

    /// The shutdown's `shutdownTimeout` (`beginShutdown()`); before a shutdown, the
    /// configuration's.
    public var shutdownTimeout: Duration {
        value.withLock { $0.shutdownTimeout ?? $0.configuration.shutdownTimeout }
    }
}

extension UnixSocketAddress {
    /// The path of a socket bound to one that is absolute and UTF-8; nil for one bound to no
    /// path (abstract, unnamed), or to a path that is relative (bound in a working directory
    /// the daemon cannot know) or not UTF-8 (which text would repair into another path).
    var absoluteTextPath: String? {
        guard kind == .path, bytes.first == UInt8(ascii: "/") else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
