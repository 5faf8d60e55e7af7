/// What a registry tells its observer (`UnifiedRegistry.setEventObserver(_:)`): a check changed
/// state, or one of its fixes ran.
public enum HealthEvent: Sendable, Equatable {
    /// The check named `check` changed state across its thresholds, from `from` (nil: this is
    /// its first result) to `to`; `message` is what the run that changed it said.
    case transition(check: String, from: HealthStatus?, to: HealthStatus, message: String)
    /// A fix ran, automatically or by hand, and ended as `record` says (a refused one does not
    /// run, and is not told); `healed` says whether the check passed when run again after it.
    case fixed(FixRecord, healed: Bool)
}

extension UnifiedRegistry {
    /// The observer, in a class box: a closure read out of a `Locked` with `withLock { $0 }`
    /// comes back wrapped in one more thunk each time (see `WeaveDILog`).
    final class EventObserver: Sendable {
        let observe: @Sendable (HealthEvent) -> Void
        init(_ observe: @escaping @Sendable (HealthEvent) -> Void) { self.observe = observe }
    }

    /// Calls `observer` for every change of a check's state and every fix that ran, whether
    /// health logging (`healthLoggingEnabled`) is on or not; nil removes it. One observer at a
    /// time: a new one replaces the last. It is called outside the registry's lock, on the task
    /// that ran the check or the fix, so it may read the registry, but should be quick: the
    /// round waits for it. weavedid logs these events through it.
    public func setEventObserver(_ observer: (@Sendable (HealthEvent) -> Void)?) {
        let box = observer.map(EventObserver.init)
        state.withLock { $0.observer = box }
    }

    /// Tells the observer, if there is one, of `event`.
    func tell(_ event: @autoclosure () -> HealthEvent) {
        guard let observer = state.withLock({ $0.observer }) else { return }
        observer.observe(event())
    }
}
