import WeaveDI
import WeaveDIPosix

/// The daemon's modules bootstrapped in-process without starting anything, for
/// `weavedictl diagnose-components --offline` and `check-cycles --offline` (the CI use).
public enum OfflineDiagnostics {
    /// A container with every module of the daemon registered and validated once (so the
    /// dependency graph is recorded); nothing is bound, started or notified.
    public static func container(configuration: DaemonConfiguration) async throws -> WeaveDI.Container {
        let environment: [String: String] = [:]
        let context = DaemonContext(
            environment: environment, workingDirectory: CurrentProcess.workingDirectory() ?? ".",
            configPath: configuration.filePath, log: DaemonLog(filter: LogFilter(defaultLevel: .off, overrides: [:]), journald: false),
            notifier: SystemdNotifier(environment: environment), activation: nil, waker: try Waker())
        let container = WeaveDI.Container()
        let supervisor = Supervisor(context: context, configuration: configuration, container: container)
        await container.bootstrap(modules: DaemonModules.all(context: context, store: supervisor.store, supervisor: supervisor))
        _ = await container.validate()
        return container
    }
}
