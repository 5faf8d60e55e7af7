import Synchronization

/// Reads a dependency on every access.
///
/// - `@Injected(\.userService) var userService`: by key (an `InjectedKeys` property, or any key
///   path of `InjectedValues`); overrides, then a registration of the value's type in
///   `Container.live`, then the key's default.
/// - `@Injected var network: (any NetworkService)?`: by type, from `Container.live`; nil if missing.
/// - `@Injected var network: any NetworkService`: by type, from `Container.live`; a read that
///   cannot resolve it stops the program with a message naming the type (like `@Factory`);
///   `try $network.getValue()` throws that error instead (for `T?`, returns the `T` or throws
///   why a read is nil).
/// - `Injected(wrappedValue: mock)`: a pinned value, for hand-built instances in tests.
@propertyWrapper
public struct Injected<Value> {
    @usableFromInline
    enum Storage {
        /// The shared, never freed cache of a key path: unmanaged, so that copying the wrapper
        /// out of the enclosing object (which every read does) retains nothing.
        case key(Unmanaged<InjectedCache<Value>>)
        case pinned(Box<Value>)
        /// The shared, never freed lookup of a type (unmanaged, like `key`).
        case type(Unmanaged<TypeLookup<Value>>)
        /// The same lookup for a non-optional `Value`, with the property's declaration: nil
        /// stops the program with a message that names it. (Shared and never freed, like `type`.)
        case required(Unmanaged<RequiredLookup<Value>>)
    }

    @usableFromInline
    let storage: Storage

    /// Reads `keyPath` of `InjectedValues` on every access: straight from the key when the key
    /// path is an `InjectedKeys` accessor, else through the key path.
    public init(_ keyPath: KeyPath<InjectedValues, Value> & Sendable) {
        storage = .key(Unmanaged.passUnretained(InjectedCache.shared(for: keyPath)))
    }

    /// Always returns `wrappedValue` (the FAQ's "pattern 2": a hand-built instance), nil too:
    /// `self._service = Injected(wrappedValue: nil)` reads nil, whatever is registered.
    ///
    /// `@Injected var x: T?` without an initial value does not come here (Swift calls `init()`,
    /// which resolves `T`); `@Injected var x: T? = nil` does, and pins nil.
    public init(wrappedValue: Value) {
        storage = .pinned(Box(wrappedValue))
    }

    /// Resolves the property's type from `WeaveDI.Container.live` on every access: what
    /// `@Injected var x: T?` and `@Injected var x: T` (no initial value) become.
    ///
    /// For an optional `T?` a read is nil when `T` cannot be resolved. For any other type a read
    /// that cannot resolve it stops the program with a message that names the type and the
    /// reason (not registered: how to register it), and the property's declaration, as `@Factory`
    /// does: `fileID` and `line` default to it (Swift evaluates them where the property is
    /// declared). Leave them out. (The declaration is kept once per declaration, not in the
    /// wrapper, which stays one word: see `RequiredLookup`.)
    public init(fileID: StaticString = #fileID, line: UInt = #line) where Value: Sendable {
        self.init(declaredAt: DeclarationSite(fileID: fileID, line: line))
    }

    /// `init()` for a property declared at `site` (`@Provide`, `@Inject`, which take their own),
    /// whose read that stops the program names the property as `wrapper` does
    /// (`@Inject var ...: T`).
    init(declaredAt site: DeclarationSite, wrapper: StaticString = "@Injected") where Value: Sendable {
        if let optional = Value.self as? any OptionalLookup.Type {
            storage = .type(.passUnretained(unsafeDowncast(optional.typeLookup(), to: TypeLookup<Value>.self)))
        } else {
            storage = .required(.passUnretained(RequiredLookup.shared(LiveTypeLookup<Value>.shared(), declaredAt: site, wrapper: wrapper)))
        }
    }

    /// Where the property is declared, for a non-optional `@Injected var x: T` (the only one
    /// whose read can stop the program); nil for the others.
    var site: DeclarationSite? {
        guard case let .required(lookup) = storage else { return nil }
        return lookup._withUnsafeGuaranteedRef { $0.site }
    }

    /// The dependency, looked up now.
    ///
    /// Inlined: a key path's read is specialized for `Value` in the caller, and once the key's
    /// answer is known it touches only the key's reader and the answer's box (see `KeyReader.read()`).
    @inlinable
    public var wrappedValue: Value {
        switch storage {
        case let .key(cache): return cache._withUnsafeGuaranteedRef { $0.read() }
        case let .type(lookup): return lookup._withUnsafeGuaranteedRef { $0.read() }
        case .pinned, .required: return lookUp()
        }
    }

    /// The wrapper itself, so that `try $x.getValue()` can throw where a read would stop the
    /// program (a computed property: the wrapper stays one word).
    public var projectedValue: Injected<Value> { self }

    /// A pinned value or a lookup by type.
    @usableFromInline
    func lookUp() -> Value {
        switch storage {
        case let .key(cache): cache._withUnsafeGuaranteedRef { $0.read() }
        case let .pinned(box): box.value
        case let .type(lookup): lookup._withUnsafeGuaranteedRef { $0.read() }
        case let .required(required):
            required._withUnsafeGuaranteedRef { required in
                required.lookup._withUnsafeGuaranteedRef { $0.readRequired() } ?? Self.unresolved(required.site, wrapper: required.wrapper)
            }
        }
    }

    /// Why a non-optional by-type read found nothing, as the program's last words. (Reached only
    /// from `.required`, which `init()` makes for a `Sendable` `Value`.)
    @inline(never)
    static func unresolved(_ site: DeclarationSite, wrapper: StaticString) -> Value {
        do {
            return try WeaveDI.Container.live.requireSendable(Value.self)
        } catch {
            // `$x.getValue()` is `@Injected`'s own (`@Provide` and `@Inject` have no projection).
            let instead = wrapper.description == "@Injected"
                ? "try $x.getValue() throws this error instead, @Injected var x: \(Value.self)? reads nil)"
                : "@Injected var x: \(Value.self)? reads nil instead, try WeaveDI.Container.live.require(\(Value.self).self) "
                    + "throws this error)"
            fatalError(
                "\(wrapper) var ...: \(Value.self)\(site.declaredAt): \(WeaveDI.Container.wrapperFailure(error, reading: Value.self)) (a non-optional \(wrapper) read cannot throw; "
                    + instead)
        }
    }
}

extension Injected where Value: Sendable {
    /// The dependency, looked up now; throws the `ResolutionError` that a read of a
    /// non-optional `@Injected var x: T` would stop the program with (`try $x.getValue()`).
    ///
    /// Of `@Injected(\.key)` and of a pinned value it is the read, which cannot fail (a key has
    /// a default). (An optional property, `@Injected var x: T?`, gets the overload that returns
    /// `T`.)
    public func getValue() throws(ResolutionError) -> Value {
        switch storage {
        case let .key(cache): return cache._withUnsafeGuaranteedRef { $0.read() }
        case let .pinned(box): return box.value
        // Only in generic code that does not know `Value` is optional: nil is a `Value`.
        case let .type(lookup): return lookup._withUnsafeGuaranteedRef { $0.readRequired() }
        case let .required(required):
            return try required.takeUnretainedValue().lookup.takeUnretainedValue().readOrThrow()!
        }
    }
}

extension Injected where Value: Sendable & _InjectedOptional {
    /// The dependency of `@Injected var x: T?`, looked up now: the `T`, or the `ResolutionError`
    /// saying why there is none (`notRegistered` for a type not registered, where a read is nil),
    /// as the deprecated `@SafeInject`'s `getValue()` throws. Unlike a read that finds nothing,
    /// it logs nothing: the error is the caller's.
    ///
    /// Of `@Injected(\.key)` and of a pinned value it is the read; when that is nil, it throws
    /// `notRegistered` for `T` (no key, override or registration gave a `T`).
    public func getValue() throws(ResolutionError) -> Value.Wrapped {
        switch storage {
        case let .type(lookup):
            return try lookup.takeUnretainedValue().readOrThrow()._injectedWrapped!
        case .key, .pinned, .required:
            if let value = lookUp()._injectedWrapped { return value }
            throw ResolutionError.notRegistered(type: TypeSlots.shared.logName(of: Value.Wrapped.self), suggestions: [])
        }
    }
}

/// What lets `try $x.getValue()` of `@Injected var x: T?` return `T`: `Optional` conforms, and
/// nothing else should.
public protocol _InjectedOptional {
    associatedtype Wrapped
    /// The optional itself.
    var _injectedWrapped: Wrapped? { get }
}

extension Optional: _InjectedOptional {
    public var _injectedWrapped: Wrapped? { self }
}

extension Injected: Sendable where Value: Sendable {}
extension Injected.Storage: Sendable where Value: Sendable {}

/// What `@Injected(\.key)` learns on a key path's first read: whether the key path is a key's
/// own accessor, and if so that key's reader, so later reads skip key-path application. One per
/// distinct key path in the process, shared by every `@Injected` that reads it, never freed
/// (like `KeyState`s).
///
/// The rule: a key path is read as a key only when it *is* the accessor `InjectedValues` itself
/// declares for a key of `InjectedKeys` (`\InjectedValues.[dynamicMember: \InjectedKeys.key]`,
/// which `\.key` spells), recognized by key-path equality, which compares the accessor and its
/// argument: that accessor is `self[Key.self]` and nothing else. What a key path returns cannot
/// tell (a getter that computes `self[Key.self] * 1`, or that returns the key's value only
/// sometimes, returns it once), and neither can which keys it reads, so any other key path, a
/// property declared on `InjectedValues` included, is applied on every read.
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

    /// Reads through the key path, and remembers the key's reader if the key path is the key's
    /// own accessor (see the type's comment).
    @usableFromInline
    func learn() -> Value {
        if keyPathOnly.load(ordering: .relaxed) { return InjectedValues.current[keyPath: keyPath] }
        let probe = KeyProbe()
        let value = InjectedValues(overrides: InjectedValues.current.overrides, probe: probe)[keyPath: keyPath]
        if probe.states.count == 1, probe.accessors.count == 1, probe.accessors[0] == keyPath,
            let state = probe.states[0] as? KeyReader<Value>
        {
            reader.store(UnsafeRawPointer(Unmanaged.passUnretained(state).toOpaque()), ordering: .releasing)
        } else {
            keyPathOnly.store(true, ordering: .relaxed)
        }
        return value
    }
}

/// What a non-optional `@Injected var x: T` reads through: the lookup of `T` and where the
/// property is declared. One per type and declaration, made by the first wrapper initialized
/// there, shared by the others and never freed: there are as many as declarations in the
/// program. It keeps the declaration out of the wrapper (one word; with the declaration in it,
/// three, and every read, of any kind, loaded them all), at the cost of a lookup in a locked
/// table when a wrapper of this kind is made.
///
/// `@unchecked Sendable`: immutable; the lookup is permanent.
@usableFromInline
final class RequiredLookup<Value>: @unchecked Sendable {
    let lookup: Unmanaged<TypeLookup<Value?>>
    let site: DeclarationSite
    /// The property wrapper declared there (`@Injected`, `@Provide`, `@Inject`).
    let wrapper: StaticString

    private init(_ lookup: TypeLookup<Value?>, site: DeclarationSite, wrapper: StaticString) {
        self.lookup = .passUnretained(lookup)
        self.site = site
        self.wrapper = wrapper
    }

    /// The one for `lookup` (a permanent `LiveTypeLookup`) declared at `site` with `wrapper`.
    static func shared(_ lookup: TypeLookup<Value?>, declaredAt site: DeclarationSite, wrapper: StaticString) -> RequiredLookup {
        let key = RequiredLookups.Key(
            lookup: ObjectIdentifier(lookup), site: site,
            wrapper: wrapper.hasPointerRepresentation ? UInt(bitPattern: wrapper.utf8Start) : UInt(wrapper.unicodeScalar.value))
        return RequiredLookups.table.withLock { table in
            if let existing = table[key] { return unsafeDowncast(existing, to: RequiredLookup.self) }
            let made = RequiredLookup(lookup, site: site, wrapper: wrapper)
            table[key] = made
            return made
        }
    }
}

/// Every `RequiredLookup`, by lookup and declaration.
enum RequiredLookups {
    struct Key: Hashable {
        let lookup: ObjectIdentifier
        let site: DeclarationSite
        /// The wrapper's name, by its literal's address: two wrappers on one line
        /// (`@Inject var a: T; @Injected var b: T`) have one site.
        let wrapper: UInt
    }

    static let table = Locked<[Key: AnyObject]>([:])
}

/// Every key path's `InjectedCache`, by key path.
enum InjectedCaches {
    static let table = Locked<[AnyKeyPath: AnyObject]>([:])
}

/// Lets `Injected.init()` tell `@Injected var x: T?` from `@Injected var x: T`, and find `T`.
protocol OptionalLookup {
    /// `LiveTypeLookup<Wrapped>.shared()`.
    static func typeLookup() -> AnyObject
}

extension Optional: OptionalLookup {
    static func typeLookup() -> AnyObject { LiveTypeLookup<Wrapped>.shared() }
}

/// How `@Injected var x: T?` reads: `Value` is `T?`.
///
/// The common case (the type's singleton is built and nothing changed since it was last
/// read) is `read()`, inlined into the caller: three atomic loads and a copy of the value.
/// `@unchecked Sendable`: the cache is atomic, the rest immutable.
@usableFromInline
class TypeLookup<Value>: @unchecked Sendable {
    /// The built singleton of the type, as of a generation.
    @usableFromInline
    let cache = BoxCache()
    /// Whether a `T` in memory reads as the `T?` holding it: true when `T?` needs no more
    /// room than `T` (it then uses a bit pattern `T` never has for nil, and `.some(x)` is
    /// stored as `x`), as for classes and existentials.
    @usableFromInline
    let readsInPlace: Bool
    /// `Generation.counter`, kept here: see `Generation`.
    @usableFromInline
    let generationCounter = Generation.counter

    init(readsInPlace: Bool) { self.readsInPlace = readsInPlace }

    /// The current generation (`Generation.current`, through `generationCounter`).
    @inlinable @inline(__always)
    final var generation: UInt64 { generationCounter.pointee.load(ordering: .acquiring) }

    @inlinable @inline(__always)
    final func read() -> Value {
        if readsInPlace, let raw = cache.load(at: generation) {
            return boxedValuePointer(raw, as: Value.self).pointee
        }
        return readSlow()
    }

    @usableFromInline
    func readSlow() -> Value { fatalError("abstract") }

    /// `read()` for a non-optional `@Injected var x: T`: nil logs nothing, since the caller stops
    /// the program with the error's message (which names `T`, not the `T?` of the lookup).
    @inlinable @inline(__always)
    final func readRequired() -> Value {
        if readsInPlace, let raw = cache.load(at: generation) {
            return boxedValuePointer(raw, as: Value.self).pointee
        }
        return readSlowQuietly()
    }

    /// `readSlow()`, logging nothing when it reads nil.
    @usableFromInline
    func readSlowQuietly() -> Value { fatalError("abstract") }

    /// The value (never nil), or why there is none, logging nothing: what `$x.getValue()`
    /// reads. One resolution, so a failing factory runs once.
    func readOrThrow() throws(ResolutionError) -> Value { fatalError("abstract") }
}

/// Resolves `Wrapped` from `Container.live`, and remembers its built singleton while the
/// generation stays. One per type, shared and never freed.
///
/// Made only for a `Sendable` `Wrapped` (by `Injected.init()`, where `Value` is `Sendable`, and
/// `SafeInject`), though the compiler cannot follow that through the dynamic cast to
/// `OptionalLookup`: hence `requireSendable`.
final class LiveTypeLookup<Wrapped>: TypeLookup<Wrapped?>, @unchecked Sendable {
    let slot = TypeSlots.shared.slot(for: Wrapped.self)

    private init() {
        super.init(readsInPlace: MemoryLayout<Wrapped?>.size == MemoryLayout<Wrapped>.size)
    }

    /// The lookup of `Wrapped`.
    static func shared() -> LiveTypeLookup {
        TypeLookups.lookups.object(at: TypeSlots.shared.slot(for: Wrapped.self), as: LiveTypeLookup.self) {
            LiveTypeLookup()
        }
    }

    override func readSlow() -> Wrapped? {
        lookUp(logging: true)
    }

    override func readSlowQuietly() -> Wrapped? {
        lookUp(logging: false)
    }

    override func readOrThrow() throws(ResolutionError) -> Wrapped? {
        let generation = Generation.current
        if let raw = cache.load(at: generation) { return unbox(raw, as: Wrapped.self) }
        let container = WeaveDI.Container.live
        let value = try container.requireSendable(Wrapped.self)
        cache.store(singletonOf: slot, in: container, at: generation)
        return value
    }

    /// Resolves `Wrapped` (and remembers a built singleton); `logging`: says why it reads nil.
    private func lookUp(logging: Bool) -> Wrapped? {
        let generation = Generation.current
        if let raw = cache.load(at: generation) { return unbox(raw, as: Wrapped.self) }
        let container = WeaveDI.Container.live
        // Not registered, and said so already: nil at once, without building the error again
        // (its "did you mean" suggestions compare the name with every registered type's).
        if absenceLogged.load(ordering: .relaxed), container.table.load(slot) == nil { return nil }
        do {
            let value = try container.requireSendable(Wrapped.self, logged: true)
            cache.store(singletonOf: slot, in: container, at: generation)
            return value
        } catch {
            if logging { readNil(error, in: container) }
            return nil
        }
    }

    /// Set once this type's absence has been logged.
    private let absenceLogged = Atomic<Bool>(false)

    /// Logs why a read found nothing. The type not registered, or a scoped service (or one
    /// that needs it) with no such scope active, is what an optional injection is for: a
    /// diagnostic, once per type. Anything else (a registration whose dependency is not
    /// registered, a cycle, a scope mismatch, a failed factory) is an error, every time, as
    /// `Container.resolve` logs it.
    /// (A type not registered is explained only if the line is written: see
    /// `Container.requireSlow`.)
    @inline(never)
    private func readNil(_ error: ResolutionError, in container: WeaveDI.Container) {
        switch error {
        case .notRegistered where error.path.isEmpty, .noActiveScope:
            guard !absenceLogged.exchange(true, ordering: .relaxed) else { return }
            WeaveDILog.log(
                .diagnostic, subsystem: "injected",
                "@Injected var ...: \(TypeSlots.shared.logName(ofSlot: slot))? reads nil: "
                    + "\(WeaveDI.Container.wrapperFailure(container.explained(error, for: Wrapped.self), reading: Wrapped.self)) "
                    + "(said once for this type)")
        default:
            WeaveDILog.log(
                .error, subsystem: "injected",
                "@Injected var ...: \(TypeSlots.shared.logName(ofSlot: slot))? reads nil: "
                    + WeaveDI.Container.wrapperFailure(error, reading: Wrapped.self))
        }
    }
}

/// Every type's `LiveTypeLookup`, by the type's slot.
enum TypeLookups {
    static let lookups = PermanentObjects()
}
