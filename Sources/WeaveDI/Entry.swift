import Synchronization

/// One registration in a container: how to build a type, in which scope, made by which module.
///
/// Not generic: registering a type must not instantiate class metadata for it (that was most
/// of the cost of a registration). The factory is kept with its type erased (`ErasedFactory`);
/// readers, which know the type, call it as what it is (`callFactory(as:_:)`,
/// `produce(_:as:explicit:)`). `erased` is a closure made by `register` for the type-erased
/// operations of diagnostics.
///
/// Entries are immutable but for their singleton cell (set once) and their recorded edges.
/// A replaced entry is retired, never freed before its container, so lock-free readers that
/// loaded it stay safe.
///
/// `@unchecked Sendable`: the mutable parts are an `Atomic` and a `Locked`.
@usableFromInline
final class Entry: @unchecked Sendable {
    /// The operations that need the registered type, for callers that do not know it.
    typealias Erased = @Sendable (Entry, ErasedOperation) throws(ResolutionError) -> Any?

    let slot: Int
    let scope: WeaveDI.Scope
    let module: String
    /// True for `register(_:instance:)`: the container did not build it and never disposes it.
    let isProvidedInstance: Bool
    /// The factory with `T` erased: a `TypedFactory<T>` if `factoryTakesResolver`, else a
    /// `ResolverFreeFactory<T>` (the user's closure as it is: wrapping it in one that takes a
    /// resolver would cost every such registration an allocation).
    private let erasedFactory: ErasedFactory
    private let factoryTakesResolver: Bool
    let erased: Erased
    /// Builds made so far (the first few record the dependency edges).
    let builds = Atomic<Int>(0)
    /// Slots this entry's factory depends on (see `recordEdge`), under `edgeLock`.
    @exclusivity(unchecked)
    private var recordedEdges: Set<Int> = []
    /// One lock for every entry's edges: they are written only in an entry's first builds, and
    /// a lock of its own would cost every registration an allocation.
    private static let edgeLock = Lock()
    /// Of a singleton, what the build that published its instance found (`SingletonBuild`),
    /// which `validate()` reports once it reads the instance instead of building it
    /// (`Container.priorBuildFailures`): the dependencies it got from `require` that were
    /// registered then, with their scope then, and the key reads that kept a key's default.
    /// Written only by `produce` inside the singleton's gate, before the instance is published
    /// (release); read only after the instance is loaded (acquire): never both at once. Not
    /// copied by `fresh()`: a new entry's build says afresh.
    @exclusivity(unchecked)
    var builtWith: [Int: WeaveDI.Scope] = [:]
    @exclusivity(unchecked)
    var keptDefaults: [KeyFallbackCollector.Fallback] = []
    /// The built singleton: a retained `Box<T>` of the registered type, as a raw pointer, so
    /// that code which is generic over `T` and not specialized (a factory's `r.require(T.self)`
    /// goes through the `Resolver` protocol) reads it without instantiating metadata at run time.
    @usableFromInline
    let instance = Atomic<UnsafeRawPointer?>(nil)
    /// The metadata of the last type built here that turned out not to adopt `Disposable` (0
    /// if none yet): building that type again skips the conformance lookup, which in
    /// unspecialized code cost more than the rest of a scoped build.
    private let notDisposable = Atomic<UInt>(0)
    /// The metadata of `Box<T>` for the registered type, fetched on the first scoped build
    /// (not at registration: that would instantiate it for every registered type).
    private let boxClass = Atomic<UnsafeRawPointer?>(nil)

    private init(
        slot: Int, scope: WeaveDI.Scope, module: String, isProvidedInstance: Bool, factory: ErasedFactory,
        takesResolver: Bool, erased: @escaping Erased
    ) {
        self.slot = slot
        self.scope = scope
        self.module = module
        self.isProvidedInstance = isProvidedInstance
        self.erasedFactory = factory
        self.factoryTakesResolver = takesResolver
        self.erased = erased
    }

    /// A registration of `T` built by `factory`.
    convenience init<T: Sendable>(
        _ type: T.Type, slot: Int, scope: WeaveDI.Scope, module: String,
        factory: @escaping @Sendable (any Resolver) throws -> T
    ) {
        self.init(
            slot: slot, scope: scope, module: module, isProvidedInstance: false,
            factory: TypedFactory(call: factory).erased, takesResolver: true, erased: Entry.erasedOperations(for: T.self))
    }

    /// A registration of `T` built by `factory`, which needs no resolver.
    convenience init<T: Sendable>(
        _ type: T.Type, slot: Int, scope: WeaveDI.Scope, module: String, factory: @escaping @Sendable () throws -> T
    ) {
        self.init(
            slot: slot, scope: scope, module: module, isProvidedInstance: false,
            factory: ResolverFreeFactory(call: factory).erased, takesResolver: false,
            erased: Entry.erasedOperations(for: T.self))
    }

    /// The singleton `value`, given as it is (`register(_:instance:)`).
    convenience init<T: Sendable>(_ type: T.Type, slot: Int, module: String, instance value: T) {
        let box = Box(value)
        self.init(
            slot: slot, scope: .singleton, module: module, isProvidedInstance: true,
            factory: ResolverFreeFactory(call: { box.value }).erased, takesResolver: false,
            erased: Entry.erasedOperations(for: T.self))
        instance.store(UnsafeRawPointer(Unmanaged.passRetained(box).toOpaque()), ordering: .releasing)
    }

    deinit {
        if let raw = instance.load(ordering: .acquiring) { Unmanaged<AnyObject>.fromOpaque(raw).release() }
    }

    private static func erasedOperations<T>(for type: T.Type) -> Erased {
        { entry, operation throws(ResolutionError) in
            switch operation {
            case let .resolve(container, owner): try container.produce(entry, as: T.self, explicit: owner)
            case .builtInstance: entry.isProvidedInstance ? nil : entry.cached(as: T.self)
            }
        }
    }

    /// Calls the factory as what it is; `T` must be the registered type.
    @inline(__always)
    func callFactory<T>(as type: T.Type, _ resolver: any Resolver) throws -> T {
        if factoryTakesResolver { return try TypedFactory<T>(erasedFactory).call(resolver) }
        return try ResolverFreeFactory<T>(erasedFactory).call()
    }

    /// The module and scope it was registered with, for the container's duplicate detection.
    var record: WeaveDI.Container.RegistrationRecord { .init(module: module, scope: scope) }

    /// Slots this entry's factory resolved through its resolver, or that were built while it ran
    /// (recorded in its first builds).
    var edges: Set<Int> { Entry.edgeLock.withLock { recordedEdges } }

    /// Whether this entry's edges are known: it has no factory (`register(_:instance:)`), or its
    /// factory has run at least once (each such run records what it asks for until it returns
    /// or throws; one that threw part way recorded what it asked for before).
    var edgesKnown: Bool { isProvidedInstance || builds.load(ordering: .relaxed) > 0 }

    /// Records that this entry's factory needed `slot`.
    func recordEdge(to slot: Int) {
        Entry.edgeLock.withLock { _ = recordedEdges.insert(slot) }
    }

    /// The registered type's name, spelled when first asked for (errors, logs, diagnostics):
    /// spelling a type is slow, registering is not.
    var typeName: String { TypeSlots.shared.name(ofSlot: slot) }

    /// The registered type's name in a log line (`TypeSlots.logName(ofSlot:)`): qualified when
    /// another type of the same name was named before.
    var logName: String { TypeSlots.shared.logName(ofSlot: slot) }

    /// The registered type's name in an error made here (`ResolutionStack.messageName`):
    /// qualified when a build open on this thread is of another type of the same name.
    var messageName: String { ResolutionStack.current.messageName(of: slot) }

    /// A copy with the same factory and an empty singleton cell. It keeps what this entry's
    /// builds recorded, and their count: the same factory has the same dependencies, so
    /// `releaseAll()` and `evict` leave the graph `checkCycles()` reads as it was.
    func fresh() -> Entry {
        if isProvidedInstance { return self }
        let copy = Entry(slot: slot, scope: scope, module: module, isProvidedInstance: false, factory: erasedFactory,
            takesResolver: factoryTakesResolver, erased: erased)
        copy.builds.store(builds.load(ordering: .relaxed), ordering: .relaxed)
        Entry.edgeLock.withLock { copy.recordedEdges = recordedEdges }
        return copy
    }

    /// Whether the singleton cell holds an instance.
    var hasInstance: Bool { instance.load(ordering: .acquiring) != nil }

    /// The built singleton, if any (lock-free); `T` must be the registered type.
    func cached<T>(as type: T.Type) -> T? {
        guard let raw = instance.load(ordering: .acquiring) else { return nil }
        return unbox(raw, as: T.self)
    }

    /// Publishes the singleton; call once, inside its gate (`BuildGates`).
    func publish<T>(_ value: T) {
        instance.store(UnsafeRawPointer(Unmanaged.passRetained(Box(value)).toOpaque()), ordering: .releasing)
    }

    /// `value` as a `Disposable`, or nil if it does not adopt it (`T` is the registered type).
    func disposable<T>(_ value: T) -> (any Disposable)? {
        // The dynamic type, through `Any`: when `T` is an existential, `type(of:)` on `T` itself
        // would give the existential, the same for every concrete type behind it.
        let dynamicType = UInt(bitPattern: ObjectIdentifier(type(of: value as Any)))
        if notDisposable.load(ordering: .relaxed) == dynamicType { return nil }
        guard let disposable = value as? any Disposable else {
            notDisposable.store(dynamicType, ordering: .relaxed)
            return nil
        }
        return disposable
    }

    /// A new `Box<T>` holding `value` (`T` is the registered type), its class metadata looked
    /// up once per entry instead of on every build. The pointer is published with release and
    /// read with acquire: a thread using it sees the metadata as the runtime initialized it
    /// (free on x86-64; on ARM it costs a build, never a cached read).
    func makeBox<T>(_ value: T) -> Box<T> {
        let boxType: Box<T>.Type
        if let raw = boxClass.load(ordering: .acquiring) {
            boxType = unsafeBitCast(raw, to: Box<T>.Type.self)
        } else {
            boxType = Box<T>.self
            boxClass.store(unsafeBitCast(boxType, to: UnsafeRawPointer.self), ordering: .releasing)
        }
        return boxType.init(value)
    }

    /// Resolves through the container's normal path, type-erased (warm-up and probes).
    func resolveErased(in container: WeaveDI.Container, owner: ScopeOwner?) throws(ResolutionError) -> Any {
        try erased(self, .resolve(container, owner))!
    }

    /// The singleton instance the container built for this entry, if any. Releasing it means
    /// retiring the whole entry (readers may still hold the cell), never clearing the cell.
    var builtInstance: Any? {
        try? erased(self, .builtInstance)
    }
}

/// A factory of `T`. Its closure is stored as `T` is unknown (the result returned indirectly),
/// whether the code that made it or calls it knows `T` or not: a generic struct's field keeps the
/// abstraction of its declaration, and the compiler converts on the way in and out. That is what
/// makes the bit cast to and from `ErasedFactory` sound.
struct TypedFactory<T> {
    let call: @Sendable (any Resolver) throws -> T

    init(call: @escaping @Sendable (any Resolver) throws -> T) {
        self.call = call
    }

    /// Reads back the factory `erased` was made from; `T` must be the type it was made with.
    @inline(__always)
    init(_ erased: ErasedFactory) {
        self = unsafeBitCast(erased, to: TypedFactory<T>.self)
    }

    /// The same closure with `T` erased: two words, a function and its retained context, as
    /// every closure.
    var erased: ErasedFactory { unsafeBitCast(self, to: ErasedFactory.self) }
}

/// A factory of `T` that needs no resolver, kept as `TypedFactory` keeps its own.
struct ResolverFreeFactory<T> {
    let call: @Sendable () throws -> T

    init(call: @escaping @Sendable () throws -> T) {
        self.call = call
    }

    /// Reads back the factory `erased` was made from; `T` must be the type it was made with.
    @inline(__always)
    init(_ erased: ErasedFactory) {
        self = unsafeBitCast(erased, to: ResolverFreeFactory<T>.self)
    }

    var erased: ErasedFactory { unsafeBitCast(self, to: ErasedFactory.self) }
}

/// A `TypedFactory` or `ResolverFreeFactory` with its type erased. Never called as it is.
struct ErasedFactory {
    let closure: @Sendable () -> Void
}

/// What `Entry.erased` is asked to do.
enum ErasedOperation {
    /// Resolve through the container's normal path.
    case resolve(WeaveDI.Container, ScopeOwner?)
    /// Return the built singleton, if any.
    case builtInstance
}

/// The value in the `Box<T>` at `raw` (borrowed: the box must stay alive meanwhile).
@inlinable @inline(__always)
func unbox<T>(_ raw: UnsafeRawPointer, as type: T.Type) -> T {
    Unmanaged<Box<T>>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.value }
}
