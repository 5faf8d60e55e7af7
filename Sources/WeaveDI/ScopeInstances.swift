import Synchronization

/// The instances a session or request built, whether it is closed, and (for a session) its open
/// requests and last activity: everything a scope changes, behind one lock, so that a session
/// costs one mutex, not three.
final class ScopeInstances: Sendable {
    /// One built instance: the slot of its registration and its `Box`.
    struct Stored {
        let slot: Int
        let box: AnyObject
    }

    struct State {
        /// Built instances, in creation order. Scopes hold few, so a lookup is a scan; past
        /// `indexedFrom` of them, `index` maps slots to positions.
        var values: [Stored] = []
        var index: [Int: Int] = [:]
        /// The instances that adopt `Disposable`, in creation order.
        var disposables: [any Disposable] = []
        var closed = false
        /// Who closed the scope and when, set with `closed`.
        var closing: ScopeClosing?
        /// A session's open requests (empty for a request).
        var requests: [ObjectIdentifier: Request] = [:]
        /// When a session last resolved something, opened a request, saw one close, or was
        /// left by a `withCurrent`.
        var lastActivity: ContinuousClock.Instant
        /// How many `withCurrent` bodies have the session current right now.
        var users = 0

        static let indexedFrom = 16

        /// Records activity at `now`, kept if later than what is recorded.
        mutating func note(activityAt now: ContinuousClock.Instant) {
            if now > lastActivity { lastActivity = now }
        }

        /// Not in use (no `withCurrent` body, no request open) and last active before `cutoff`.
        func isIdle(since cutoff: ContinuousClock.Instant) -> Bool {
            users == 0 && requests.isEmpty && lastActivity < cutoff
        }

        func position(of slot: Int) -> Int? {
            if values.count > State.indexedFrom { return index[slot] }
            for i in values.indices where values[i].slot == slot { return i }
            return nil
        }
    }

    let scope: WeaveDI.Scope
    let id: String
    let state: Locked<State>
    /// Bumped (under the lock) by every store and by `close()`: a builder that read it before
    /// entering the instance's gate and finds it unchanged knows its lookup still holds.
    let changes = Atomic<Int>(0)
    /// `state.closed`, readable without the lock (set once, under it, by `close()`).
    private let closedFlag = Atomic<Bool>(false)

    init(scope: WeaveDI.Scope, id: String, openedAt: ContinuousClock.Instant) {
        self.scope = scope
        self.id = id
        state = Locked(State(lastActivity: openedAt))
    }

    var isClosed: Bool { closedFlag.load(ordering: .acquiring) }
    var count: Int { state.withLock { $0.values.count } }

    /// Throws `scopeClosed` naming `typeName` when closed.
    func ensureOpen(for typeName: @autoclosure () -> String) throws(ResolutionError) {
        if isClosed { throw closedError(typeName()) }
    }

    /// The `scopeClosed` error for `typeName`, with who closed the scope (read under the lock:
    /// set with the closed flag). Only on the way to a throw.
    @inline(never)
    func closedError(_ typeName: String) -> ResolutionError {
        .scopeClosed(type: typeName, scope: scope, scopeID: id, closing: state.withLock { $0.closing })
    }

    /// Who closed the scope and when; nil while it is open.
    var closing: ScopeClosing? { state.withLock { $0.closing } }

    /// Records activity at `now` (kept if later than what is recorded) and throws
    /// `scopeClosed` naming `typeName` when closed: one lock for both.
    func touch(at now: ContinuousClock.Instant, for typeName: @autoclosure () -> String) throws(ResolutionError) {
        let closed: Bool = state.withLock { state in
            if state.closed { return true }
            state.note(activityAt: now)
            return false
        }
        if closed { throw closedError(typeName()) }
    }

    /// The `Box` of the instance built for `slot`, if any, and `changes` as it was then;
    /// throws when the scope is closed. (Untyped, so that generic callers need no
    /// `Optional<T>` metadata.)
    func box(_ slot: Int, typeName: @autoclosure () -> String) throws(ResolutionError) -> (box: AnyObject?, changes: Int) {
        let result: (closed: Bool, box: AnyObject?, changes: Int) = state.withLock { state in
            (state.closed, state.position(of: slot).map { state.values[$0].box }, changes.load(ordering: .relaxed))
        }
        if result.closed { throw closedError(typeName()) }
        return (result.box, result.changes)
    }

    /// Whether an instance is built for `slot`, or the scope is closed: what a builder waiting
    /// at the instance's gate looks for (with the gates' lock held: no type is spelled here).
    func holdsOrIsClosed(_ slot: Int) -> Bool {
        state.withLock { state in state.closed || state.position(of: slot) != nil }
    }

    /// Keeps `box` for `slot`, with `disposable` if the instance adopts `Disposable`. If the
    /// scope closed while it was being built, the instance is disposed at once and
    /// `scopeClosed` thrown.
    func store(
        _ box: AnyObject, disposable: (any Disposable)?, slot: Int, typeName: @autoclosure () -> String
    ) throws(ResolutionError) {
        let stored: Bool = state.withLock { state in
            guard !state.closed else { return false }
            if state.values.capacity == 0 { state.values.reserveCapacity(4) }
            state.values.append(Stored(slot: slot, box: box))
            if state.values.count > State.indexedFrom {
                if state.index.isEmpty {
                    for i in state.values.indices { state.index[state.values[i].slot] = i }
                } else {
                    state.index[slot] = state.values.count - 1
                }
            }
            if let disposable { state.disposables.append(disposable) }
            changes.add(1, ordering: .relaxed)
            return true
        }
        if !stored {
            if let disposable { Task { await disposable.dispose() } }
            throw closedError(typeName())
        }
    }

    /// Marks the scope closed and returns what must be disposed, last created first, with the
    /// requests that were open; nil if it was already closed. The instances are released here.
    /// With `cutoff`, only a session idle since then is closed (see `isIdle(since:)`), in the
    /// same lock: one that came into use meanwhile stays open. `closing` makes the record of who
    /// closed it, from its last activity and now (an idle session's closing gives how long it was
    /// idle), returned with the rest.
    func close(
        ifIdleSince cutoff: ContinuousClock.Instant? = nil,
        closing: (_ lastActivity: ContinuousClock.Instant, _ now: ContinuousClock.Instant) -> ScopeClosing
    ) -> (disposables: [any Disposable], requests: [Request], closing: ScopeClosing)? {
        let taken: (values: [Stored], disposables: [any Disposable], requests: [Request], closing: ScopeClosing)? = state.withLock { state in
            guard !state.closed else { return nil }
            if let cutoff, !state.isIdle(since: cutoff) { return nil }
            let closed = closing(state.lastActivity, .now)
            state.closing = closed
            state.closed = true
            closedFlag.store(true, ordering: .releasing)
            changes.add(1, ordering: .relaxed)
            defer {
                state.values = []
                state.index = [:]
                state.disposables = []
                state.requests = [:]
            }
            return (state.values, state.disposables, state.requests.isEmpty ? [] : Array(state.requests.values), closed)
        }
        // The instances are released outside the lock: a deinit may do anything.
        guard let taken else { return nil }
        return (taken.disposables.reversed(), taken.requests, taken.closing)
    }

    /// Adds `request` to the open ones and records activity, unless the scope is closed.
    func add(_ request: Request, at now: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.requests[ObjectIdentifier(request)] = request
            state.note(activityAt: now)
            return true
        }
    }

    /// Forgets `request` (it closed); an open session was active until now.
    func remove(_ request: Request, at now: ContinuousClock.Instant) {
        // Taken out under the lock, released outside it.
        let removed: Request? = state.withLock { state in
            if !state.closed { state.note(activityAt: now) }
            return state.requests.removeValue(forKey: ObjectIdentifier(request))
        }
        _ = removed
    }

    /// A `withCurrent` body begins (`entering`) or ends with the session current.
    func use(_ entering: Bool, at now: ContinuousClock.Instant) {
        state.withLock { state in
            state.users += entering ? 1 : -1
            state.note(activityAt: now)
        }
    }

    /// Whether the session is idle since `cutoff`: not in use (no `withCurrent` body, no
    /// request open) and last active before it.
    func isIdle(since cutoff: ContinuousClock.Instant) -> Bool {
        state.withLock { $0.isIdle(since: cutoff) }
    }
}
