import Synchronization

/// Objects indexed by type slot: a fixed directory of lazily allocated chunks of atomic
/// pointers. Reads are two acquire loads; writes must be serialised by the owner's lock.
/// A container keeps its registrations here; `KeyStates` keeps one state per `InjectedKey`.
///
/// `@unchecked Sendable`: every shared word is an `Atomic`; the table owns one retain of each
/// element it holds, and owners keep replaced elements alive as long as readers may hold them.
@usableFromInline
final class SlotArray<Element: AnyObject>: @unchecked Sendable {

    @usableFromInline
    let chunks: UnsafeMutablePointer<Atomic<UnsafeMutableRawPointer?>>

    init() {
        chunks = .allocate(capacity: SlotLayout.chunkCount)
        for i in 0..<SlotLayout.chunkCount { (chunks + i).initialize(to: Atomic(nil)) }
    }

    deinit {
        for c in 0..<SlotLayout.chunkCount {
            guard let raw = chunks[c].load(ordering: .acquiring) else { continue }
            let chunk = raw.assumingMemoryBound(to: Atomic<Unmanaged<Element>?>.self)
            for i in 0..<SlotLayout.chunkSize { chunk[i].load(ordering: .acquiring)?.release() }
            chunk.deinitialize(count: SlotLayout.chunkSize)
            chunk.deallocate()
        }
        chunks.deinitialize(count: SlotLayout.chunkCount)
        chunks.deallocate()
    }

    /// The entry at `slot`, unretained: valid while its container lives.
    @inlinable @inline(__always)
    func load(_ slot: Int) -> Unmanaged<Element>? {
        let c = slot >> SlotLayout.chunkShift
        guard c < SlotLayout.chunkCount, let raw = chunks[c].load(ordering: .acquiring) else { return nil }
        return raw.assumingMemoryBound(to: Atomic<Unmanaged<Element>?>.self)[slot & (SlotLayout.chunkSize - 1)]
            .load(ordering: .acquiring)
    }

    /// Stores `element` at `slot` and returns what it replaced (call under the owner's lock).
    func store(_ element: Element, at slot: Int) -> Element? {
        let c = slot >> SlotLayout.chunkShift
        precondition(c < SlotLayout.chunkCount, "WeaveDI supports at most \(SlotLayout.chunkCount * SlotLayout.chunkSize) distinct types")
        var raw = chunks[c].load(ordering: .acquiring)
        if raw == nil {
            let chunk = UnsafeMutablePointer<Atomic<Unmanaged<Element>?>>.allocate(capacity: SlotLayout.chunkSize)
            for i in 0..<SlotLayout.chunkSize { (chunk + i).initialize(to: Atomic(nil)) }
            raw = UnsafeMutableRawPointer(chunk)
            chunks[c].store(raw, ordering: .releasing)
        }
        let chunk = raw!.assumingMemoryBound(to: Atomic<Unmanaged<Element>?>.self)
        let old = chunk[slot & (SlotLayout.chunkSize - 1)]
            .exchange(Unmanaged.passRetained(element), ordering: .acquiringAndReleasing)
        guard let old else { return nil }
        return old.takeRetainedValue()
    }

    /// Clears `slot`, returning the entry it held (call under the state lock).
    func remove(_ slot: Int) -> Element? {
        let c = slot >> SlotLayout.chunkShift
        guard c < SlotLayout.chunkCount, let raw = chunks[c].load(ordering: .acquiring) else { return nil }
        let chunk = raw.assumingMemoryBound(to: Atomic<Unmanaged<Element>?>.self)
        return chunk[slot & (SlotLayout.chunkSize - 1)].exchange(nil, ordering: .acquiringAndReleasing)?.takeRetainedValue()
    }
}

/// The shape of every `SlotArray`: 4096 chunks of 256 slots.
@usableFromInline
enum SlotLayout {
    @usableFromInline static let chunkShift = 8
    @usableFromInline static let chunkSize = 1 << chunkShift
    @usableFromInline static let chunkCount = 4096
}

/// A container's registrations.
@usableFromInline
typealias EntryTable = SlotArray<Entry>

extension SlotArray where Element == Entry {
    /// The box of the built singleton at `slot`, if there is one (the read fast path; read
    /// the value with `unbox`). Untyped, so that unspecialized generic callers need no
    /// metadata for it.
    @inlinable @inline(__always)
    func singletonBox(_ slot: Int) -> UnsafeRawPointer? {
        guard let entry = load(slot) else { return nil }
        return entry._withUnsafeGuaranteedRef { $0.instance.load(ordering: .acquiring) }
    }
}

/// One object per type slot, made on first request and kept for the life of the process
/// (`KeyState`s, `@Injected` lookups by type): lock-free lookups, creation under a lock.
@usableFromInline
final class PermanentObjects: Sendable {
    @usableFromInline
    let table = SlotArray<AnyObject>()
    private let creating = Lock()

    /// The object at `slot`, if it was made (unretained: it is never freed).
    @inlinable @inline(__always)
    func existing(at slot: Int) -> Unmanaged<AnyObject>? {
        table.load(slot)
    }

    /// The object at `slot`, made by `make` the first time.
    func object<T: AnyObject>(at slot: Int, as type: T.Type, make: () -> T) -> T {
        if let existing = table.load(slot) { return unsafeDowncast(existing.takeUnretainedValue(), to: T.self) }
        return creating.withLock {
            if let existing = table.load(slot) { return unsafeDowncast(existing.takeUnretainedValue(), to: T.self) }
            let object = make()
            _ = table.store(object, at: slot)
            return object
        }
    }
}
