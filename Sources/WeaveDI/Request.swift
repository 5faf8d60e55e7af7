/// A scope for request-scoped services, inside a session: one instance of each per request,
/// disposed when the request closes. The daemon opens one per control call.
public final class Request: Resolver, Sendable {
    /// The identifier given to `openRequest(id:)`.
    public let id: String
    /// The session the request belongs to.
    public let session: Session
    let instances: ScopeInstances

    init(id: String, session: Session) {
        self.id = id
        self.session = session
        instances = ScopeInstances(scope: .request, id: id, openedAt: session.openedAt)
    }

    /// Whether `close()` has run (or the session was closed when the request was opened).
    public var isClosed: Bool { instances.isClosed }

    /// The instance for `type` in this request, or nil (the reason is logged).
    public func resolve<T: Sendable>(_ type: T.Type) -> T? {
        do { return try require(type, logged: true) } catch {
            WeaveDILog.log(
                .error,
                "request '\(id)': resolve(\(TypeSlots.shared.logName(of: type))) returned nil: "
                    + "\(session.container.explained(error, for: type))")
            return nil
        }
    }

    /// The instance for `type` in this request (session-scoped ones from its session); throws
    /// `scopeClosed` once the request is closed.
    public func require<T: Sendable>(_ type: T.Type) throws(ResolutionError) -> T {
        try require(type, logged: false)
    }

    /// `require`; `logged`: as `Container.requireSlow`'s.
    private func require<T: Sendable>(_ type: T.Type, logged: Bool) throws(ResolutionError) -> T {
        try instances.ensureOpen(for: ResolutionStack.current.messageName(of: TypeSlots.shared.slot(for: type)))
        return try session.container.requireScoped(type, explicit: .request(self), logged: logged)
    }

    /// Runs `body` with this request (and its session) current.
    public func withCurrent<R>(_ body: () throws -> R) rethrows -> R {
        try ScopeContext.with(.request(self), body)
    }

    /// Runs async `body` with this request (and its session) current.
    public func withCurrent<R>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> R
    ) async rethrows -> R {
        try await ScopeContext.with(.request(self), isolation: isolation, body)
    }

    /// Closes the request: `dispose()` once on each instance it created, newest first. A body
    /// still running in its `withCurrent` is not waited for: its next resolve throws `scopeClosed`.
    public func close() async {
        await close(closing: ScopeClosing.at(.close))
    }

    /// `close()`, recording `closing` as who closed it (its session, when that closes).
    func close(closing: (ContinuousClock.Instant, ContinuousClock.Instant) -> ScopeClosing) async {
        guard let (disposables, _, _) = instances.close(closing: closing) else { return }
        for disposable in disposables { await disposable.dispose() }
        session.requestClosed(self)
    }

    /// Closes the request without waiting: later resolutions through it throw at once, and
    /// the instances it created are disposed (newest first) in a task of their own when there
    /// are any. For callers that cannot suspend, such as an I/O loop answering a call inline.
    public func closeWithoutWaiting() {
        guard let (disposables, _, _) = instances.close(closing: ScopeClosing.at(.close)) else { return }
        session.requestClosed(self)
        if !disposables.isEmpty {
            Task { for disposable in disposables { await disposable.dispose() } }
        }
    }
}
