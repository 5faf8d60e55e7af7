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
    /// Validates and warms `container` (the live one by default): builds every singleton (so
    /// later resolves take the lock-free path), probes session and request services in a
    /// scope that is then closed, records every dependency edge, and freezes the container
    /// (a later registration is logged as undoing the optimization). Logs and returns what it
    /// found.
    @discardableResult
    public func enableOptimization(container: WeaveDI.Container = .live) async -> OptimizationReport {
        let start = ContinuousClock.now
        WeaveDILog.log(.optimization, "optimization started")
        let validation = await container.validate()
        let registrations = container.registrations
        container.freeze()
        let report = OptimizationReport(
            registrations: registrations.count,
            singletonsBuilt: registrations.filter(\.isBuilt).count,
            edges: registrations.map(\.dependencies.count).reduce(0, +),
            validation: validation, duration: ContinuousClock.now - start)
        WeaveDILog.log(
            validation.isValid ? .optimization : .error,
            "optimization finished in \(format(report.duration)): \(report.registrations) registration(s), "
                + "\(report.singletonsBuilt) singleton(s) built, \(report.edges) edge(s), "
                + "\(validation.failures.count) failure(s), \(validation.cycles.count) cycle(s)")
        return report
    }
}

extension WeaveDI.Container {
    /// Marks the container optimized; registering afterwards is logged (the warm-up no longer
    /// covers the new registration).
    func freeze() {
        state.withLock { $0.frozen = true }
    }
}
