import Testing
@testable import WeaveDIDaemon

/// A shutdown reads `shutdownTimeout` once: its deadline, the time systemd is asked for
/// (`EXTEND_TIMEOUT_USEC=`) and the control socket's drain keep to the same one, even when a
/// reload under way as the shutdown began replaces the configuration afterwards.
@Suite struct ShutdownTimeoutTests {
    static func configuration(shutdownTimeout: Duration) -> DaemonConfiguration {
        var configuration = DaemonConfiguration(source: .file(path: "/test.json"), environment: [:], workingDirectory: "/")
        configuration.shutdownTimeout = shutdownTimeout
        return configuration
    }

    @Test func aReloadEndingAfterTheShutdownBegan_changesNotItsTimeout() {
        let store = ConfigurationStore(Self.configuration(shutdownTimeout: .seconds(60)))
        #expect(store.shutdownTimeout == .seconds(60))
        store.replace(with: Self.configuration(shutdownTimeout: .seconds(120)))
        #expect(store.shutdownTimeout == .seconds(120))  // a reload before the shutdown counts
        #expect(store.beginShutdown() == .seconds(120))
        store.replace(with: Self.configuration(shutdownTimeout: .seconds(1)))
        #expect(store.current.shutdownTimeout == .seconds(1))
        #expect(store.shutdownTimeout == .seconds(120))
        #expect(store.beginShutdown() == .seconds(120))
    }
}
