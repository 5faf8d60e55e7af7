import Synchronization

/// One registration in a container: how to build a type, in which scope, made by which module.
///
/// Entries are immutable but for their singleton cell (set once) and their recorded edges.
/// A replaced entry is retired, never freed before its container, so lock-free readers that
/// loaded it stay safe.
///
/// `@unchecked Sendable`: the mutable parts are an `Atomic` and a `Locked`.
@usableFromInline
class EntryBase: @unchecked Sendable {
    let slot: Int
    let scope: WeaveDI.Scope
    let module: String
    /// True for `register(_:instance:)`: the container did not build it and never disposes it.
    let isProvidedInstance: Bool
    /// Builds made so far (the first few record the dependency edges).
    let builds = Atomic<Int>(0)
    /// Slots this entry's factory resolved through its resolver.
    let edges = Locked<Set<Int>>([])
    /// The built singleton: a retained `Box<T>` of the `Entry<T>`, as a raw pointer. Here, in
    /// the non-generic base, so that code which is generic over `T` and not specialized (a
    /// factory's `r.require(T.self)` goes through the `Resolver` protocol) reads it without
    /// instantiating metadata at run time: neither `Entry<T>` nor `Atomic<Unmanaged<Box<T>>?>`
    /// nor `Optional<T>`.
    @usableFromInline
    let instance = Atomic<UnsafeRawPointer?>(nil)

    init(slot: Int, scope: WeaveDI.Scope, module: String, isProvidedInstance: Bool) {
        self.slot = slot
        self.scope = scope
        self.module = module
        self.isProvidedInstance = isProvidedInstance
    }

    /// The registered type's name, spelled when first asked for (errors, logs, diagnostics):
    /// spelling a type is slow, registering is not.
    var typeName: String { TypeSlots.shared.name(ofSlot: slot) }

    /// A copy with the same factory and an empty singleton cell.
    func fresh() -> EntryBase { fatalError("abstract") }

    /// Whether the singleton cell holds an instance.
    var hasInstance: Bool { fatalError("abstract") }

    /// Builds one instance through the type-erased path (diagnostics, warm-up, probes).
    func buildErased(in container: WeaveDI.Container, owner: ScopeOwner?) throws(ResolutionError) -> Any {
        fatalError("abstract")
    }

    /// Resolves through the container's normal path, type-erased (warm-up and probes).
    func resolveErased(in container: WeaveDI.Container, owner: ScopeOwner?) throws(ResolutionError) -> Any {
        fatalError("abstract")
    }

    /// The singleton instance the container built for this entry, if any. Releasing it means
    /// retiring the whole entry (readers may still hold the cell), never clearing the cell.
    var builtInstance: Any? { fatalError("abstract") }
}

/// The value in the `Box<T>` at `raw` (borrowed: the box must stay alive meanwhile).
@inlinable @inline(__always)
func unbox<T>(_ raw: UnsafeRawPointer, as type: T.Type) -> T {
    Unmanaged<Box<T>>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.value }
}

/// The typed registration for `T`.
@usableFromInline
final class Entry<T>: EntryBase, @unchecked Sendable {
    let factory: @Sendable (any Resolver) throws -> T

    init(
        slot: Int, scope: WeaveDI.Scope, module: String,
        factory: @escaping @Sendable (any Resolver) throws -> T
    ) {
        self.factory = factory
        super.init(slot: slot, scope: scope, module: module, isProvidedInstance: false)
    }

    init(slot: Int, module: String, instance value: T) {
        let box = Box(value)
        self.factory = { _ in box.value }
        super.init(slot: slot, scope: .singleton, module: module, isProvidedInstance: true)
        instance.store(UnsafeRawPointer(Unmanaged.passRetained(box).toOpaque()), ordering: .releasing)
    }

    deinit {
        if let raw = instance.load(ordering: .acquiring) { Unmanaged<Box<T>>.fromOpaque(raw).release() }
    }

    /// The built singleton, if any (lock-free).
    func cached() -> T? {
        guard let raw = instance.load(ordering: .acquiring) else { return nil }
        return unbox(raw, as: T.self)
    }

    /// Publishes the singleton; call once, under the container's build lock.
    func publish(_ value: T) {
        instance.store(UnsafeRawPointer(Unmanaged.passRetained(Box(value)).toOpaque()), ordering: .releasing)
    }

    override func fresh() -> EntryBase {
        if isProvidedInstance { return self }
        return Entry(slot: slot, scope: scope, module: module, factory: factory)
    }

    override var hasInstance: Bool { instance.load(ordering: .acquiring) != nil }

    override func buildErased(in container: WeaveDI.Container, owner: ScopeOwner?) throws(ResolutionError) -> Any {
        try container.build(self, owner: owner)
    }

    override func resolveErased(in container: WeaveDI.Container, owner: ScopeOwner?) throws(ResolutionError) -> Any {
        try container.produce(self, explicit: owner)
    }

    override var builtInstance: Any? {
        isProvidedInstance ? nil : cached()
    }
}
