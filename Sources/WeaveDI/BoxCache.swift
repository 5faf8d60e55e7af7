import Synchronization

/// What a reader remembers of its answer: a box (of a built singleton of `Container.live`, or
/// of a key's default) and the generation it saw it at. While the generation stays, the box is the
/// answer, read with three atomic loads and no lock.
///
/// A sequence lock: a writer clears `asOf`, stores the box, then stores the generation; a
/// reader trusts the box only if `asOf` equals the current generation both before and after
/// loading it. Writers never wait: one that finds another writing leaves the cache alone.
///
/// The box stays valid memory for good: a singleton cell belongs to an entry of a container
/// that was `live`; such containers are never freed, nor are their replaced entries; a key's
/// default is kept by its `KeyState`, never freed either.
@usableFromInline
struct BoxCache: ~Copyable, Sendable {
    @usableFromInline
    let asOf = Atomic<UInt64>(0)
    /// The box's address (an integer: raw pointers are not `Sendable`).
    @usableFromInline
    let box = Atomic<UInt>(0)
    private let writing = Atomic<Bool>(false)

    init() {}

    /// The cached box, if it was stored at `generation` (the current one).
    @inlinable @inline(__always)
    func load(at generation: UInt64) -> UnsafeRawPointer? {
        guard asOf.load(ordering: .acquiring) == generation else { return nil }
        let raw = box.load(ordering: .acquiring)
        guard asOf.load(ordering: .relaxed) == generation else { return nil }
        return UnsafeRawPointer(bitPattern: raw)
    }

    /// Remembers the built singleton of `slot` in `container`, if there is one, as of
    /// `generation` (read before the container was).
    func store(singletonOf slot: Int, in container: WeaveDI.Container, at generation: UInt64) {
        guard let raw = container.table.singletonBox(slot) else { return }
        store(raw, at: generation)
    }

    /// Remembers `raw`, a box that is never freed, as of `generation` (read before the box was
    /// found).
    func store(_ raw: UnsafeRawPointer, at generation: UInt64) {
        guard writing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        asOf.store(0, ordering: .relaxed)
        box.store(UInt(bitPattern: raw), ordering: .releasing)
        asOf.store(generation, ordering: .releasing)
        writing.store(false, ordering: .releasing)
    }
}
