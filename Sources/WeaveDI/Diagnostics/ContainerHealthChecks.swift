/// Which built-in checks of a container `UnifiedRegistry.registerContainerChecks` and
/// `registerLiveContainerChecks` register.
public enum ContainerChecks: Sendable, Equatable {
    /// What `WeaveDIConfiguration.applyFromEnvironment()` registers: checks that build nothing,
    /// run no factory, and open or close no session.
    ///
    /// - `container.graph` reads what is recorded: dependency cycles among the edges builds
    ///   recorded (`checkCycles()`) make it unhealthy; duplicate providers, scope drift and scope
    ///   mismatches (`diagnoseComponents()`) degraded. A registration never built has no edges
    ///   yet, and is counted, not built (`notBuilt` in its data). No fix.
    /// - `container.singletons`, as in `active`: only built singletons that adopt
    ///   `HealthReporting` are asked; its fix evicts the unhealthy ones, as that protocol says.
    ///
    /// No `container.sessions`: the program owns its sessions. Registered over `active` checks,
    /// it removes `container.sessions`.
    case passive
    /// The checks that build (weavedid's): `container.graph` builds every registration in its
    /// own scope (a probe session and request included), `container.singletons`, and
    /// `container.sessions`, whose fix closes sessions idle longer than `sessionIdleLimit`.
    /// See `UnifiedRegistry.registerContainerChecks(for:sessionIdleLimit:)`.
    case active(sessionIdleLimit: Duration = .seconds(300))
}

extension UnifiedRegistry {
    /// Registers the active built-in checks of `container` (`ContainerChecks.active`):
    ///
    /// - `container.graph`: every registration builds in its own scope, no cycles, no scope
    ///   mismatches (unhealthy otherwise); duplicate providers or scope drift across modules
    ///   make it degraded. Its validation logs nothing unless `healthLoggingEnabled`. It builds
    ///   every registration on its first round and after any registration is added, replaced
    ///   or removed; other rounds build only those that failed (see `validateForHealth`).
    /// - `container.singletons`: asks every built singleton that adopts `HealthReporting`; its
    ///   fix evicts the unhealthy ones (disposed, rebuilt on next resolve), and with none has
    ///   nothing to do (`FixNotApplicable`).
    /// - `container.sessions`: sessions idle (not in use) longer than `sessionIdleLimit`, named
    ///   (the first few); its fix closes them, logs each (an error, whatever health logging
    ///   says: the program may still hold one), names them in its message, and with none has
    ///   nothing to do (`FixNotApplicable`). A session opened with `closesWhenIdle: false` is
    ///   never counted idle.
    ///
    /// Called again (with another `sessionIdleLimit`, as weavedid does on a reload), it replaces
    /// the three checks, keeping their states, without the log line `register(_:)` writes for a
    /// check registered again.
    public func registerContainerChecks(
        for container: WeaveDI.Container, sessionIdleLimit: Duration = .seconds(300)
    ) {
        registerContainerChecks(of: { container }, .active(sessionIdleLimit: sessionIdleLimit))
    }

    /// Registers the built-in checks of `container` that `checks` names (`.passive`: those that
    /// build nothing), replacing those registered before, their states kept.
    public func registerContainerChecks(for container: WeaveDI.Container, _ checks: ContainerChecks) {
        registerContainerChecks(of: { container }, checks)
    }

    /// Registers the built-in checks `checks` names (`.passive` unless asked:
    /// `.active(sessionIdleLimit:)` for those that build) of whichever container is
    /// `WeaveDI.Container.live` when each runs: a container assigned to `live` later is the one
    /// checked from then on. `WeaveDIConfiguration.applyFromEnvironment()` registers the passive
    /// ones on `UnifiedRegistry.shared`; called again, it replaces them, keeping their states.
    public func registerLiveContainerChecks(_ checks: ContainerChecks = .passive) {
        registerContainerChecks(of: { WeaveDI.Container.live }, checks)
    }

    /// The names of the built-in checks, in the order they are registered (`.passive`
    /// registers the first two).
    public static let containerCheckNames = ["container.graph", "container.singletons", "container.sessions"]

    /// The built-in checks of the container `containerNow` returns as each check or fix runs.
    /// `registration`: `.addOrReplace` (checks of these names registered before are replaced),
    /// or `.addIfAbsent` (they are kept, and nothing is removed).
    func registerContainerChecks(
        of containerNow: @escaping @Sendable () -> WeaveDI.Container, _ checks: ContainerChecks,
        _ registration: Registration = .addOrReplace
    ) {
        switch checks {
        case .passive:
            registerPassiveGraphCheck(of: containerNow, registration)
            registerSingletonsCheck(of: containerNow, registration)
            // The program owns its sessions: none is judged, none closed.
            if registration != .addIfAbsent { _ = unregister("container.sessions") }
        case let .active(sessionIdleLimit):
            registerActiveGraphCheck(of: containerNow, registration)
            registerSingletonsCheck(of: containerNow, registration)
            registerSessionsCheck(of: containerNow, sessionIdleLimit: sessionIdleLimit, registration)
        }
    }

    /// `container.graph` of `ContainerChecks.passive`: what the recorded graph and the
    /// registrations say, nothing built.
    private func registerPassiveGraphCheck(
        of containerNow: @escaping @Sendable () -> WeaveDI.Container, _ registration: Registration
    ) {
        register(HealthCheck(name: "container.graph", tags: [HealthCheck.readiness]) {
            let container = containerNow()
            let cycles = container.checkCycles()
            let issues = container.diagnoseComponents().issues
            let notBuilt = cycles.notBuilt.count
            let data = [
                "registrations": "\(cycles.componentCount)", "notBuilt": "\(notBuilt)",
                "cycles": "\(cycles.cycles.count)", "componentIssues": "\(issues.count)",
            ]
            if let cycle = cycles.cycles.first {
                return .unhealthy("dependency cycle: \((cycle + [cycle[0]]).joined(separator: " -> "))", data: data)
            }
            if let issue = issues.first {
                return .degraded("\(issues.count) component issue(s); first: \(issue.type): \(issue.detail)", data: data)
            }
            let unknown = notBuilt == 0 ? "" : "; \(notBuilt) not built yet, their dependencies unknown (this check builds nothing)"
            return .healthy(
                "no cycle or component issue among \(cycles.componentCount) registration(s)\(unknown)", data: data)
        }, as: registration)
    }

    /// `container.graph` of `ContainerChecks.active`: builds (see `validateForHealth`).
    private func registerActiveGraphCheck(
        of containerNow: @escaping @Sendable () -> WeaveDI.Container, _ registration: Registration
    ) {
        let memory = WeaveDI.Container.GraphCheckMemory()
        register(HealthCheck(name: "container.graph", tags: [HealthCheck.readiness], timeout: .seconds(5)) { [weak self] in
            // Quiet every round unless health logging is on (`WEAVEDI_REGISTRY_HEALTH_LOGGING`).
            let report = await containerNow().validateForHealth(memory, logged: self?.healthLoggingEnabled ?? false)
            let data = [
                "built": "\(report.built.count)", "failures": "\(report.failures.count)",
                "cycles": "\(report.cycles.count)", "componentIssues": "\(report.componentIssues.count)",
            ]
            if let failure = report.failures.first {
                return .unhealthy("\(report.failures.count) registration(s) cannot be built; first: \(failure.reason)", data: data)
            }
            if let cycle = report.cycles.first {
                return .unhealthy("dependency cycle: \((cycle + [cycle[0]]).joined(separator: " -> "))", data: data)
            }
            if let issue = report.componentIssues.first {
                return .degraded("\(report.componentIssues.count) component issue(s); first: \(issue.type): \(issue.detail)", data: data)
            }
            let built = report.built.count
            return .healthy(built == 1 ? "the 1 registration builds" : built == 0 ? "no registrations" : "all \(built) registrations build", data: data)
        }, as: registration)
    }

    /// `container.singletons`: asks the built singletons that adopt `HealthReporting`.
    private func registerSingletonsCheck(
        of containerNow: @escaping @Sendable () -> WeaveDI.Container, _ registration: Registration
    ) {
        register(HealthCheck(name: "container.singletons", tags: [HealthCheck.liveness]) {
            let container = containerNow()
            var worst = HealthStatus.healthy
            var bad: [String] = []
            for singleton in container.healthReportingSingletons() {
                let result = await singleton.reporter.health()
                if result.status != .healthy { bad.append("\(singleton.type): \(result.message)") }
                worst = max(worst, result.status)
            }
            return bad.isEmpty
                ? .healthy("all self-reporting singletons are healthy")
                : HealthCheckResult(status: worst, message: bad.joined(separator: "; "), data: ["unhealthy": "\(bad.count)"])
        } fix: { [weak self] in
            // Said in the log only with health logging on, as the fix's outcome is.
            let logged = self?.healthLoggingEnabled ?? false
            let container = containerNow()
            var evicted: [String] = []
            for singleton in container.healthReportingSingletons()
            where await singleton.reporter.health().status == .unhealthy {
                if await container.evict(slot: singleton.slot, logged: logged) { evicted.append(singleton.type) }
            }
            guard !evicted.isEmpty else { throw FixNotApplicable("no self-reporting singleton is unhealthy: nothing to evict") }
            return "evicted \(evicted.joined(separator: ", "))"
        }, as: registration)
    }

    /// `container.sessions`: sessions idle longer than `sessionIdleLimit`; its fix closes them.
    private func registerSessionsCheck(
        of containerNow: @escaping @Sendable () -> WeaveDI.Container, sessionIdleLimit: Duration,
        _ registration: Registration
    ) {
        register(HealthCheck(name: "container.sessions", tags: [HealthCheck.liveness]) {
            let container = containerNow()
            let idle = container.idleSessions(longerThan: sessionIdleLimit)
            let now = ContinuousClock.now
            return idle.isEmpty
                ? .healthy("\(container.openSessions.count) open session(s), none idle for more than \(format(sessionIdleLimit))")
                : .degraded(
                    "\(idle.count) session(s) idle for more than \(format(sessionIdleLimit)): "
                        + namedSessions(idle.map { ($0.id, now - $0.lastActiveAt) }),
                    data: ["idle": idle.map(\.id).joined(separator: ",")])
        } fix: {
            let container = containerNow()
            let cutoff = ContinuousClock.now - sessionIdleLimit
            var closed: [(id: String, idle: Duration)] = []
            // Each closed only if still idle: one that came into use since the list stays open.
            // Each closing is logged whatever health logging says: the program may hold it still.
            for session in container.idleSessions(longerThan: sessionIdleLimit) {
                if let idle = await session.closeIfIdle(since: cutoff, logged: false, check: "container.sessions") {
                    closed.append((session.id, idle))
                }
            }
            guard !closed.isEmpty else {
                throw FixNotApplicable("no session idle for more than \(format(sessionIdleLimit)): nothing to close")
            }
            return "closed \(closed.count) idle session(s): \(namedSessions(closed))"
        }, as: registration)
    }
}

/// How many sessions a `container.sessions` message names; the rest are counted.
let namedSessionsLimit = 5

/// `'a' (idle 400 ms), 'b' (idle 2 s)`, the first `namedSessionsLimit`, then `and 3 more`.
func namedSessions(_ sessions: [(id: String, idle: Duration)]) -> String {
    var text = sessions.prefix(namedSessionsLimit).map { "'\($0.id)' (idle \(format($0.idle)))" }.joined(separator: ", ")
    if sessions.count > namedSessionsLimit { text += ", and \(sessions.count - namedSessionsLimit) more" }
    return text
}

extension WeaveDI.Container {
    /// Open sessions not in use (none current in a `withCurrent`, no request open) that
    /// resolved nothing and opened or closed no request for longer than `limit`. A job's run
    /// that resolves nothing for an hour is not idle; a session someone forgot to close is.
    /// Sessions opened with `closesWhenIdle: false` are never listed.
    public func idleSessions(longerThan limit: Duration) -> [Session] {
        let cutoff = ContinuousClock.now - limit
        return openSessions.filter { $0.closesWhenIdle && $0.instances.isIdle(since: cutoff) }
    }
}
