/// What `UnifiedRegistry.enableOptimization()` did and found.
public struct OptimizationReport: Sendable, Equatable {
    /// Registrations in the container.
    public var registrations: Int
    /// Singletons built by the warm-up (and now read lock-free).
    public var singletonsBuilt: Int
    /// Recorded dependency edges.
    public var edges: Int
    /// What validation found (failures, cycles, component issues).
    public var validation: WeaveDI.ValidationReport
    /// How long it took.
    public var duration: Duration
}

extension UnifiedRegistry {
    /// Turns optimization on for `container` (the live one by default), for good: validates and
    /// warms what is registered now, and from then on what every `bootstrap` of the container
    /// registers, when that bootstrap finishes. Call it before registering, as the documentation
    /// does, or after: either way every registration ends up warmed.
    ///
    /// Warming builds every singleton (so later resolves take the lock-free path), probes
    /// session and request services in a scope that is then closed, and records every
    /// dependency edge. Logs and returns what it found now.
    ///
    /// Synchronous, so that it can be called anywhere; the probe scope's instances are disposed
    /// in a task of their own. `await enableOptimization(container:)` waits for them.
    @discardableResult
    public func enableOptimization(container: WeaveDI.Container = .live) -> OptimizationReport {
        let start = ContinuousClock.now
        let pass = container.startOptimizing()
        pass.probe?.closeWithoutWaiting()
        return container.finishOptimizing(pass, since: start, newOnly: false)
    }

    /// `enableOptimization(container:)`, waiting for the probe scope's instances to be disposed.
    @discardableResult
    public func enableOptimization(container: WeaveDI.Container) async -> OptimizationReport {
        let start = ContinuousClock.now
        let pass = container.startOptimizing()
        await pass.probe?.close()
        return container.finishOptimizing(pass, since: start, newOnly: false)
    }
}

extension WeaveDI.Container {
    /// Marks the container optimized and builds every registration once; the caller closes the
    /// probe scope.
    func startOptimizing() -> ValidationPass {
        WeaveDILog.log(.optimization, "optimization started")
        let entries: [Entry] = state.withLock { state in
            state.optimized = true
            state.unoptimized = []
            return state.order.compactMap(entry(at:))
        }
        return validationPass(entries, logged: true)
    }

    /// In an optimized container, at the end of a bootstrap: validates and warms what was
    /// registered since the last pass. Returns nil when there was nothing new.
    @discardableResult
    func optimizeNewRegistrations() async -> OptimizationReport? {
        let start = ContinuousClock.now
        let entries: [Entry] = state.withLock { state in
            guard state.optimized else { return [] }
            defer { state.unoptimized = [] }
            return state.unoptimized.compactMap(entry(at:))
        }
        guard !entries.isEmpty else { return nil }
        let pass = validationPass(entries, logged: true)
        await pass.probe?.close()
        return finishOptimizing(pass, since: start, newOnly: true)
    }

    /// The report of an optimization pass, logged.
    func finishOptimizing(_ pass: ValidationPass, since start: ContinuousClock.Instant, newOnly: Bool) -> OptimizationReport {
        let validation = finish(pass, logged: true)
        let registrations = registrations
        let report = OptimizationReport(
            registrations: registrations.count,
            singletonsBuilt: registrations.filter(\.isBuilt).count,
            edges: registrations.map(\.dependencies.count).reduce(0, +),
            validation: validation, duration: ContinuousClock.now - start)
        WeaveDILog.log(
            validation.isValid ? .optimization : .error,
            "optimization \(newOnly ? "of \(pass.count) new registration(s) " : "")finished in \(format(report.duration)): "
                + "\(report.registrations) registration(s), \(report.singletonsBuilt) singleton(s) built, "
                + "\(report.edges) edge(s), \(validation.failures.count) failure(s), \(validation.cycles.count) cycle(s)")
        logProblems(of: validation)
        return report
    }

    /// How many failures, and how many cycles, an optimization pass names in the log.
    static let loggedProblems = 10

    /// Names in the log, after an optimization pass's summary, what it found wrong: each
    /// registration that failed to build, its scope and why (`ValidationReport.failures`), and
    /// each cycle (`ValidationReport.cycles`, as `A -> B -> A`), the first `loggedProblems` of
    /// each, then how many more. A `bootstrap` returns nothing: the log is all its caller gets.
    /// A reason quotes errors from outside (a factory's), its control characters escaped.
    func logProblems(of validation: WeaveDI.ValidationReport) {
        let limit = Self.loggedProblems
        for failure in validation.failures.prefix(limit) {
            WeaveDILog.log(
                .error, "\(failure.type) (\(failure.scope)) failed to build: \(ControlCharacters.escaped(failure.reason))")
        }
        if validation.failures.count > limit {
            WeaveDILog.log(
                .error, "and \(validation.failures.count - limit) more registration(s) failed to build "
                    + "(the report's validation.failures lists them all)")
        }
        for cycle in validation.cycles.prefix(limit) where !cycle.isEmpty {
            WeaveDILog.log(.error, "dependency cycle: \((cycle + [cycle[0]]).joined(separator: " -> "))")
        }
        if validation.cycles.count > limit {
            WeaveDILog.log(
                .error, "and \(validation.cycles.count - limit) more dependency cycle(s) "
                    + "(the report's validation.cycles lists them all)")
        }
    }

    /// Whether `UnifiedRegistry.enableOptimization()` was called for this container.
    public var isOptimized: Bool { state.withLock { $0.optimized } }
}
