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

    /// Starts a new generation; call after publishing the change.
    static func bump() {
        counter.add(1, ordering: .releasing)
    }
}
