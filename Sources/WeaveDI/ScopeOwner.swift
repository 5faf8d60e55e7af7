import Synchronization

/// The session or request that a resolution happens in.
@usableFromInline
enum ScopeOwner: Sendable {
    case session(Session)
    case request(Request)

    var container: WeaveDI.Container {
        switch self {
        case let .session(session): session.container
        case let .request(request): request.session.container
        }
    }

    var resolver: any Resolver {
        switch self {
        case let .session(session): session
        case let .request(request): request
        }
    }

    var instances: ScopeInstances {
        switch self {
        case let .session(session): session.instances
        case let .request(request): request.instances
        }
    }
}

/// The session or request made current by `withCurrent`, following structured concurrency.
enum ScopeContext {
    @TaskLocal static var current: ScopeOwner?

    /// Whether any `withCurrent` ever ran in this process. Until then resolutions skip the
    /// task-local lookup. Never goes back to false (a task started inside `withCurrent` keeps
    /// its scope for as long as it runs).
    static let everUsed = Atomic<Bool>(false)

    /// The current session or request, if any.
    static var active: ScopeOwner? {
        everUsed.load(ordering: .relaxed) ? current : nil
    }

    /// Runs `body` with `owner` current.
    static func with<R>(_ owner: ScopeOwner, _ body: () throws -> R) rethrows -> R {
        everUsed.store(true, ordering: .relaxed)
        return try $current.withValue(owner, operation: body)
    }

    /// Runs async `body` with `owner` current.
    static func with<R>(
        _ owner: ScopeOwner, isolation: isolated (any Actor)?, _ body: () async throws -> R
    ) async rethrows -> R {
        everUsed.store(true, ordering: .relaxed)
        return try await $current.withValue(owner, operation: body, isolation: isolation)
    }
}
