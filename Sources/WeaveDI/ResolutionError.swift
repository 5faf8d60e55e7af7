/// Why a service could not be resolved. Every case names the types involved, and its
/// `description` says what to do about it.
public enum ResolutionError: Error, CustomStringConvertible, Sendable {
    /// Nothing is registered for `type`; `suggestions` are registered types with similar names.
    case notRegistered(type: String, suggestions: [String])
    /// Building a service needed itself; `path` runs from the first to the repeated type,
    /// e.g. `["A", "B", "A"]`.
    case cycle(path: [String])
    /// A longer-lived service (`outer`, in `outerScope`) needed a shorter-lived one (`inner`, in
    /// `innerScope`), which it would have captured beyond its lifetime.
    case scopeMismatch(outer: String, outerScope: WeaveDI.Scope, inner: String, innerScope: WeaveDI.Scope)
    /// `type` is registered in `scope`, but no such scope is active where it was resolved.
    case noActiveScope(type: String, scope: WeaveDI.Scope)
    /// `type` was resolved through a session or request (`scopeID`) that is already closed.
    case scopeClosed(type: String, scope: WeaveDI.Scope, scopeID: String)
    /// Building went deeper than `ResolutionError.maximumDepth` nested services.
    case tooDeep(path: [String])
    /// The factory of `type` threw `underlying`.
    case factoryFailed(type: String, underlying: any Error & Sendable)

    /// How many services may be under construction, one inside another, on one thread.
    public static let maximumDepth = 200

    /// A one-line explanation with the fix.
    public var description: String {
        switch self {
        case let .notRegistered(type, suggestions):
            let hint = suggestions.isEmpty ? "" : " (did you mean \(suggestions.joined(separator: ", "))?)"
            return "no registration for \(type)\(hint); register it in a module with "
                + "container.register(\(type).self) { ... } or define an InjectedKey for it"
        case let .cycle(path):
            return "dependency cycle: \(path.joined(separator: " -> ")); break it by making one of these "
                + "resolve the other lazily (at use, not in its factory) or by extracting what both need"
        case let .scopeMismatch(outer, outerScope, inner, innerScope):
            return "scope mismatch: \(outer) (\(outerScope)) needs \(inner) (\(innerScope)), which would "
                + "outlive its \(innerScope); register \(outer) with scope .\(innerScope) or shorter, or "
                + "resolve \(inner) at the point of use"
        case let .noActiveScope(type, scope):
            let opener = scope == .session ? "container.openSession(id:)" : "session.openRequest(id:)"
            return "no active \(scope) for \(type): resolve it through a \(scope) (\(opener)) or inside "
                + "\(scope).withCurrent { ... }"
        case let .scopeClosed(type, scope, id):
            return "cannot resolve \(type): \(scope) '\(id)' is closed; open a new \(scope)"
        case let .tooDeep(path):
            return "resolution deeper than \(ResolutionError.maximumDepth) levels (\(path.suffix(6).joined(separator: " -> ")) ...); "
                + "flatten the graph"
        case let .factoryFailed(type, underlying):
            return "the factory of \(type) failed: \(underlying)"
        }
    }
}

extension ResolutionError {
    /// What a build throws when the factory of `slot` threw `error`: a `ResolutionError` (from
    /// a dependency) as it is, anything else wrapped in `factoryFailed`.
    @inline(never)
    static func thrownByFactory(_ error: any Error, slot: Int) -> ResolutionError {
        if let error = error as? ResolutionError { return error }
        return .factoryFailed(type: TypeSlots.shared.name(ofSlot: slot), underlying: error)
    }
}
