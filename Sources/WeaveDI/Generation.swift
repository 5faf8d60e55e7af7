import Synchronization

/// A process-wide counter bumped by every change that can alter what a lookup returns: a
/// registration, a release, an eviction, a swap of `Container.live`, a change of context.
///
/// Readers that cache a derived answer remember the generation it was derived at and trust it
/// only while the counter has not moved.
@usableFromInline
enum Generation {
    @usableFromInline
    static let counter = Atomic<UInt64>(1)

    /// The current generation (acquire: what was published before the bump is visible).
    @inlinable @inline(__always)
    static var current: UInt64 { counter.load(ordering: .acquiring) }

    /// Set in every generation from the first override on (`withInjectedValues`): caches that
    /// answer without looking for overrides are filled only in generations without it.
    @usableFromInline
    static let overridesInUse: UInt64 = 1 << 63

    /// Starts a new generation; call after publishing the change.
    static func bump() {
        counter.add(1, ordering: .releasing)
    }

    /// Moves every later generation into the range of `overridesInUse` (once and for all).
    static func noteOverridesInUse() {
        counter.bitwiseOr(overridesInUse, ordering: .releasing)
    }
}
