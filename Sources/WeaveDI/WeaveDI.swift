/// The WeaveDI namespace: `WeaveDI.Container`, `WeaveDI.Scope`, `WeaveDI.Module`.
public enum WeaveDI {
    /// How long a registered service's instance lives.
    ///
    /// From longest to shortest: `singleton` (one per container), `session` (one per open
    /// `Session`), `request` (one per open `Request`), `transient` (a new instance on every
    /// resolve). A longer-lived instance may never hold a shorter-lived one: building a singleton
    /// that needs a session-scoped service fails with `ResolutionError.scopeMismatch`.
    public enum Scope: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// One instance per container, built lazily on first resolve, exactly once.
        case singleton
        /// One instance per session (`Container.openSession(id:)`).
        case session
        /// One instance per request (`Session.openRequest(id:)`).
        case request
        /// A new instance on every resolve.
        case transient

        /// The scope's name, as written in code (`singleton`, `session`, …).
        public var description: String { rawValue }

        /// Relative lifetime: higher lives longer; transient has none of its own.
        @usableFromInline
        var lifetime: Int {
            switch self {
            case .singleton: 3
            case .session: 2
            case .request: 1
            case .transient: 0
            }
        }
    }
}
