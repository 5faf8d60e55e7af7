import WeaveDI
import WeaveDIPosix

/// Runs the daemon's lifecycle: bootstrap the container from the modules, start the services
/// in order, tell systemd it is ready, reload on request, and shut down in reverse.
public actor Supervisor {
    /// Where the daemon is in its life.
    public enum Phase: String, Sendable {
        /// Bootstrapping and starting services.
        case starting
        /// Ready and working.
        case running
        /// Stopping services.
        case stopping
        /// Done.
        case stopped
    }

    let context: DaemonContext
    let container: WeaveDI.Container
    let store: ConfigurationStore
    /// The lock on the state directory the daemon took at start, watched by `daemon.stateLock`;
    /// nil where none was taken (offline diagnostics, tests that run services in-process).
    nonisolated let stateLock: StateDirectoryLock?
    private var group: ServiceGroup?
    private(set) var phase: Phase = .starting
    private var shutdownRequested = false
    private var reloading = false
    /// Callers that asked while a reload ran: the next reload is theirs.
    private var reloadWaiters: [CheckedContinuation<ReloadOutcome, Never>] = []
    /// Who asked for the reload the waiters share (`reload(asker:)`), in order, each once.
    private var waitingAskers: [String] = []
    /// Who sent the SIGHUPs that came while starting, each once: the configuration is read
    /// again once started when there are any (`reloadForSignal`).
    private var askedWhileStarting: [String] = []
    /// Why the last reload was refused; nil once a reload succeeds.
    public private(set) var reloadProblem: String?
    /// How many path warnings (`DaemonConfiguration.fileSystemWarnings`, what `--check-config`
    /// prints) the configuration in effect has, as the start or the last reload in effect
    /// logged them: `daemon.configuration` counts them.
    public private(set) var pathWarningCount = 0
    /// Why the configuration in effect's paths could not all be looked at (the check of them at
    /// the start or the last reload in effect did not finish, `pathWarnings(of:)`); nil when it
    /// did. `pathWarningCount` is then 0, counting nothing: `daemon.configuration` says so.
    public private(set) var pathsNotLookedAt: String?
    /// Called as each reload ends, refused or in effect, before systemd and the caller hear
    /// of it: `HealthService` runs `daemon.configuration` again, so that health said right
    /// after `systemctl reload` says how it went, not how the reload before went.
    private var reloadEnded: (@Sendable () async -> Void)?

    /// Why the check of the paths that gave `warnings` did not finish; nil when it did.
    private static func notLookedAt(_ warnings: Result<[String], ConfigurationError>) -> String? {
        if case let .failure(error) = warnings { "\(error)" } else { nil }
    }

    /// Sets what is called as each reload ends (`reloadEnded`).
    func onReloadEnded(_ body: (@Sendable () async -> Void)?) {
        reloadEnded = body
    }

    /// The services to start, taken from the bootstrapped container (`DaemonModules.services`).
    private let services: @Sendable (WeaveDI.Container) throws(ResolutionError) -> [any DaemonService]
    /// Whether `start()` makes `container` the process's `WeaveDI.Container.live`.
    private let makesContainerLive: Bool

    /// A supervisor for `configuration`; `container` becomes the daemon's container.
    init(
        context: DaemonContext, configuration: DaemonConfiguration, container: WeaveDI.Container = WeaveDI.Container(),
        stateLock: StateDirectoryLock?
    ) {
        self.init(
            context: context, configuration: configuration, container: container, services: DaemonModules.services(in:),
            makesContainerLive: true, stateLock: stateLock)
    }

    /// A supervisor for `configuration`, holding no lock on its state directory.
    public init(context: DaemonContext, configuration: DaemonConfiguration, container: WeaveDI.Container = WeaveDI.Container()) {
        self.init(context: context, configuration: configuration, container: container, stateLock: nil)
    }

    /// A supervisor that starts `services` instead of the daemon's own and, unless told,
    /// leaves `WeaveDI.Container.live` as it is: tests drive its lifecycle in-process, with
    /// services of theirs, beside other tests that read the live container.
    init(
        context: DaemonContext, configuration: DaemonConfiguration, container: WeaveDI.Container,
        services: @escaping @Sendable (WeaveDI.Container) throws(ResolutionError) -> [any DaemonService],
        makesContainerLive: Bool = false, stateLock: StateDirectoryLock? = nil
    ) {
        self.stateLock = stateLock
        self.context = context
        self.container = container
        self.services = services
        self.makesContainerLive = makesContainerLive
        store = ConfigurationStore(configuration)
    }

    private var log: DaemonLog { context.log }
    private var notifier: SystemdNotifier { context.notifier }

    /// Bootstraps and starts everything, then sends `READY=1`. A shutdown requested meanwhile
    /// stops what started; a failure finishes the daemon with status 1.
    public func start() async {
        notifier.status("starting")
        if makesContainerLive { WeaveDI.Container.live = container }
        await container.bootstrap(modules: DaemonModules.all(context: context, store: store, supervisor: self))
        let services: [any DaemonService]
        do {
            services = try self.services(container)
        } catch {
            return fail("cannot assemble the daemon's services: \(error)")
        }
        // What `--check-config` warns about, as the daemon sees its paths (under systemd, through
        // the unit's sandbox, which a check run by hand does not see): logged before the
        // services start, and counted by `daemon.configuration`.
        let configuration = store.current
        let warnings = await context.pathWarnings(of: configuration)
        pathWarningCount = context.logPathWarnings(warnings, of: configuration)
        pathsNotLookedAt = Self.notLookedAt(warnings)
        let group = ServiceGroup(services, log: log)
        self.group = group
        do {
            try await group.start { [weak self] in await self?.shutdownRequested == false } failing: { [context] failure in
                context.startGate.end("failed to start: \(failure)")
            }
        } catch {
            return fail("\(error)", exitStatus: Self.exitStatus(forStartFailure: error))
        }
        if shutdownRequested {
            await stopEverything()
            return
        }
        phase = .running
        // Before READY=1: whoever hears that the daemon is ready finds every call answered.
        context.startGate.open()
        let socket = controlSocketInUse()
        // A command to paste into a shell: the path quoted when it needs it (a space, a quote, `$`).
        let hint = socket.path.map { " (talk to it: weavedictl --socket \($0.shellWord) health)" } ?? ""
        notifier.notify("READY=1", "STATUS=running; control socket \(socket.description)")
        log.notice("daemon", "weavedid \(DaemonVersion.current) ready; control socket \(socket.description)\(hint)")
        if !askedWhileStarting.isEmpty {
            log.notice("daemon", "reloading for the SIGHUP received while starting")
            let askers = askedWhileStarting
            askedWhileStarting = []
            await reload(asker: askers.joined(separator: ", "))
        }
    }

    /// `SIGHUP`: a reload (`reload()`). While the daemon starts, the file may have changed
    /// since the start read it, and whoever sent the signal expects the file as it is now to
    /// be in effect: the reload is done once the start is over, right after `READY=1` (several
    /// signals meanwhile make one reload). A start that fails, or that a shutdown ends, reloads
    /// nothing. While stopping, the signal is ignored, as `reload()` says.
    /// `sender`: who sent it (`SIGHUP from pid 1`), for the log.
    public func reloadForSignal(sender: String) async {
        guard phase == .starting else {
            await reload(asker: sender)
            return
        }
        if askedWhileStarting.isEmpty {
            log.notice("daemon", "SIGHUP while starting; the configuration is read again once started")
        }
        if !askedWhileStarting.contains(sender) { askedWhileStarting.append(sender) }
    }

    /// The control socket the daemon serves, as the ready message names it: the configured
    /// `control.socket`, or under socket activation the socket systemd passed (the one the
    /// control service took: `DaemonContext.passedControlSocket`), by the address it is bound
    /// to, which need not be the configured one. The path or address is quoted as every path
    /// from outside is (`"/run/weavedi/control.sock"`), so that a space, a quote or a newline
    /// in it cannot blur where it ends. `path` is what `weavedictl --socket` takes; nil for a
    /// passed socket bound to no path (abstract or unnamed).
    func controlSocketInUse() -> (description: String, path: String?) {
        guard let passed = context.passedControlSocket else {
            let configured = store.current.control.socket
            return (JSONValue.quotedPathForMessage(configured), configured)
        }
        guard let address = passed.address, address.kind != .unnamed else {
            return ("descriptor \(passed.descriptor.rawValue) (passed by systemd, bound to no address)", nil)
        }
        return (
            "\(JSONValue.quotedPathForMessage(address.description)) (passed by systemd)", address.kind == .path ? address.description : nil
        )
    }

    /// Begins a graceful shutdown (`SIGTERM`, `SIGINT`): `STOPPING=1`, services stopped in
    /// reverse, sessions closed, then the main loop is told to exit 0.
    public func shutdown(reason: String) async {
        switch phase {
        case .starting:
            log.notice("daemon", "\(reason) while starting; stopping once started services are up")
            shutdownRequested = true
            context.startGate.end("is stopping (\(reason)): asked to while it was starting")
        case .running:
            await stopEverything(reason: reason)
        case .stopping, .stopped:
            break
        }
    }

    private func stopEverything(reason: String = "shutdown requested while starting") async {
        phase = .stopping
        // A stop that ends the start: the calls waiting for it hear so (nothing, once started).
        context.startGate.end("is stopping (\(reason)) before it finished starting")
        // systemd allows a stop `TimeoutStopSec=` (15 s in the unit) before it kills; a longer
        // `shutdownTimeout` is asked for, with time to exit after it: the one the main loop's
        // deadline keeps to, read once when the shutdown began.
        let allowed = store.beginShutdown() + Self.exitAllowance
        notifier.notify("STOPPING=1", "EXTEND_TIMEOUT_USEC=\(allowed.clampedNanoseconds / 1_000)", "STATUS=stopping (\(reason))")
        log.notice("daemon", "stopping: \(reason)")
        await group?.stop()
        await container.releaseAll()
        phase = .stopped
        log.notice("daemon", "stopped")
        context.waker.finish(0)
    }

    /// What systemd is told a shutdown may take beyond `shutdownTimeout`: the main loop exits
    /// at that timeout, the process soon after.
    static let exitAllowance: Duration = .seconds(5)

    private func fail(_ message: String, exitStatus: Int32 = 1) {
        context.startGate.end("failed to start: \(message)")
        log.error("daemon", message)
        notifier.notify("STATUS=failed: \(message)")
        phase = .stopped
        context.waker.finish(exitStatus)
    }

    /// The exit status of a start that `error` ended: 78 (EX_CONFIG) when the control socket's
    /// directory could not be made for want of permission or on a read-only file system
    /// (`ControlSocketBinder.Refusal.exitStatus`: a restart would meet the same), else 1.
    static func exitStatus(forStartFailure error: any Error) -> Int32 {
        guard let failure = error as? ServiceStartError, let refusal = failure.underlying as? ControlSocketBinder.Refusal else { return 1 }
        return refusal.exitStatus
    }

    /// How a reload asked for ended.
    public enum ReloadOutcome: Sendable, Equatable {
        /// The file was read and is now in effect.
        case reloaded
        /// The file was refused (the reason, bare: what the log and `STATUS=` wrap in `reload
        /// refused: …; keeping the previous configuration`); the previous configuration stays.
        case refused(String)
        /// Nothing was read: the daemon is not running (starting or stopping).
        case notRunning(String)
    }

    /// Reloads the configuration (`SIGHUP`, the varlink `Reload` method): `RELOADING=1` with
    /// `MONOTONIC_USEC=`, then `READY=1`. A bad configuration is refused; the old one stays and
    /// health says so.
    ///
    /// A caller that asks while a reload runs is answered by the next one, which begins once
    /// the running one ends (all such callers share it): the file it reads is at least as new
    /// as the request, so its outcome is the caller's.
    ///
    /// `asker`: who asked (`SIGHUP from pid 1`, `Reload from uid 0 (pid 812)`), named in the
    /// log line that begins the reload (those who share one are named together).
    @discardableResult
    public func reload(asker: String = "") async -> ReloadOutcome {
        guard phase == .running else {
            log.warning("daemon", "reload ignored while \(phase.rawValue)")
            return .notRunning("the daemon is \(phase.rawValue)")
        }
        if reloading {
            if !asker.isEmpty, !waitingAskers.contains(asker) { waitingAskers.append(asker) }
            return await withCheckedContinuation { reloadWaiters.append($0) }
        }
        reloading = true
        defer { reloading = false }
        let outcome = await reloadOnce(asker: asker)
        while !reloadWaiters.isEmpty {
            let waiters = reloadWaiters
            let askers = waitingAskers
            reloadWaiters = []
            waitingAskers = []
            let theirs = phase == .running
                ? await reloadOnce(asker: askers.joined(separator: ", ")) : .notRunning("the daemon is \(phase.rawValue)")
            for waiter in waiters { waiter.resume(returning: theirs) }
        }
        return outcome
    }

    /// What a reload that a shutdown overtook answers, having told systemd nothing.
    private func stoppedDuringReload() -> ReloadOutcome {
        log.notice("daemon", "reload finished while the daemon is \(phase.rawValue); not reported to systemd")
        return .notRunning("the daemon is \(phase.rawValue)")
    }

    private func reloadOnce(asker: String) async -> ReloadOutcome {
        notifier.notify("RELOADING=1", "MONOTONIC_USEC=\(SystemClock.monotonicMicroseconds())", "STATUS=reloading the configuration")
        log.notice("daemon", "reloading the configuration" + (asker.isEmpty ? "" : " (asked by \(asker))"))
        let loaded: Result<DaemonConfiguration, ConfigurationError>
        do { loaded = .success(try await context.loadConfiguration()) } catch { loaded = .failure(error) }
        // Its path warnings, looked at now (off the actor), logged once it is in effect.
        var warnings: Result<[String], ConfigurationError>?
        if case let .success(configuration) = loaded { warnings = await context.pathWarnings(of: configuration, atReload: true) }
        // The load runs off the actor, for as long as the file system takes: a shutdown may
        // have begun meanwhile, and then the reload has nothing left to change or to report.
        guard phase == .running else {
            log.notice("daemon", "reload dropped: the daemon is \(phase.rawValue)")
            return .notRunning("the daemon is \(phase.rawValue)")
        }
        do {
            var configuration = try loaded.get()
            // The jobs' state file is kept where the daemon started (`SyncStateStore`), and the
            // socket where it was bound: only a move is refused. The same path written with a
            // trailing slash, a doubled one or a `.` is no move, and stays as it was spelled.
            let stateDirectory = store.current.stateDirectory
            if ConfigurationDirectories.sameSpelling(configuration.stateDirectory, stateDirectory) {
                configuration.stateDirectory = stateDirectory
            }
            if ConfigurationDirectories.sameSpelling(configuration.control.socket, store.current.control.socket) {
                configuration.control.socket = store.current.control.socket
            }
            if configuration.stateDirectory != stateDirectory {
                throw ReloadRefusal(description: "stateDirectory changed from \(JSONValue.quotedPathForMessage(stateDirectory)) to "
                    + "\(JSONValue.quotedPathForMessage(configuration.stateDirectory)); a restart uses the new directory but moves "
                    + "nothing: the jobs' last runs, their pauses and the run counter stay in jobs.json in the old one; to carry them "
                    + "over, stop the daemon, move jobs.json (not weavedid.lock) from \(JSONValue.quotedPathForMessage(stateDirectory)) "
                    + "into \(JSONValue.quotedPathForMessage(configuration.stateDirectory)), then start it")
            }
            try await group?.reload(configuration)
            // The services' reload may have waited: a shutdown begun meanwhile has sent
            // STOPPING=1, which no READY=1 may follow, and works with the configuration in
            // effect when it began (the control socket's drain, the metrics of the runs that
            // end meanwhile): the new one does not replace it.
            guard phase == .running else { return stoppedDuringReload() }
            store.replace(with: configuration)
            reloadProblem = nil
            if let warnings, case let .success(found) = warnings { pathWarningCount = found.count } else { pathWarningCount = 0 }
            pathsNotLookedAt = warnings.flatMap(Self.notLookedAt)
            await reloadEnded?()
            // In effect now: a shutdown begun meanwhile is told nothing (no READY=1 after
            // STOPPING=1), but the caller is told the truth.
            guard phase == .running else {
                log.notice("daemon", "configuration reloaded while the daemon is \(phase.rawValue); not reported to systemd")
                if let warnings { context.logPathWarnings(warnings, of: configuration) }
                return .reloaded
            }
            notifier.notify("READY=1", "STATUS=running; configuration reloaded")
            log.notice("daemon", "configuration reloaded")
            if let warnings { context.logPathWarnings(warnings, of: configuration) }
            return .reloaded
        } catch {
            // A service's refusal that came after a shutdown began is no longer news: the
            // daemon is stopping, and health keeps to what the last finished reload said.
            guard phase == .running else { return stoppedDuringReload() }
            let problem = "reload refused: \(error); keeping the previous configuration"
            reloadProblem = problem
            await reloadEnded?()
            guard phase == .running else { return stoppedDuringReload() }
            notifier.notify("READY=1", "STATUS=running; \(problem)")
            log.error("daemon", problem)
            // The reply's reason is the reason alone: `ReloadRefused` already says the rest.
            return .refused("\(error)")
        }
    }
}
