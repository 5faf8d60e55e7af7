import Synchronization

/// Reads a dependency on every access.
///
/// - `@Injected(\.userService) var userService`: by key (an `InjectedValues` property);
///   overrides, then a registration of the value's type in `Container.live`, then the key's default.
/// - `@Injected var network: (any NetworkService)?`: by type, from `Container.live`; nil if missing.
/// - `Injected(wrappedValue: mock)`: a pinned value, for hand-built instances in tests.
@propertyWrapper
public struct Injected<Value> {
    @usableFromInline
    enum Storage: Sendable {
        /// The shared, never freed cache of a key path: unmanaged, so that copying the wrapper
        /// out of the enclosing object (which every read does) retains nothing.
        case key(Unmanaged<InjectedCache<Value>>)
        case pinned(Box<Value>)
        case type(@Sendable () -> Value)
    }

    @usableFromInline
    let storage: Storage

    /// Reads `keyPath` of `InjectedValues` on every access.
    public init(_ keyPath: KeyPath<InjectedValues, Value> & Sendable) {
        storage = .key(Unmanaged.passUnretained(InjectedCache.shared(for: keyPath)))
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
    ///
    /// Inlined: a key path's read is specialized for `Value` in the caller, and once the key's
    /// reader is known it touches only the cache and the reader (see `KeyReader.read()`).
    @inlinable
    public var wrappedValue: Value {
        if case let .key(cache) = storage {
            return cache._withUnsafeGuaranteedRef { $0.read() }
        }
        return lookUp()
    }

    /// A pinned value or a lookup by type.
    @usableFromInline
    func lookUp() -> Value {
        switch storage {
        case let .key(cache): cache._withUnsafeGuaranteedRef { $0.read() }
        case let .pinned(box): box.value
        case let .type(lookup): lookup()
        }
    }
}

extension Injected: Sendable where Value: Sendable {}

/// What `@Injected(\.key)` learns on a key path's first read: the reader of the one key the
/// key path reads, so later reads skip key-path application. One per distinct key path in the
/// process, shared by every `@Injected` that reads it, never freed (like `KeyState`s).
///
/// `@unchecked Sendable`: the mutable fields are atomics; readers are permanent `KeyState`s.
@usableFromInline
final class InjectedCache<Value>: @unchecked Sendable {
    let keyPath: KeyPath<InjectedValues, Value> & Sendable
    /// The key's reader, unretained (`KeyState`s are never freed); a raw pointer so that the
    /// atomic has a concrete type.
    @usableFromInline
    let reader = Atomic<UnsafeRawPointer?>(nil)
    private let keyPathOnly = Atomic<Bool>(false)

    private init(_ keyPath: KeyPath<InjectedValues, Value> & Sendable) {
        self.keyPath = keyPath
    }

    /// The cache of `keyPath` (equal key paths share one).
    static func shared(for keyPath: KeyPath<InjectedValues, Value> & Sendable) -> InjectedCache {
        InjectedCaches.table.withLock { table in
            if let existing = table[keyPath] { return unsafeDowncast(existing, to: InjectedCache.self) }
            let cache = InjectedCache(keyPath)
            table[keyPath] = cache
            return cache
        }
    }

    @inlinable @inline(__always)
    func read() -> Value {
        if let raw = reader.load(ordering: .acquiring) {
            return Unmanaged<KeyReader<Value>>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.read() }
        }
        return learn()
    }

    /// Reads through the key path, and remembers the key's reader if it reads exactly one key.
    @usableFromInline
    func learn() -> Value {
        if keyPathOnly.load(ordering: .relaxed) { return InjectedValues.current[keyPath: keyPath] }
        let probe = KeyProbe()
        let value = InjectedValues(overrides: Overrides.current, probe: probe)[keyPath: keyPath]
        if probe.states.count == 1, let state = probe.states[0] as? KeyReader<Value> {
            reader.store(UnsafeRawPointer(Unmanaged.passUnretained(state).toOpaque()), ordering: .releasing)
        } else {
            keyPathOnly.store(true, ordering: .relaxed)
        }
        return value
    }
}

/// Every key path's `InjectedCache`, by key path.
enum InjectedCaches {
    static let table = Locked<[AnyKeyPath: AnyObject]>([:])
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
