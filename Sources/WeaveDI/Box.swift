/// An immutable heap cell for a value of any type, so that it can be published through an atomic
/// reference.
///
/// `Sendable` when `Value` is, as the compiler checks: the container shares what it holds between
/// threads, so its public API takes only `Sendable` types (`register`, `resolve`, `require`,
/// `makeFresh`, `@Factory`, `@Injected` by type, `@Provide`), and a box of anything else cannot
/// be captured by the `@Sendable` factories it is kept in.
@usableFromInline
final class Box<Value> {
    @usableFromInline let value: Value

    @usableFromInline
    init(_ value: Value) { self.value = value }
}

extension Box: Sendable where Value: Sendable {}

/// Where the value of the `Box` at `raw` lives, read as a `T` (the box's value type, or a type
/// with the same layout): a class instance's stored properties follow its two-word header, at
/// the value's alignment. (The box must stay alive while the pointer is used.)
@inlinable @inline(__always)
func boxedValuePointer<T>(_ raw: UnsafeRawPointer, as type: T.Type) -> UnsafePointer<T> {
    let alignment = MemoryLayout<T>.alignment
    let offset = (2 * MemoryLayout<Int>.size + alignment - 1) & ~(alignment - 1)
    return (raw + offset).assumingMemoryBound(to: T.self)
}
