import Synchronization

/// A process-wide counter bumped by every change that can alter what a lookup returns: a
/// registration, a release, an eviction, a swap of `Container.live`, a change of context.
///
/// Readers that cache a derived answer remember the generation it was derived at and trust it
/// only while the counter has not moved.
///
/// Its lowest bit is `overridesUsed`, set for good by the process's first `withInjectedValues`
/// (`Overrides.everUsed`): a key's read then looks for an override before its cached answer.
/// Kept in the counter, so that the read loads one word for both; a bump adds 2, and setting the
/// bit moves the counter too, so that answers cached before are not trusted after.
///
/// The counter lives in memory of its own, never freed, whose address the hot readers keep
/// (`KeyReader`, `TypeLookup`): a load through a field of the reader at hand is cheaper than the
/// call into this module that finds a global's address.
@usableFromInline
enum Generation {
    @usableFromInline
    nonisolated(unsafe) static let counter: UnsafeMutablePointer<Atomic<UInt64>> = {
        let counter = UnsafeMutablePointer<Atomic<UInt64>>.allocate(capacity: 1)
        counter.initialize(to: Atomic(2))
        return counter
    }()

    /// The bit of the counter that says an override was made in this process.
    @inlinable
    static var overridesUsed: UInt64 { 1 }

    /// The current generation (acquire: what was published before the bump is visible).
    @inlinable @inline(__always)
    static var current: UInt64 { counter.pointee.load(ordering: .acquiring) }

    /// Starts a new generation; call after publishing the change.
    static func bump() {
        counter.pointee.add(2, ordering: .releasing)
    }

    /// Sets `overridesUsed` (once: later calls only load).
    static func noteOverridesUsed() {
        if counter.pointee.load(ordering: .relaxed) & overridesUsed == 0 {
            counter.pointee.bitwiseOr(overridesUsed, ordering: .releasing)
        }
    }
}
