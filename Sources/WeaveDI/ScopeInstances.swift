import Synchronization

/// The instances a session or request built, and whether it is closed.
final class ScopeInstances: Sendable {
    struct State {
        var values: [Int: AnyObject] = [:]
        var disposables: [any Disposable] = []
        var closed = false
    }

    let scope: WeaveDI.Scope
    let id: String
    let state = Locked(State())

    init(scope: WeaveDI.Scope, id: String) {
        self.scope = scope
        self.id = id
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    var count: Int { state.withLock { $0.values.count } }

    /// Throws `scopeClosed` naming `typeName` when closed.
    func ensureOpen(for typeName: @autoclosure () -> String) throws(ResolutionError) {
        if isClosed { throw .scopeClosed(type: typeName(), scope: scope, scopeID: id) }
    }

    /// The `Box` of the instance built for `slot`, if any; throws when the scope is closed.
    /// (Untyped, so that generic callers need no `Optional<T>` metadata.)
    func box(_ slot: Int, typeName: @autoclosure () -> String) throws(ResolutionError) -> AnyObject? {
        let result: (closed: Bool, box: AnyObject?) = state.withLock { ($0.closed, $0.values[slot]) }
        if result.closed { throw .scopeClosed(type: typeName(), scope: scope, scopeID: id) }
        return result.box
    }

    /// Keeps `value` for `slot`. If the scope closed while it was being built, the value is
    /// disposed at once and `scopeClosed` thrown.
    func store<T>(_ value: T, slot: Int, typeName: @autoclosure () -> String) throws(ResolutionError) {
        let disposable = value as? any Disposable
        let stored: Bool = state.withLock { state in
            guard !state.closed else { return false }
            state.values[slot] = Box(value)
            if let disposable { state.disposables.append(disposable) }
            return true
        }
        if !stored {
            if let disposable { Task { await disposable.dispose() } }
            throw .scopeClosed(type: typeName(), scope: scope, scopeID: id)
        }
    }

    /// Marks the scope closed and returns what must be disposed, last created first; nil if it
    /// was already closed.
    func close() -> [any Disposable]? {
        state.withLock { state in
            guard !state.closed else { return nil }
            state.closed = true
            let disposables = state.disposables
            state.values = [:]
            state.disposables = []
            return disposables.reversed()
        }
    }
}
