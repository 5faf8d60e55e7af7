import Synchronization

/// The dependencies reachable by key: extend it with one property per `InjectedKey`, read it
/// with `@Injected(\.key)` or `InjectedValues.current`, override it with `withInjectedValues`.
///
/// A read looks up, in order: an override from `withInjectedValues`; a registration of the
/// value's type in `WeaveDI.Container.live` (in the active session or request, if any); the
/// key's default for the current `InjectedContext`.
public struct InjectedValues: Sendable {
    var overrides: OverrideNode?
    /// Set only while `@Injected` learns which key its key path reads.
    var probe: KeyProbe?

    init(overrides: OverrideNode?, probe: KeyProbe? = nil) {
        self.overrides = overrides
        self.probe = probe
    }

    /// The values in effect here: the overrides of enclosing `withInjectedValues` calls.
    public static var current: InjectedValues {
        InjectedValues(overrides: Overrides.current)
    }

    /// The value for `key`: an override, else a registration of its type, else its default.
    public subscript<K: InjectedKey>(key: K.Type) -> K.Value {
        get {
            let state = KeyStates.state(for: K.self)
            if let probe { probe.record(state) }
            if let overrides, let box = overrides.box(for: state.slot) { return unsafeDowncast(box, to: Box<K.Value>.self).value }
            return state.resolved()
        }
        set {
            overrides = OverrideNode(slot: TypeSlots.shared.slot(for: K.self), box: Box(newValue), next: overrides)
        }
    }
}

/// An immutable list of overridden keys, newest first.
///
/// `@unchecked Sendable`: immutable; values are `InjectedKey.Value`, which is `Sendable`.
final class OverrideNode: @unchecked Sendable {
    let slot: Int
    let box: AnyObject
    let next: OverrideNode?

    init(slot: Int, box: AnyObject, next: OverrideNode?) {
        self.slot = slot
        self.box = box
        self.next = next
    }

    /// The `Box` of the newest override for `slot` (untyped, so that generic callers need no
    /// `Optional<Value>` metadata).
    func box(for slot: Int) -> AnyObject? {
        boxAddress(for: slot).map { Unmanaged<AnyObject>.fromOpaque($0).takeUnretainedValue() }
    }

    /// The address of the `Box` of the newest override for `slot`, found without retaining
    /// anything: the list is immutable and this node keeps the rest of it alive.
    func boxAddress(for slot: Int) -> UnsafeRawPointer? {
        var node = Unmanaged.passUnretained(self)
        while true {
            let step: (found: UnsafeRawPointer?, next: Unmanaged<OverrideNode>?) = node._withUnsafeGuaranteedRef { current in
                if current.slot == slot { return (UnsafeRawPointer(Unmanaged.passUnretained(current.box).toOpaque()), nil) }
                guard let next = current.next else { return (nil, nil) }
                return (nil, Unmanaged.passUnretained(next))
            }
            if let found = step.found { return found }
            guard let next = step.next else { return nil }
            node = next
        }
    }
}

/// Where `withInjectedValues` keeps its overrides: a task-local, so they follow structured
/// concurrency into child tasks and vanish when the call returns.
@usableFromInline
enum Overrides {
    @TaskLocal static var current: OverrideNode?

    /// Whether any override was ever made in this process. Until then reads skip the
    /// task-local lookup entirely. It never goes back to false: a `Task {}` started inside
    /// `withInjectedValues` keeps its overrides for as long as it runs.
    @usableFromInline
    static let everUsed = Atomic<Bool>(false)
}

/// Records which keys a key path reads (for `@Injected`'s fast path).
///
/// `@unchecked Sendable`: used by one thread, during one key-path application.
final class KeyProbe: @unchecked Sendable {
    var states: [AnyObject] = []

    func record(_ state: AnyObject) {
        states.append(state)
    }
}

/// Runs `operation` with the dependencies that `update` changed; the changes are visible inside
/// `operation` and its child tasks, nest, and are gone when it returns.
///
/// ```swift
/// withInjectedValues { $0.userService = MockUserService() } operation: { ... }
/// ```
@discardableResult
public func withInjectedValues<R>(
    _ update: (inout InjectedValues) throws -> Void,
    operation: () throws -> R
) rethrows -> R {
    var values = InjectedValues.current
    try update(&values)
    Overrides.everUsed.store(true, ordering: .relaxed)
    return try Overrides.$current.withValue(values.overrides, operation: operation)
}

/// Runs async `operation` with the dependencies that `update` changed (see the synchronous
/// overload).
@discardableResult
public func withInjectedValues<R>(
    isolation: isolated (any Actor)? = #isolation,
    _ update: (inout InjectedValues) async throws -> Void,
    operation: () async throws -> R
) async rethrows -> R {
    var values = InjectedValues.current
    try await update(&values)
    Overrides.everUsed.store(true, ordering: .relaxed)
    return try await Overrides.$current.withValue(values.overrides, operation: operation, isolation: isolation)
}
