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

extension ScopeOwner {
    /// "session" or "request".
    var kind: String {
        switch self {
        case .session: "session"
        case .request: "request"
        }
    }

    /// The session's or request's id, escaped for a message.
    var escapedID: String {
        switch self {
        case let .session(session): ControlCharacters.escaped(session.id)
        case let .request(request): ControlCharacters.escaped(request.id)
        }
    }
}

extension WeaveDI.Container {
    /// What a wrapper read (`@Injected`, `@Factory`, which read `Container.live`) that failed
    /// with `error` says about it: `error`, or, when the session or request current here (made
    /// current by `withCurrent`, or the one building) belongs to another container, the error
    /// told as what it is: a read of `Container.live`, which the wrappers read whatever is
    /// current, and how to resolve through the current scope instead (no active scope: as a key
    /// read says it, `noActiveScopeElsewhere`). Only failure paths call it.
    @inline(never)
    static func wrapperFailure(_ error: ResolutionError, reading type: Any.Type) -> String {
        let live = WeaveDI.Container.live
        if let told = live.noActiveScopeElsewhere(
            error, asked: type, name: liveName, role: ", the container wrapper reads use")
        {
            return told
        }
        guard let owner = ResolutionStack.current.owner, owner.container !== live, error.path.isEmpty else {
            return error.description
        }
        let current = "the current \(owner.kind) '\(owner.escapedID)' belongs to another container, which wrapper reads do not use"
        let registeredThere = owner.container.table.load(TypeSlots.shared.slot(forAny: type)) != nil
        switch error {
        case let .notRegistered(name, _, _) where registeredThere:
            let metatype = ResolutionError.metatype(named: name) ?? "\(name).self"
            return "no registration for \(name) in WeaveDI.Container.live; \(current): resolve through it "
                + "(\(owner.kind).require(\(metatype)))"
        default:
            return "\(error) (in WeaveDI.Container.live; \(current))"
        }
    }
}

extension WeaveDI.Container {
    /// How the messages below name `Container.live`.
    static let liveName = "WeaveDI.Container.live"

    /// `error`, a `noActiveScope` raised in this container, told as what it is when the session
    /// or request in effect (made current by `withCurrent`, or the one building) belongs to
    /// another container, which this container does not use: whose scope was current, and what
    /// to do (open the scope on this container, or resolve `type`, the type asked for, through
    /// the current scope when its container registers it). Nil for any other error, or with no
    /// other container's scope in effect. `name`: how the line names this container; `role`:
    /// what follows the name where the error is told (", the container the key reads").
    /// Only failure paths call it.
    @inline(never)
    func noActiveScopeElsewhere(_ error: ResolutionError, asked type: Any.Type, name: String, role: String = "") -> String? {
        guard case let .noActiveScope(subject, scope, path) = error,
            let owner = ResolutionStack.current.owner, owner.container !== self
        else { return nil }
        let building = path.first.map { "cannot build \($0) (\(path.joined(separator: " -> "))): " } ?? ""
        // From `name`, not from another look at `live` (which may have been swapped since).
        let opener = name == Self.liveName ? name : "container"
        var fix = scope == .session
            ? "open the session on \(name) (\(opener).openSession(id:)) and make it current"
            : "open the request on a session of \(name) (\(opener).openSession(id:), then session.openRequest(id:)) "
                + "and make it current"
        if owner.container.table.load(TypeSlots.shared.slot(forAny: type)) != nil {
            let typeName = TypeSlots.shared.logName(of: type)
            let metatype = ResolutionError.metatype(named: typeName) ?? "\(typeName).self"
            fix += ", or resolve through it (\(owner.kind).require(\(metatype)))"
        }
        return building + "no active \(scope) for \(subject) in \(name)\(role): the current \(owner.kind) "
            + "'\(owner.escapedID)' belongs to another container; " + fix
    }
}
