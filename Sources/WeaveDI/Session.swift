import Synchronization

/// A scope for session-scoped services: one instance of each per session, disposed when the
/// session closes. The daemon opens one per control connection and per job run.
public final class Session: Resolver, Sendable {
    /// The identifier given to `openSession(id:)`.
    public let id: String
    /// The container the session belongs to.
    public let container: WeaveDI.Container
    /// Free-form facts about the session (the daemon records the peer's uid and pid).
    public let attributes: [String: String]
    /// When the session was opened.
    public let openedAt: ContinuousClock.Instant
    /// Its instances, open requests and last activity, behind one lock.
    let instances: ScopeInstances
    /// Whether opening and closing are logged (not for the probe session of a health check).
    let logged: Bool

    init(id: String, container: WeaveDI.Container, attributes: [String: String], logged: Bool = true) {
        self.id = id
        self.container = container
        self.attributes = attributes
        self.logged = logged
        openedAt = .now
        instances = ScopeInstances(scope: .session, id: id, openedAt: openedAt)
    }

    /// Whether `close()` has run.
    public var isClosed: Bool { instances.isClosed }
    /// How many session-scoped instances the session holds.
    public var instanceCount: Int { instances.count }
    /// The requests open in this session.
    public var openRequests: [Request] { instances.state.withLock { Array($0.requests.values) } }
    /// When the session last resolved something, opened a request, saw one close, or was left
    /// by a `withCurrent`.
    public var lastActiveAt: ContinuousClock.Instant { instances.state.withLock { $0.lastActivity } }

    /// The instance for `type` in this session, or nil (the reason is logged).
    public func resolve<T: Sendable>(_ type: T.Type) -> T? {
        do { return try require(type, logged: true) } catch {
            WeaveDILog.log(
                .error,
                "session '\(id)': resolve(\(TypeSlots.shared.logName(of: type))) returned nil: \(container.explained(error, for: type))")
            return nil
        }
    }

    /// The instance for `type` in this session; throws `scopeClosed` once the session is closed.
    public func require<T: Sendable>(_ type: T.Type) throws(ResolutionError) -> T {
        try require(type, logged: false)
    }

    /// `require`; `logged`: as `Container.requireSlow`'s.
    private func require<T: Sendable>(_ type: T.Type, logged: Bool) throws(ResolutionError) -> T {
        try instances.touch(at: .now, for: ResolutionStack.current.messageName(of: TypeSlots.shared.slot(for: type)))
        return try container.requireScoped(type, explicit: .session(self), logged: logged)
    }

    /// Opens a request in this session. A request of a closed session is closed from the start.
    public func openRequest(id: String) -> Request {
        let request = Request(id: id, session: self)
        if !instances.add(request, at: .now) { _ = request.instances.close() }
        return request
    }

    /// Runs `body` with this session current: `Container.resolve`, `@Injected` and `@Factory`
    /// inside it (and in its child tasks) resolve session-scoped services from this session.
    /// While it runs, the session is in use: never idle (`idleSessions(longerThan:)`).
    public func withCurrent<R>(_ body: () throws -> R) rethrows -> R {
        instances.use(true, at: .now)
        defer { instances.use(false, at: .now) }
        return try ScopeContext.with(.session(self), body)
    }

    /// Runs async `body` with this session current (see the synchronous overload).
    public func withCurrent<R>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> R
    ) async rethrows -> R {
        instances.use(true, at: .now)
        defer { instances.use(false, at: .now) }
        return try await ScopeContext.with(.session(self), isolation: isolation, body)
    }

    /// Closes the session: its open requests first, then `dispose()` once on each instance it
    /// created, newest first. Later resolutions through it throw. Closing twice does nothing.
    public func close() async {
        _ = await finishClosing(instances.close())
    }

    /// Closes the session, as `close()`, if it is idle since `cutoff` (not in use, no activity
    /// since): checked and closed at once, so a session that comes into use meanwhile stays
    /// open. Returns whether it closed it.
    @discardableResult
    public func closeIfIdle(since cutoff: ContinuousClock.Instant) async -> Bool {
        await closeIfIdle(since: cutoff, logged: true)
    }

    /// `closeIfIdle(since:)`, saying so in the log only if `logged` (and the session is).
    func closeIfIdle(since cutoff: ContinuousClock.Instant, logged: Bool) async -> Bool {
        await finishClosing(instances.close(ifIdleSince: cutoff), logged: logged)
    }

    private func finishClosing(_ taken: (disposables: [any Disposable], requests: [Request])?, logged: Bool = true) async -> Bool {
        guard let (disposables, open) = taken else { return false }
        for request in open { await request.close() }
        for disposable in disposables { await disposable.dispose() }
        container.sessionClosed(self)
        if logged && self.logged { WeaveDILog.log(.diagnostic, "session '\(id)' closed, \(disposables.count) instance(s) disposed") }
        return true
    }

    /// Closes the session without waiting: later resolutions through it throw at once, and the
    /// instances it and its open requests created are disposed (requests' first, newest first)
    /// in a task of their own when there are any.
    func closeWithoutWaiting() {
        guard let (disposables, open) = instances.close() else { return }
        var all: [any Disposable] = []
        for request in open {
            if let (created, _) = request.instances.close() { all += created }
        }
        all += disposables
        container.sessionClosed(self)
        if logged { WeaveDILog.log(.diagnostic, "session '\(id)' closed, \(all.count) instance(s) to dispose") }
        if !all.isEmpty {
            Task { for disposable in all { await disposable.dispose() } }
        }
    }

    func requestClosed(_ request: Request) {
        instances.remove(request, at: .now)
    }
}
