/// How and when a session or request was closed: what `ResolutionError.scopeClosed` carries, so
/// that a resolve through a closed scope says who closed it rather than only that it is closed.
public struct ScopeClosing: Sendable, Equatable {
    /// Who closed the scope.
    public enum Cause: Sendable, Equatable {
        /// `close()` (or the daemon's `closeWithoutWaiting()`).
        case close
        /// `releaseAll()` on the session's container.
        case releaseAll
        /// Closed as idle after `idle` without use: by the fix of the health check named
        /// `check` (`container.sessions`), or by `closeIfIdle(since:)` called by the program
        /// (`check` nil).
        case idle(idle: Duration, check: String?)
    }

    /// Who closed the scope (for a request closed with its session, who closed the session).
    public let cause: Cause
    /// When it was closed (for a request closed with its session, when the session was).
    public let closedAt: ContinuousClock.Instant
    /// For a request closed because its session was (closed while the request was open, or
    /// already closed when the request was opened): the session's id. Nil for a session, and
    /// for a request closed by its own `close()`.
    public let sessionID: String?

    /// A closing.
    public init(cause: Cause, closedAt: ContinuousClock.Instant, sessionID: String? = nil) {
        self.cause = cause
        self.closedAt = closedAt
        self.sessionID = sessionID
    }

    /// `by close()`, `by releaseAll()`, `idle 400 ms, by the container.sessions fix`,
    /// `idle 400 ms, by closeIfIdle(since:)`.
    var how: String {
        switch cause {
        case .close: "by close()"
        case .releaseAll: "by releaseAll()"
        case let .idle(idle, check?): "idle \(format(idle)), by the \(check) fix"
        case let .idle(idle, nil): "idle \(format(idle)), by closeIfIdle(since:)"
        }
    }

    /// What `close(closing:)` of a scope's instances takes for a closing whose cause does not
    /// depend on the scope's last activity: `cause`, at the time it closes.
    static func at(_ cause: Cause) -> (ContinuousClock.Instant, ContinuousClock.Instant) -> ScopeClosing {
        { _, now in ScopeClosing(cause: cause, closedAt: now) }
    }

    /// The same closing, as a request of session `id` gets it when that session closes.
    func forRequest(ofSession id: String) -> ScopeClosing {
        ScopeClosing(cause: cause, closedAt: closedAt, sessionID: id)
    }
}
