/// Whether a registered type could be what a request for another type meant: for the "did you
/// mean" suggestions of `notRegistered`, which are found by name and must not name a type that
/// has nothing to do with the one asked for.
///
/// Two types are related when the instances of one are instances of the other: the same type, a
/// subclass, a type that conforms to a protocol the other is the existential of. A registration
/// serves only requests for exactly its type, so a related type is a likely mix-up (registered
/// as the implementation, asked for as the protocol, or the other way round); an unrelated type
/// of a similar name is not.
enum TypeRelation {
    /// True when one type's instances are the other's; false when the type system says neither
    /// is; nil when the run time cannot tell (an existential against another existential, whose
    /// protocols may refine each other; a parameterized existential such as `any Sequence<Int>`).
    static func related(_ a: Any.Type, _ b: Any.Type) -> Bool? {
        let forward = isA(a, b), backward = isA(b, a)
        if forward == true || backward == true { return true }
        if forward == false && backward == false { return false }
        return nil
    }

    /// Whether `related(a, b)` is false, told by the kinds of the two types alone, without
    /// asking the run time: two different types, each a struct, an enum or a class, not both
    /// classes. Only a struct or an enum itself is an instance of it (the run time casts a
    /// metatype to a struct's or an enum's only if it is the same metadata, generic arguments
    /// and all: `[Sub]` is no `[Base]` here), and only a class is one of a class. False when it
    /// cannot be told so (`related` then says).
    static func plainlyUnrelated(_ a: Any.Type, _ b: Any.Type) -> Bool {
        guard ObjectIdentifier(a) != ObjectIdentifier(b) else { return false }
        // The metadata's kind (the run time's ABI): 0 a class (a Swift class, where there is
        // no Objective-C), 0x200 a struct, 0x201 an enum (an optional is 0x202).
        func kind(_ type: Any.Type) -> UInt { unsafeBitCast(type, to: UnsafePointer<UInt>.self).pointee }
        let first = kind(a), second = kind(b)
        func nominal(_ kind: UInt) -> Bool { kind == 0 || kind == 0x200 || kind == 0x201 }
        return nominal(first) && nominal(second) && (first != 0 || second != 0)
    }

    /// Whether an instance of `candidate` is always a `wanted` (nil: cannot tell).
    static func isA(_ candidate: Any.Type, _ wanted: Any.Type) -> Bool? {
        // The same type or a subclass (for an existential `wanted` this asks for the existential
        // itself, never a conforming type).
        func sameOrSubclass<Wanted>(_: Wanted.Type) -> Bool { candidate is Wanted.Type }
        if _openExistential(wanted, do: sameOrSubclass) { return true }
        // Only the type itself and its subclasses are instances of a concrete type.
        guard isExistential(wanted) else { return false }
        guard !isExistential(candidate), let metatype = existentialMetatype(of: wanted) else { return nil }
        // `any P.Type` holds the metatype of every type that conforms to P.
        func conforms<Metatype>(_: Metatype.Type) -> Bool { (candidate as Any) is Metatype }
        return _openExistential(metatype, do: conforms)
    }

    /// Whether `type` is an existential (`any P`, `any P & Q`, `Any`, `AnyObject`,
    /// `any P<T>`), read from its metadata's kind (0x303, or 0x307 for a parameterized one: the
    /// runtime's ABI, docs/ABI/TypeMetadata.rst in the Swift repository).
    static func isExistential(_ type: Any.Type) -> Bool {
        let kind = unsafeBitCast(type, to: UnsafePointer<UInt>.self).pointee
        return kind == 0x303 || kind == 0x307
    }

    /// `any P.Type` for the existential `any P`, found by its mangled name (`P_p` then `P_pXp`);
    /// nil where the runtime does not find it (a parameterized existential).
    private static func existentialMetatype(of existential: Any.Type) -> Any.Type? {
        guard let mangled = _mangledTypeName(existential) else { return nil }
        return _typeByName(mangled + "Xp")
    }
}
