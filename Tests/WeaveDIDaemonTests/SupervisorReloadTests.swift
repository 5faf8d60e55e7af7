import TestSupport
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
        let service = ServiceGroupTests.Recorder("held", holdsReload: true)
        let (supervisor, outcome) = try await reloadMeetingAShutdown(service: service, timeouts: (7, 9))

        #expect(outcome == .notRunning("the daemon is stopped"))
        #expect(await supervisor.store.current.shutdownTimeout == .seconds(7))
        #expect(service.calls == ["start", "reload", "stop"])
    }

    /// A service that refuses the configuration after a shutdown began changes nothing either:
    /// the refusal is not recorded as the last reload's problem (the health check
    /// `daemon.configuration` would turn degraded while the daemon stops, for a reload that
    /// never finished), and the caller is told the daemon is not running.
    @Test func aReloadRefusedAfterAShutdownBegan_recordsNoProblem() async throws {
        let (supervisor, outcome) = try await reloadMeetingAShutdown(
            service: ServiceGroupTests.Recorder("held", holdsReload: true, refusesReload: true), timeouts: (7, 7))

        #expect(outcome == .notRunning("the daemon is stopped"))
        #expect(await supervisor.reloadProblem == nil)
    }

    /// A supervisor running `service` on a configuration with `shutdownTimeout` `timeouts.0`;
    /// the file then says `timeouts.1`, a reload begins, and a shutdown begins while the
    /// service's reload waits; the service is then let go. The reload's outcome.
    func reloadMeetingAShutdown(
        service: ServiceGroupTests.Recorder, timeouts: (Int, Int)
    ) async throws -> (Supervisor, Supervisor.ReloadOutcome) {
        let directory = try ConfigurationDirectory()
        let fields = #""runtimeDirectory": "\#(directory.path)/run", "stateDirectory": "\#(directory.path)/state""#
        let file = try directory.write("{\(fields), \"shutdownTimeout\": \(timeouts.0)}")
        let log = DaemonLog(filter: LogFilter(defaultLevel: .off, overrides: [:]), journald: false)
        let context = DaemonContext(
            environment: [:], workingDirectory: "/", configPath: file, log: log, notifier: SystemdNotifier(environment: [:]),
            activation: nil, waker: try Waker())
        let configuration = try await context.loadConfiguration()
        let supervisor = Supervisor(context: context, configuration: configuration, container: WeaveDI.Container()) { _ in [service] }
        await supervisor.start()
        #expect(await supervisor.phase == .running)

        try directory.write("{\(fields), \"shutdownTimeout\": \(timeouts.1)}")
        let reload = Task { await supervisor.reload() }
        try #require(await eventually { service.calls.last == "reload" })
        await supervisor.shutdown(reason: "test")
        service.release()
        return (supervisor, await reload.value)
    }
}
