import Testing
import WeaveDI
import WeaveDIPosix
@testable import WeaveDIDaemon

/// The supervisor's reload, driven in-process with a service of the test's.
@Suite struct SupervisorReloadTests {
    /// A reload whose services' reload is still waiting when a shutdown begins changes nothing:
    /// the shutdown works with the configuration in effect when it began (the control
    /// socket's drain reads its limits from the store, runs that end meanwhile write their
    /// metrics where it says), and the caller is told the daemon is not running.
    @Test func aReloadThatEndsAfterAShutdownBegan_leavesTheConfigurationInEffect() async throws {
        let directory = try ConfigurationDirectory()
        let fields = #""runtimeDirectory": "\#(directory.path)/run", "stateDirectory": "\#(directory.path)/state""#
        let file = try directory.write("{\(fields), \"shutdownTimeout\": 7}")
        let log = DaemonLog(filter: LogFilter(defaultLevel: .off, overrides: [:]), journald: false)
        let context = DaemonContext(
            environment: [:], workingDirectory: "/", configPath: file, log: log, notifier: SystemdNotifier(environment: [:]),
            activation: nil, waker: try Waker())
        let configuration = try await context.loadConfiguration()
        let service = ServiceGroupTests.Recorder("held", holdsReload: true)
        let supervisor = Supervisor(context: context, configuration: configuration, container: WeaveDI.Container()) { _ in [service] }
        await supervisor.start()
        #expect(await supervisor.phase == .running)

        try directory.write("{\(fields), \"shutdownTimeout\": 9}")
        let reload = Task { await supervisor.reload() }
        while service.calls.last != "reload" { await Task.yield() }
        await supervisor.shutdown(reason: "test")
        service.release()
        let outcome = await reload.value

        #expect(outcome == .notRunning("the daemon is stopped"))
        #expect(await supervisor.store.current.shutdownTimeout == .seconds(7))
        #expect(service.calls == ["start", "reload", "stop"])
    }
}
