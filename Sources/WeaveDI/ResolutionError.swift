/// Why a service could not be resolved. Every case names the types involved, and its
/// `description` says what to do about it.
///
/// An error raised while building a dependency carries `path`: the services being built,
/// outermost first, down to the one the error is about (`["A", "B", "C"]`: resolving A
/// built B, which needed C). It is empty when the error is about the type asked for itself.
/// The path is made only as the error propagates, by each build it passes through.
public enum ResolutionError: Error, CustomStringConvertible, Sendable {
    /// Nothing is registered for `type`; `suggestions` are registered types with similar names.
    case notRegistered(type: String, suggestions: [String], path: [String] = [])
    /// Building a service needed itself; `path` runs from the first to the repeated type,
    /// e.g. `["A", "B", "A"]`.
    case cycle(path: [String])
    /// A longer-lived service (`outer`, in `outerScope`) needed a shorter-lived one (`inner`, in
    /// `innerScope`), which it would have captured beyond its lifetime. An `InjectedKey`'s
    /// default, kept for the process, counts as a singleton: `outer` is then `Key's default`.
    case scopeMismatch(
        outer: String, outerScope: WeaveDI.Scope, inner: String, innerScope: WeaveDI.Scope, path: [String] = [])
    /// `type` is registered in `scope`, but no such scope is active where it was resolved.
    case noActiveScope(type: String, scope: WeaveDI.Scope, path: [String] = [])
    /// `type` was resolved through a session or request (`scopeID`) that is already closed;
    /// `closing` says who closed it and when (for a request closed with its session, which
    /// session and who closed that), nil in an error made by hand.
    case scopeClosed(type: String, scope: WeaveDI.Scope, scopeID: String, path: [String] = [], closing: ScopeClosing? = nil)
    /// Building went deeper than `ResolutionError.maximumDepth` nested services; `path` is
    /// every service under construction, outermost first.
    case tooDeep(path: [String])
    /// The factory of `type` threw `underlying`.
    case factoryFailed(type: String, underlying: any Error & Sendable, path: [String] = [])

    /// What a type not registered throws to a caller that only logs the error (`resolve`),
    /// before anything explains it: the caller makes the explaining `notRegistered` error (with
    /// its suggestions) only for a line it writes (`Container.explained(_:for:)`). Never seen
    /// outside the library: no type's name is empty.
    static let unexplained = ResolutionError.notRegistered(type: "", suggestions: [])

    /// Whether this is `unexplained`.
    var isUnexplained: Bool {
        if case let .notRegistered(type, _, path) = self { return type.isEmpty && path.isEmpty }
        return false
    }

    /// How many services may be under construction, one inside another, on one thread.
    public static let maximumDepth = 200

    /// The services being built when the error was raised, outermost first, down to the one
    /// it is about; empty when it is about the type asked for itself. For `cycle` and
    /// `tooDeep`, their own path.
    public var path: [String] {
        switch self {
        case let .notRegistered(_, _, path), let .cycle(path), let .scopeMismatch(_, _, _, _, path),
            let .noActiveScope(_, _, path), let .scopeClosed(_, _, _, path, _), let .tooDeep(path),
            let .factoryFailed(_, _, path):
            path
        }
    }

    /// A one-line explanation with the fix. Text from outside that it quotes (the error a
    /// factory threw, a session's or request's id) has its control characters escaped
    /// (`\n`, `\u{1B}`), as the log escapes them: it stays one line, printed or logged.
    public var description: String {
        ControlCharacters.escaped(unescapedDescription)
    }

    /// `description` before its control characters are escaped.
    private var unescapedDescription: String {
        switch self {
        case let .notRegistered(type, suggestions, path):
            let hint = suggestions.isEmpty ? "" : " (did you mean \(suggestions.joined(separator: ", "))?)"
            // No read that throws this consults a key (a key's read falls back to its default):
            // the fix is a registration.
            return Self.building(path) + "no registration for \(type)\(hint); register it in a module with "
                + (Self.metatype(named: type).map { "container.register(\($0)) { ... }" }
                    ?? "container.register(_:scope:factory:), its type written as Swift writes it")
        case let .cycle(path):
            return "dependency cycle: \(path.joined(separator: " -> ")); break it by making one of these "
                + "resolve the other lazily (at use, not in its factory) or by extracting what both need"
        case let .scopeMismatch(outer, _, inner, innerScope, path) where outer.hasSuffix(Self.keyDefaultSuffix):
            return Self.building(path) + "scope mismatch: \(outer) needs \(inner) (\(innerScope)), which would outlive "
                + "its \(innerScope): a key's default is kept for the process, as a singleton is; give the key a default "
                + "that needs no \(innerScope) (a read of the key finds a registration of its value type in the active "
                + "\(innerScope) first), or resolve \(inner) at the point of use"
        case let .scopeMismatch(outer, outerScope, inner, innerScope, path):
            return Self.building(path) + "scope mismatch: \(outer) (\(outerScope)) needs \(inner) (\(innerScope)), which would "
                + "outlive its \(innerScope); register \(outer) with scope .\(innerScope) or shorter, or "
                + "resolve \(inner) at the point of use"
        case let .noActiveScope(type, scope, path):
            let opener = scope == .session ? "container.openSession(id:)" : "session.openRequest(id:)"
            return Self.building(path) + "no active \(scope) for \(type): resolve it through a \(scope) (\(opener)) or inside "
                + "\(scope).withCurrent { ... }"
        case let .scopeClosed(type, scope, id, path, closing):
            let start = Self.building(path) + "cannot resolve \(type): \(scope) '\(id)' is closed"
            guard let closing else { return start + "; open a new \(scope)" }
            if let session = closing.sessionID {
                // A request closed with its session: the session is what to open anew.
                return start + ": its session '\(session)' was closed (\(closing.how)); open a new session"
            }
            // Closed by its own close(): as it always said; otherwise who closed it.
            return start + (closing.cause == .close ? "" : " (\(closing.how))") + "; open a new \(scope)"
        case let .tooDeep(path):
            return "resolution deeper than \(ResolutionError.maximumDepth) levels (\(path.suffix(6).joined(separator: " -> ")) ...); "
                + "flatten the graph"
        case let .factoryFailed(type, underlying, path):
            return Self.building(path) + "the factory of \(type) failed: \(underlying)"
        }
    }

    /// What follows a key's name where `scopeMismatch`'s `outer` is an `InjectedKey`'s default
    /// (`CartKey's default`): no type's name holds an apostrophe.
    static let keyDefaultSuffix = "'s default"

    /// How Swift 6 source writes the metatype of the type named `type`: `(any P).self` for a
    /// protocol's existential (which the run time names `P`, as the protocol), `T.self` for
    /// any other (`Any` and `AnyObject` need no `any`).
    /// A generic argument that is a protocol's existential gets its `any` too
    /// (`Holder<any P>.self`, `Array<Holder<any P>>.self`), which the run time leaves out as well.
    /// A function type is put in parentheses (`((any P) -> Int).self`: `.self` would bind to
    /// its result), `()` is written `Void.self`. Nil for a name no expression can write as it
    /// is: the existential metatype of a composition, which the run time spells `P & Q.Type`.
    static func metatype(named type: String) -> String? {
        if type == "()" { return "Void.self" }
        if isCompositionMetatype(type) { return nil }
        guard type != "Any", type != "AnyObject", TypeSlots.shared.spellsExistential(type) else {
            let spelled = TypeSlots.shared.sourceSpelling(ofName: type) ?? type
            return isFunction(spelled) ? "(\(spelled)).self" : "\(spelled).self"
        }
        return "(any \(type)).self"
    }

    /// Whether `type` holds a composition's member ending in `.Type` (`P & Q.Type`): how the
    /// run time spells the existential metatype of `P & Q` (no member of a composition is a
    /// metatype).
    private static func isCompositionMetatype(_ type: String) -> Bool {
        type.split(separator: "&").dropFirst().contains { member in
            let name = member.drop { $0 == " " }.prefix(while: TypeSlots.isPathCharacter)
            return name.hasSuffix(".Type")
        }
    }

    /// Whether the type spelled `type` is a function type: an arrow outside every bracket.
    private static func isFunction(_ type: String) -> Bool {
        var depth = 0
        var previous: Character = " "
        for character in type {
            switch character {
            case "(", "<", "[": depth += 1
            case ")", "]": depth -= 1
            case ">" where previous != "-": depth -= 1
            case ">" where depth == 0: return true
            default: break
            }
            previous = character
        }
        return false
    }

    /// `cannot build A (A -> B -> C): ` for a path, nothing without one.
    private static func building(_ path: [String]) -> String {
        guard let first = path.first else { return "" }
        return "cannot build \(first) (\(path.joined(separator: " -> "))): "
    }
}

extension ResolutionError {
    /// What a build throws when the factory of `slot` threw `error`: anything but a
    /// `ResolutionError` wrapped in `factoryFailed`; a `ResolutionError` (from a dependency)
    /// with the type of `slot` put in front of its path (`cycle` and `tooDeep` as they are:
    /// their paths are the builds on this thread already).
    /// Names are spelled as `ResolutionStack.messageName(of:among:in:)` does: two types of one
    /// name in an error are both qualified.
    @inline(never)
    static func thrownByFactory(_ error: any Error, slot: Int) -> ResolutionError {
        guard let error = error as? ResolutionError else {
            return .factoryFailed(type: ResolutionStack.current.messageName(of: slot), underlying: error)
        }
        // Passed on through every build open on the thread: no name to spell at each.
        if case .cycle = error { return error }
        if case .tooDeep = error { return error }
        return error.needed(by: ResolutionStack.current.messageName(of: slot, in: error))
    }

    /// The types this error names: its subject, the other type of a scope mismatch, its path.
    var typeNames: [String] {
        switch self {
        case let .notRegistered(type, _, path), let .noActiveScope(type, _, path), let .scopeClosed(type, _, _, path, _),
            let .factoryFailed(type, _, path):
            [type] + path
        case let .scopeMismatch(outer, _, inner, _, path): [outer, inner] + path
        case let .cycle(path), let .tooDeep(path): path
        }
    }

    /// This error, raised while building a dependency of `type`, with `type` in front of its path.
    func needed(by type: String) -> ResolutionError {
        func through(_ path: [String], _ subject: String) -> [String] {
            [type] + (path.isEmpty ? [subject] : path)
        }
        switch self {
        case let .notRegistered(subject, suggestions, path):
            return .notRegistered(type: subject, suggestions: suggestions, path: through(path, subject))
        case let .scopeMismatch(outer, outerScope, inner, innerScope, path):
            return .scopeMismatch(
                outer: outer, outerScope: outerScope, inner: inner, innerScope: innerScope, path: through(path, inner))
        case let .noActiveScope(subject, scope, path):
            return .noActiveScope(type: subject, scope: scope, path: through(path, subject))
        case let .scopeClosed(subject, scope, id, path, closing):
            return .scopeClosed(type: subject, scope: scope, scopeID: id, path: through(path, subject), closing: closing)
        case let .factoryFailed(subject, underlying, path):
            return .factoryFailed(type: subject, underlying: underlying, path: through(path, subject))
        case .cycle, .tooDeep:
            return self
        }
    }
}
