import WeaveDI
import WeaveDIControl

/// The daemon's own services, as WeaveDI modules: singletons for the long-lived ones, a
/// session per control connection, a request per control call.
enum DaemonModules {
    /// Every module, in bootstrap order.
    static func all(context: DaemonContext, store: ConfigurationStore, supervisor: Supervisor) -> [any WeaveDI.Module] {
        [CoreModule(context: context, store: store, supervisor: supervisor), HealthModule(), ControlModule(), SyncModule()]
    }

    /// The services, in start order (stopped in reverse).
    static func services(in container: WeaveDI.Container) throws(ResolutionError) -> [any DaemonService] {
        // Health starts last, so that its first round already sees every service's checks. The
        // control server comes first: it alone may refuse a reload, before anything changed.
        [try container.require(ControlServer.self), try container.require(SyncScheduler.self), try container.require(HealthService.self)]
    }
}

/// Configuration, logging, clock and the process's systemd link.
struct CoreModule: WeaveDI.Module {
    let context: DaemonContext
    let store: ConfigurationStore
    let supervisor: Supervisor

    var name: String { "core" }

    func register(in container: WeaveDI.Container) async {
        container.register(DaemonContext.self, instance: context)
        container.register(ConfigurationStore.self, instance: store)
        container.register(Supervisor.self, instance: supervisor)
        container.register(DaemonLog.self, instance: context.log)
        container.register(SystemdNotifier.self, instance: context.notifier)
        container.register((any HealthClock).self) { SystemHealthClock() }
    }
}

/// The health / auto-fix registry and its loop.
struct HealthModule: WeaveDI.Module {
    var name: String { "health" }

    func register(in container: WeaveDI.Container) async {
        container.register(UnifiedRegistry.self) { UnifiedRegistry.shared }
        container.register(HealthService.self) { r in
            HealthService(
                registry: try r.require(UnifiedRegistry.self), store: try r.require(ConfigurationStore.self),
                supervisor: try r.require(Supervisor.self), container: container, log: try r.require(DaemonLog.self))
        }
    }
}

/// The control socket and its protocol: a session per connection, a request per call.
struct ControlModule: WeaveDI.Module {
    var name: String { "control" }

    func register(in container: WeaveDI.Container) async {
        container.register(ControlConnectionState.self, scope: .session) { ControlConnectionState() }
        container.register(CallContext.self, scope: .request) { CallContext() }
        container.register(ControlMetrics.self) {
            ControlMetrics(clients: { (try? container.require(ControlServer.self))?.connectedClients ?? 0 })
        }
        container.register(DaemonMethods.self) { r in
            DaemonMethods(
                registry: try r.require(UnifiedRegistry.self), container: container, supervisor: try r.require(Supervisor.self),
                log: try r.require(DaemonLog.self), jobs: try r.require((any JobControl).self), metrics: try r.require(ControlMetrics.self))
        }
        container.register(VarlinkService.self) { r in
            VarlinkService(
                methods: try r.require(DaemonMethods.self), store: try r.require(ConfigurationStore.self), log: try r.require(DaemonLog.self),
                startGate: try r.require(DaemonContext.self).startGate)
        }
        container.register(ControlServer.self) { r in
            let context = try r.require(DaemonContext.self)
            return try ControlServer(
                store: try r.require(ConfigurationStore.self), log: context.log, activation: context.activation,
                container: container, handler: try r.require(VarlinkService.self), registry: try r.require(UnifiedRegistry.self),
                socketFiles: context.socketFiles)
        }
    }
}

/// The sync jobs: the scheduler, and what the control protocol sees of it.
struct SyncModule: WeaveDI.Module {
    var name: String { "sync" }

    func register(in container: WeaveDI.Container) async {
        MirrorJob.registerKind()
        container.register(FileCopier.self, scope: .transient) { FileCopier() }
        container.register(FileHasher.self, scope: .transient) { FileHasher() }
        container.register(SyncScheduler.self) { r in
            SyncScheduler(
                store: try r.require(ConfigurationStore.self), container: container, log: try r.require(DaemonLog.self),
                registry: try r.require(UnifiedRegistry.self))
        }
        container.register((any JobControl).self) { r in try r.require(SyncScheduler.self) }
    }
}
