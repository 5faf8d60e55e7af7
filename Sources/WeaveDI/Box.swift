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
