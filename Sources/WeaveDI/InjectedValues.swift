import Synchronization

/// The dependencies reachable by key: declare each `InjectedKey` in `InjectedKeys` (or give it
/// a property here), read it with `@Injected(\.key)` or `InjectedValues.current`, override it
/// with `withInjectedValues`.
///
/// A read looks up, in order: an override from `withInjectedValues`; a registration of the
/// value's type in `WeaveDI.Container.live` (in the active session or request, if any); the
/// key's default for the current `InjectedContext`.
@dynamicMemberLookup
public struct InjectedValues: Sendable {
    @usableFromInline
    var overrides: OverrideNode?
    /// Set only while `@Injected` learns which key its key path reads.
    @usableFromInline
    var probe: KeyProbe?

    init(overrides: OverrideNode?, probe: KeyProbe? = nil) {
        self.overrides = overrides
        self.probe = probe
    }

    /// The values in effect here: the overrides of enclosing `withInjectedValues` calls.
    public static var current: InjectedValues {
        // Until the first override in the process, there is none to look up.
        InjectedValues(overrides: Overrides.everUsed ? Overrides.current : nil)
    }

    /// The value for `key`: an override, else a registration of its type, else its default.
    ///
    /// Inlined, so that a property's getter reads the key specialized (a getter of a property
    /// declared here is applied on every read of `@Injected`, see `InjectedCache`): with no
    /// override here, and the key's answer known to its reader, a slot lookup and the loads of
    /// `KeyReader.read()`.
    @inlinable
    public subscript<K: InjectedKey>(key: K.Type) -> K.Value {
        get {
            if overrides == nil, probe == nil, let reader = KeyStates.existingReader(for: K.self),
                let raw = reader._withUnsafeGuaranteedRef({ $0.box(at: $0.generation) })
            {
                return unbox(raw, as: K.Value.self)
            }
            return value(of: K.self)
        }
        set { override(K.self, with: newValue) }
    }

    /// Overrides `key` with `value`.
    @usableFromInline
    mutating func override<K: InjectedKey>(_ key: K.Type, with value: K.Value) {
        overrides = OverrideNode(slot: TypeSlots.shared.slot(for: K.self), box: Box(value), next: overrides)
    }

    /// `self[key]` in full.
    @usableFromInline
    func value<K: InjectedKey>(of key: K.Type) -> K.Value {
        let state = KeyStates.state(for: K.self)
        if let probe { probe.record(state) }
        if let overrides, let box = overrides.box(for: state.slot) { return unsafeDowncast(box, to: Box<K.Value>.self).value }
        // The answer without overrides, when the key's reader knows it (as `KeyReader.read()`).
        if let raw = state.box(at: state.generation) { return unbox(raw, as: K.Value.self) }
        return state.resolved()
    }

    /// The value for the key a property of `InjectedKeys` names: exactly `self[K.self]`, read
    /// and written. `@Injected(\.key)` reads such a key path as the key itself, without applying
    /// the key path (see `InjectedCache`).
    @inlinable
    public subscript<K: InjectedKey>(dynamicMember key: KeyPath<InjectedKeys, K.Type> & Sendable) -> K.Value {
        get {
            if let probe { probe.record(accessor: \InjectedValues.[dynamicMember: key]) }
            return self[K.self]
        }
        set { self[K.self] = newValue }
    }
}

/// Where keys are declared for `@Injected(\.key)`: one property per key, naming the key type.
///
/// ```swift
/// extension InjectedKeys {
///     var userService: UserServiceKey.Type { UserServiceKey.self }
/// }
/// // @Injected(\.userService), InjectedValues.current.userService, $0.userService = ... in
/// // withInjectedValues: all read or write UserServiceKey.
/// ```
///
/// `InjectedValues` reaches these through `@dynamicMemberLookup`, with an accessor of its own that
/// is exactly `self[Key.self]`: the key path `\.userService` is then known to be the key's own
/// accessor, and `@Injected` reads it straight from the key. (The property's value is not
/// read: the key is its declared type.) A property declared on `InjectedValues` itself, the
/// other way to name a key, is read through its getter on every read, since its getter may
/// compute something else from the key.
public struct InjectedKeys: Sendable {
    private init() {}
}

/// An immutable list of overridden keys, newest first.
///
/// `@unchecked Sendable`: immutable; values are `InjectedKey.Value`, which is `Sendable`.
@usableFromInline
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
    /// `withInjectedValues` keeps its overrides for as long as it runs. (A bit of the generation
    /// counter: see `Generation.overridesUsed`.)
    @inlinable
    static var everUsed: Bool { Generation.counter.pointee.load(ordering: .relaxed) & Generation.overridesUsed != 0 }

    /// Runs `body` with no override in effect (in it and in the tasks it starts).
    static func withoutOverrides<R>(_ body: () -> R) -> R {
        guard everUsed, current != nil else { return body() }
        return $current.withValue(nil, operation: body)
    }
}

/// Records which keys a key path reads, and through which of `InjectedValues`' own accessors
/// (for `@Injected`'s fast path).
///
/// `@unchecked Sendable`: used by one thread, during one key-path application.
@usableFromInline
final class KeyProbe: @unchecked Sendable {
    var states: [AnyObject] = []
    /// The key path of each `InjectedKeys` accessor read (`\InjectedValues.[dynamicMember: ...]`).
    var accessors: [AnyKeyPath] = []

    func record(_ state: AnyObject) {
        states.append(state)
    }

    /// Records the accessor a key path went through (not inlined: the probe is rare).
    @usableFromInline
    func record(accessor: AnyKeyPath) {
        accessors.append(accessor)
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
    Generation.noteOverridesUsed()
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
    Generation.noteOverridesUsed()
    return try await Overrides.$current.withValue(values.overrides, operation: operation, isolation: isolation)
}
