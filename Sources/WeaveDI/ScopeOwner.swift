/// The session or request that a resolution happens in.
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
}
