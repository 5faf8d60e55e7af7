import WeaveDI

/// Runs the health registry's loop with the daemon's checks: the container's built-in checks
/// `daemon.configuration` (degraded while a reload is refused, run again as each reload
/// ends) and `daemon.stateLock` (see `StateDirectoryLock`); logs the checks' changes of state and the fixes that ran.
public final class HealthService: DaemonService {
    public let name = "health"
    let registry: UnifiedRegistry
    let store: ConfigurationStore
    let supervisor: Supervisor
    let container: WeaveDI.Container
    let log: DaemonLog

    init(registry: UnifiedRegistry, store: ConfigurationStore, supervisor: Supervisor, container: WeaveDI.Container, log: DaemonLog) {
        self.registry = registry
        self.store = store
        self.supervisor = supervisor
        self.container = container
        self.log = log
    }

    public func start() async throws {
        let health = store.current.health
        registry.registerContainerChecks(for: container, sessionIdleLimit: health.sessionIdleLimit)
        let supervisor = self.supervisor
        registry.register(HealthCheck(name: "daemon.configuration", tags: [HealthCheck.readiness]) {
            if let problem = await supervisor.reloadProblem { return .degraded(problem) }
            // Path warnings are no failure (the job's own check says when its runs fail): counted.
            // A check of the paths that did not finish (a path that did not answer within the step
            // limit) counted nothing: not "no warnings", but paths unknown. Still healthy, as
            // warnings are, and for the same reason.
            if let problem = await supervisor.pathsNotLookedAt {
                return .healthy("configuration in effect; its paths could not all be looked at (\(problem)), so their warnings are unknown (in the log)")
            }
            let count = await supervisor.pathWarningCount
            return .healthy(count == 0 ? "configuration in effect" : "configuration in effect, with \(count) path warning\(count == 1 ? "" : "s") (in the log)")
        })
        if let lock = supervisor.stateLock {
            // Longer than the look's step limit, so that a file system that does not answer is
            // said so by the look, not cut short as a check that timed out.
            registry.register(HealthCheck(
                name: StateDirectoryLock.checkName, tags: [HealthCheck.readiness], timeout: StepDeadline.stepLimit + .seconds(1)
            ) { await lock.health() } fix: { try await lock.relock() })
        }
        await supervisor.onReloadEnded { [registry] in _ = await registry.runCheck("daemon.configuration") }
        registry.setEventObserver { [log] event in Self.log(event, to: log) }
        // A first round is run here, before the daemon says it is ready: health read then has
        // every check's first result, not "healthy, none checked yet". It only looks, as
        // `RunChecks` does: no fix runs before READY=1 (a fix may take its whole attempt
        // timeout, and the check is run again after it), and its failures do not count toward
        // auto-fix's threshold. The checks run concurrently, each bounded by its timeout, so
        // the round holds the start (and a SIGTERM that comes meanwhile) no longer than the
        // longest of those. The loop's rounds, the first one interval after READY=1, fix.
        if registry.autoHealthEnabled { _ = await registry.runChecks(fixing: false) }
        registry.start(interval: health.interval, runsFirstRoundNow: false)
        log.info("health", registry.isRunning ? "health loop every \(health.interval)" : "health loop off (WEAVEDI_REGISTRY_AUTO_HEALTH)")
    }

    public func stop() async {
        await supervisor.onReloadEnded(nil)
        registry.stop()
        registry.setEventObserver(nil)
    }

    /// Logs a check turning degraded or unhealthy (also as its first result) as a warning and
    /// its recovery as a notice, a fix that failed, timed out or left its check failing as a
    /// warning and one that healed it, started a remedy still going (`inProgress`) or had nothing
    /// to do (`notApplicable`, asked by hand: the library tells no automatic one) as a notice: what an operator must see, whatever
    /// `WEAVEDI_REGISTRY_HEALTH_LOGGING` says (that flag adds the library's own lines). A first
    /// result that is healthy, and the rounds that change nothing, are not logged. The check's
    /// name is quoted as the library's lines quote it (`"job.docs": healthy -> unhealthy: …`):
    /// one shape for both.
    static func log(_ event: HealthEvent, to log: DaemonLog) {
        switch event {
        case let .transition(check, from, to, message):
            if from == nil, to == .healthy { return }
            log.log(
                to == .healthy ? .notice : .warning, "health",
                "\(JSONValue.quotedForMessage(check)): \(from?.rawValue ?? "unknown") -> \(to.rawValue): \(message)")
        case let .fixed(record, healed):
            log.log(
                healed || record.outcome == .inProgress || record.outcome == .notApplicable ? .notice : .warning, "health",
                "fix of \(JSONValue.quotedForMessage(record.check)) (\(record.trigger.rawValue)) \(record.outcome.rawValue): "
                    + (record.error ?? record.message))
        }
    }

    public func reload(_ configuration: DaemonConfiguration) async throws {
        let limit = configuration.health.sessionIdleLimit
        if limit != store.current.health.sessionIdleLimit {  // the checks replaced, their states kept
            registry.registerContainerChecks(for: container, sessionIdleLimit: limit)
        }
        if registry.isRunning, configuration.health.interval != store.current.health.interval {
            registry.start(interval: configuration.health.interval)
        }
    }
}
