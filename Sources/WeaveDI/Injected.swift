import Synchronization

/// Reads a dependency on every access.
///
/// - `@Injected(\.userService) var userService`: by key (an `InjectedValues` property);
///   overrides, then a registration of the value's type in `Container.live`, then the key's default.
/// - `@Injected var network: (any NetworkService)?`: by type, from `Container.live`; nil if missing.
/// - `Injected(wrappedValue: mock)`: a pinned value, for hand-built instances in tests.
@propertyWrapper
public struct Injected<Value> {
    enum Storage: Sendable {
        case key(KeyPath<InjectedValues, Value> & Sendable, InjectedCache<Value>)
        case pinned(Box<Value>)
        case type(@Sendable () -> Value)
    }

    let storage: Storage

    /// Reads `keyPath` of `InjectedValues` on every access.
    public init(_ keyPath: KeyPath<InjectedValues, Value> & Sendable) {
        storage = .key(keyPath, InjectedCache())
    }

    /// Always returns `wrappedValue` (the FAQ's "pattern 2": a hand-built instance).
    ///
    /// `@Injected var x: T?` also lands here, with the `nil` Swift supplies for optionals: that
    /// resolves `T` from `WeaveDI.Container.live` on every access instead.
    public init(wrappedValue: Value) {
        if let optional = wrappedValue as? any OptionalLookup, optional.isNone,
            let lookup = optional.lookup() as? @Sendable () -> Value
        {
            storage = .type(lookup)
        } else {
            storage = .pinned(Box(wrappedValue))
        }
    }

    /// Resolves `Wrapped` from `WeaveDI.Container.live` on every access; nil if it cannot.
    public init<Wrapped>() where Value == Wrapped? {
        storage = .type { WeaveDI.Container.live.resolve(Wrapped.self) }
    }

    /// The dependency, looked up now.
    public var wrappedValue: Value {
        switch storage {
        case let .key(keyPath, cache): cache.read(keyPath)
        case let .pinned(box): box.value
        case let .type(lookup): lookup()
        }
    }
}

extension Injected: Sendable where Value: Sendable {}

/// What an `@Injected(\.key)` learned on its first read: the reader of the one key its key path
/// reads, so later reads skip key-path application.
///
/// `@unchecked Sendable`: both fields are atomics; readers are permanent `KeyState`s.
final class InjectedCache<Value>: @unchecked Sendable {
    private let reader = Atomic<Unmanaged<KeyReader<Value>>?>(nil)
    private let keyPathOnly = Atomic<Bool>(false)

    func read(_ keyPath: KeyPath<InjectedValues, Value>) -> Value {
        if let reader = reader.load(ordering: .acquiring) {
            return reader._withUnsafeGuaranteedRef { $0.read() }
        }
        if keyPathOnly.load(ordering: .relaxed) { return InjectedValues.current[keyPath: keyPath] }
        let probe = KeyProbe()
        let value = InjectedValues(overrides: Overrides.current, probe: probe)[keyPath: keyPath]
        if probe.states.count == 1, let state = probe.states[0] as? KeyReader<Value> {
            reader.store(Unmanaged.passUnretained(state), ordering: .releasing)
        } else {
            keyPathOnly.store(true, ordering: .relaxed)
        }
        return value
    }
}

/// Lets `Injected(wrappedValue: nil)` (what `@Injected var x: T?` becomes) find `T`.
protocol OptionalLookup {
    var isNone: Bool { get }
    func lookup() -> Any
}

extension Optional: OptionalLookup {
    var isNone: Bool { self == nil }

    func lookup() -> Any {
        { @Sendable () -> Wrapped? in WeaveDI.Container.live.resolve(Wrapped.self) } as @Sendable () -> Wrapped?
    }
}
