import Testing
@testable import WeaveDI

// What the library's log says about mistakes a program makes: registrations an optimization pass
// cannot build, a health check registered twice, the order of a registration's lines. These
// replace the process's log sink, so they are among `InjectedTests`, which run one at a time:
// another test replacing the sink meanwhile cannot take their lines.

extension InjectedTests {
    /// Collects the lines logged while `body` runs.
    private func logged(_ body: () async -> Void) async -> [LogRecord] {
        let lines = Locked<[LogRecord]>([])
        UnifiedDI.setLogSink { record in lines.withLock { $0.append(record) } }
        defer { UnifiedDI.setLogSink(WeaveDILog.standardError) }
        await body()
        return lines.withLock { $0 }
    }

    /// A health check registered under a name already taken replaces it, and the log says so as
    /// the container says a type registered again; the built-in checks registered again (with
    /// another idle limit, as weavedid does on a reload) replace theirs without a word.
    @Test func healthCheck_registeredAgain_isLoggedAsAnOverwrite() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = WeaveDI.Container()
        let lines = await logged {
            registry.register(HealthCheck(name: "dup.check") { .healthy() })
            registry.registerContainerChecks(for: container)
            registry.register(HealthCheck(name: "dup.check") { .degraded("second") })
            registry.registerContainerChecks(for: container, sessionIdleLimit: .seconds(60))
        }
        let overwrites = lines.filter { $0.category == .overwrite && $0.subsystem == "health" }.map(\.message)
        #expect(overwrites == [#"health check "dup.check" registered again; it replaces the check of that name (its state and fix history are kept)"#])
        #expect(registry.checkNames == ["dup.check", "container.graph", "container.singletons", "container.sessions"])
        #expect(await registry.runCheck("dup.check")?.message == "second")
    }
}
