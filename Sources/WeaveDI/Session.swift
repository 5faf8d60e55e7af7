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
    /// Whether the `container.sessions` health check may find the session idle and its fix close
    /// it (`openSession(id:attributes:closesWhenIdle:)`).
    public let closesWhenIdle: Bool

    init(id: String, container: WeaveDI.Container, attributes: [String: String], logged: Bool = true, closesWhenIdle: Bool = true) {
        self.id = id
        self.container = container
        self.attributes = attributes
        self.logged = logged
        self.closesWhenIdle = closesWhenIdle
        openedAt = .now
        instances = ScopeInstances(scope: .session, id: id, openedAt: openedAt)
    }

    /// Whether `close()` has run.
    public var isClosed: Bool { instances.isClosed }
    /// Who closed the session and when (`close()`, `releaseAll()`, the `container.sessions`
    /// fix); nil while it is open.
    public var closing: ScopeClosing? { instances.closing }
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

    /// Opens a request in this session. A request of a closed session is closed from the start:
    /// resolving through it throws `scopeClosed` saying the session was closed, and by whom.
    public func openRequest(id: String) -> Request {
        let request = Request(id: id, session: self)
        if !instances.add(request, at: .now) {
            let closing = instances.closing ?? ScopeClosing(cause: .close, closedAt: .now)
            _ = request.instances.close { _, _ in closing.forRequest(ofSession: self.id) }
        }
        return request
    }

    /// Opens a request, runs `body` with it (and with it current, as `request.withCurrent`), and
    /// closes it on every path, whether `body` returns or throws: what `body` throws is thrown on.
    public func withRequest<R, E: Error>(
        id: String, isolation: isolated (any Actor)? = #isolation, _ body: (Request) async throws(E) -> R
    ) async throws(E) -> R {
        let request = openRequest(id: id)
        let result: Result<R, E> = await ScopeContext.with(.request(request), isolation: isolation) {
            do throws(E) { return .success(try await body(request)) } catch { return .failure(error) }
        }
        await request.close()
        return try result.get()
    }

    /// Runs `body` with this session current: this container's `resolve` and `require` inside
    /// it (and in its child tasks) resolve session-scoped services from this session; so do
    /// `@Injected` and `@Factory` when this is a session of `Container.live`, the only container
    /// they read.
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
    /// A body still running in a `withCurrent` of the session or of one of its requests is not
    /// waited for: its next resolve throws `scopeClosed`, saying the session was closed.
    public func close() async {
        await close(cause: .close)
    }

    /// `close()`, recording `cause` as who closed it (`releaseAll()`).
    func close(cause: ScopeClosing.Cause) async {
        _ = await finishClosing(instances.close(closing: ScopeClosing.at(cause)))
    }

    /// Closes the session, as `close()`, if it is idle since `cutoff` (not in use, no activity
    /// since): checked and closed at once, so a session that comes into use meanwhile stays
    /// open. Returns whether it closed it.
    @discardableResult
    public func closeIfIdle(since cutoff: ContinuousClock.Instant) async -> Bool {
        await closeIfIdle(since: cutoff, logged: true) != nil
    }

    /// `closeIfIdle(since:)`, saying so in the log only if `logged` (and the session is), or as
    /// the fix of health check `check` (always logged, as an error: the program may still hold
    /// the session). Returns how long it was idle, nil if it did not close it.
    func closeIfIdle(since cutoff: ContinuousClock.Instant, logged: Bool, check: String? = nil) async -> Duration? {
        let taken = instances.close(ifIdleSince: cutoff) { lastActivity, now in
            ScopeClosing(cause: .idle(idle: now - lastActivity, check: check), closedAt: now)
        }
        guard await finishClosing(taken, logged: logged && check == nil), let taken,
            case let .idle(idle, _) = taken.closing.cause
        else { return nil }
        if let check {
            WeaveDILog.log(
                .error,
                "session '\(id)' closed by the \(check) fix: idle for \(format(idle)), \(taken.disposables.count) instance(s) "
                    + "disposed; resolving through it or a request it opens now throws scopeClosed (open a session that "
                    + "stays open while idle with closesWhenIdle: false)")
        }
        return idle
    }

    @discardableResult
    private func finishClosing(
        _ taken: (disposables: [any Disposable], requests: [Request], closing: ScopeClosing)?, logged: Bool = true
    ) async -> Bool {
        guard let (disposables, open, closing) = taken else { return false }
        let ofSession = closing.forRequest(ofSession: id)
        for request in open { await request.close { _, _ in ofSession } }
        for disposable in disposables { await disposable.dispose() }
        container.sessionClosed(self)
        if logged && self.logged { WeaveDILog.log(.diagnostic, "session '\(id)' closed, \(disposables.count) instance(s) disposed") }
        return true
    }

    /// Closes the session without waiting: later resolutions through it throw at once, and the
    /// instances it and its open requests created are disposed (requests' first, newest first)
    /// in a task of their own when there are any.
    func closeWithoutWaiting() {
        guard let (disposables, open, closing) = instances.close(closing: ScopeClosing.at(.close))
        else { return }
        let ofSession = closing.forRequest(ofSession: id)
        var all: [any Disposable] = []
        for request in open {
            if let (created, _, _) = request.instances.close(closing: { _, _ in ofSession }) { all += created }
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
