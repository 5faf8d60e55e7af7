import Testing
@testable import WeaveDI

// What the library's log says about mistakes a program makes: registrations an optimization pass
// cannot build, a health check registered twice, the order of a registration's lines. Each reads
// its own lines (`LogCapture`); they are among `InjectedTests`, which run one at a time, because
// one of them sets the process's log level to `errors` for a while, which would keep the others'
// registration and optimization lines out.

final class OptLoopA: Sendable {}
final class OptLoopB: Sendable {}
final class OptFine: Sendable {}
final class OptLooseLater: Sendable {}

/// Fifteen registrations of their own types, each failing: more than an optimization pass names.
private struct Broken<Tag>: Sendable {}
private enum T1 {}; private enum T2 {}; private enum T3 {}; private enum T4 {}; private enum T5 {}
private enum T6 {}; private enum T7 {}; private enum T8 {}; private enum T9 {}; private enum T10 {}
private enum T11 {}; private enum T12 {}; private enum T13 {}; private enum T14 {}; private enum T15 {}

extension InjectedTests {
    /// Collects the lines logged while `body` runs.
    private func logged(_ body: () async -> Void) async -> [LogRecord] {
        let log = LogCapture()
        await log.during(body)
        return log.records
    }

    /// A bootstrap whose registrations need each other: the log names each registration that
    /// failed, with its scope and why, and the cycle, not only how many.
    @Test func optimizedBootstrap_namesTheFailuresAndTheCycle() async {
        let container = WeaveDI.Container()
        let lines = await logged {
            await UnifiedRegistry(clock: ManualHealthClock()).enableOptimization(container: container)
            await container.bootstrap { c in
                c.register(OptLoopA.self) { r in _ = try r.require(OptLoopB.self); return OptLoopA() }
                c.register(OptLoopB.self, scope: .transient) { r in _ = try r.require(OptLoopA.self); return OptLoopB() }
                c.register(OptFine.self) { OptFine() }
            }
        }
        let errors = lines.filter { $0.category == .error }.map(\.message)
        let summary = errors.firstIndex { $0.hasPrefix("optimization of 3 new registration(s) finished") }
        #expect(summary != nil, "\(errors)")
        let named = errors.drop { !$0.hasPrefix("optimization of 3 new registration(s) finished") }.dropFirst()
        #expect(named.contains { $0.hasPrefix("OptLoopA (singleton) failed to build: dependency cycle: OptLoopA -> OptLoopB -> OptLoopA") },
            "\(errors)")
        #expect(named.contains { $0.hasPrefix("OptLoopB (transient) failed to build: ") && $0.contains("OptLoopB -> OptLoopA -> OptLoopB") },
            "\(errors)")
        #expect(named.contains("dependency cycle: OptLoopA -> OptLoopB -> OptLoopA"), "\(errors)")
        #expect(!named.contains { $0.contains("OptFine") }, "\(errors)")
    }

    /// Past ten failures, the log names the first ten and says how many more there are; a
    /// factory's error is logged with its control characters escaped, on one line.
    @Test func optimization_namesTenFailures_thenHowManyMore() async {
        struct Refused: Error, CustomStringConvertible { var description: String { "no disk\nforged line" } }
        let container = WeaveDI.Container()
        func broken<Tag>(_: Tag.Type) {
            container.register(Broken<Tag>.self) { () throws -> Broken<Tag> in throw Refused() }
        }
        broken(T1.self); broken(T2.self); broken(T3.self); broken(T4.self); broken(T5.self)
        broken(T6.self); broken(T7.self); broken(T8.self); broken(T9.self); broken(T10.self)
        broken(T11.self); broken(T12.self); broken(T13.self); broken(T14.self); broken(T15.self)
        let lines = await logged {
            let report = await UnifiedRegistry(clock: ManualHealthClock()).enableOptimization(container: container)
            #expect(report.validation.failures.count == 15)
        }
        let errors = lines.filter { $0.category == .error }.map(\.message)
        let failures = errors.filter { $0.hasPrefix("Broken<") }
        #expect(failures.count == 10, "\(errors)")
        #expect(failures.first == #"Broken<T1> (singleton) failed to build: the factory of Broken<T1> failed: no disk\nforged line"#,
            "\(errors)")
        #expect(errors.contains("and 5 more registration(s) failed to build (the report's validation.failures lists them all)"),
            "\(errors)")
        #expect(!errors.contains { $0.contains("\n") })
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

    /// A registration outside bootstrap in an optimized container: the log says it was
    /// registered, then that it waits to be warmed.
    @Test func registrationOutsideBootstrap_isLoggedBeforeItWaitsToBeWarmed() async {
        let container = WeaveDI.Container()
        let lines = await logged {
            await UnifiedRegistry(clock: ManualHealthClock()).enableOptimization(container: container)
            container.register(OptLooseLater.self) { OptLooseLater() }
        }
        let about = lines.map(\.message).filter { $0.contains("OptLooseLater") }
        #expect(about.count == 2, "\(about)")
        #expect(about.first?.hasPrefix("registered OptLooseLater (singleton") == true, "\(about)")
        #expect(about.last?.hasPrefix("OptLooseLater registered outside bootstrap after enableOptimization()") == true, "\(about)")
    }
}

/// Two types named `Ledger`, named in no other test: which one a log line means must show.
enum LogBooks { final class Ledger: Sendable {} }
enum LogTills { final class Ledger: Sendable {} }
final class LogUniqueLedger: Sendable {}
/// Named nowhere else, so that nothing but its registration could spell its name.
private struct NeverLogged<Tag>: Sendable {}
private enum Filtered {}

extension InjectedTests {
    /// A type whose name another type named before has is named qualified in the log, as in an
    /// error; a name of its own stays short.
    @Test func logLines_tellTwoTypesOfOneNameApart() async {
        let container = WeaveDI.Container()
        let lines = await logged {
            container.register(LogUniqueLedger.self) { LogUniqueLedger() }
            container.register(LogBooks.Ledger.self) { LogBooks.Ledger() }
            container.register(LogTills.Ledger.self) { LogTills.Ledger() }
            container.register(LogBooks.Ledger.self, scope: .transient) { LogBooks.Ledger() }
            container.unregister(LogTills.Ledger.self)
            _ = container.resolve(LogTills.Ledger.self)
        }
        let messages = lines.map(\.message)
        #expect(messages.contains("registered LogUniqueLedger (singleton, module main)"), "\(messages)")
        #expect(messages.contains("registered Ledger (singleton, module main)"), "\(messages)")
        #expect(messages.contains("registered WeaveDITests.LogTills.Ledger (singleton, module main)"), "\(messages)")
        #expect(messages.contains { $0.hasPrefix("WeaveDITests.LogBooks.Ledger registered again by module main (transient)") },
            "\(messages)")
        #expect(messages.contains("unregistered WeaveDITests.LogTills.Ledger"), "\(messages)")
        #expect(messages.contains { $0.hasPrefix("resolve(WeaveDITests.LogTills.Ledger) returned nil: ") }, "\(messages)")
    }

    /// A registration whose line the level filters out does not spell its type's name.
    @Test func aFilteredOutRegistrationLine_spellsNoName() {
        let level = UnifiedDI.logLevel
        UnifiedDI.setLogLevel(.errors)
        defer { UnifiedDI.setLogLevel(level) }
        let container = WeaveDI.Container()
        container.register(NeverLogged<Filtered>.self) { NeverLogged() }
        #expect(container.isRegistered(NeverLogged<Filtered>.self))
        #expect(!TypeSlots.shared.hasSpelledName(ofSlot: TypeSlots.shared.slot(for: NeverLogged<Filtered>.self)))
    }
}
