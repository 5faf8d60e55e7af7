/// An immutable heap cell for a value of any type, so that it can be published through an atomic
/// reference.
///
/// `@unchecked Sendable`: the box is immutable; whether `Value` may cross threads is the
/// registering code's contract, exactly as with the container that hands the value out.
@usableFromInline
final class Box<Value>: @unchecked Sendable {
    @usableFromInline let value: Value

    @usableFromInline
    init(_ value: Value) { self.value = value }
}

/// Where the value of the `Box` at `raw` lives, read as a `T` (the box's value type, or a type
/// with the same layout): a class instance's stored properties follow its two-word header, at
/// the value's alignment. (The box must stay alive while the pointer is used.)
@inlinable @inline(__always)
func boxedValuePointer<T>(_ raw: UnsafeRawPointer, as type: T.Type) -> UnsafePointer<T> {
    let alignment = MemoryLayout<T>.alignment
    let offset = (2 * MemoryLayout<Int>.size + alignment - 1) & ~(alignment - 1)
    return (raw + offset).assumingMemoryBound(to: T.self)
}
