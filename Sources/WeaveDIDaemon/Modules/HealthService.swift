import WeaveDI

/// Runs the health registry's loop with the daemon's checks: the container's built-in checks
/// and `daemon.configuration` (degraded while a reload is refused).
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
            return .healthy("configuration in effect")
        })
        registry.start(interval: health.interval)
        log.info("health", registry.isRunning ? "health loop every \(health.interval)" : "health loop off (WEAVEDI_REGISTRY_AUTO_HEALTH)")
    }

    public func stop() async {
        registry.stop()
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
