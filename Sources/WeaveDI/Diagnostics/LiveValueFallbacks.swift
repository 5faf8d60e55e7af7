/// A key whose default in the test or preview context is its `liveValue`, for want of a
/// `testValue` (`previewValue`) of its own: what its diagnostic says, kept whatever the log
/// level was when it was said (`InjectedValues.liveValueFallbacks`).
public struct LiveValueFallback: Sendable, Equatable {
    /// The key, named as the diagnostic names it.
    public var key: String
    /// The context whose value the key lacks: `test` (its `testValue`) or `preview` (its
    /// `previewValue`).
    public var context: InjectedContext
    /// The diagnostic: what the key lacks and the declaration that gives it.
    public var message: String
}

extension InjectedValues {
    /// The keys found so far in this process to read their `liveValue` in the test or preview
    /// context, for want of a `testValue` (`previewValue`) of their own, in the order found: one
    /// entry per key and context, each with the diagnostic said for it then, whether or not the
    /// log level let it out. A key is found when its default for that context is computed (its
    /// first read there).
    public static var liveValueFallbacks: [LiveValueFallback] { LiveValueFallbacks.found }
}

/// The record behind `InjectedValues.liveValueFallbacks`, which also makes its diagnostic said
/// once per key and context: bounded as the keys are (a key's default is computed once per
/// context, and a key is recorded once per context).
enum LiveValueFallbacks {
    private struct Found: Hashable {
        let key: ObjectIdentifier
        let context: InjectedContext
    }

    private static let record = Locked<(seen: Set<Found>, list: [LiveValueFallback])>((seen: [], list: []))

    static var found: [LiveValueFallback] { record.withLock { $0.list } }

    /// Records that `key`, of value type `value`, reads its `liveValue` in `context` (`test` or
    /// `preview`), and says so as a diagnostic: the first time only. `reader`: the key whose
    /// default for its context read `key`'s `testValue` (`previewValue`) itself, as
    /// `static var testValue: T { OtherKey.testValue }` does, if that is how it was found.
    @inline(never)
    static func found(
        key: Any.Type, value: Any.Type, in context: InjectedContext,
        readBy reader: (key: Any.Type, context: InjectedContext)? = nil
    ) {
        let found = Found(key: ObjectIdentifier(key), context: context)
        // Found before (another key's default that read this one's): its names are not spelled again.
        guard !record.withLock({ $0.seen.contains(found) }) else { return }
        let name = TypeSlots.shared.logName(of: key)
        let fallback = LiveValueFallback(key: name, context: context, message: message(
            key: name, value: spelling(of: value), context: context,
            readBy: reader.map { (TypeSlots.shared.logName(of: $0.key), $0.context) }))
        let first = record.withLock { record in
            guard record.seen.insert(found).inserted else { return false }
            record.list.append(fallback)
            return true
        }
        if first { WeaveDILog.log(.diagnostic, subsystem: "injected", fallback.message) }
    }

    /// How Swift 6 source writes `type`: the run time spells an existential `any P` as `P` (`any`
    /// written for the whole type here, for its generic arguments by `sourceSpelling`).
    private static func spelling(of type: Any.Type) -> String {
        let name = TypeSlots.shared.logName(of: type)
        if name != "Any", name != "AnyObject", TypeRelation.isExistential(type) { return "any " + name }
        return TypeSlots.shared.sourceSpelling(ofName: name) ?? name
    }

    /// The diagnostic for a key without a value of its own for `context`, found computing its
    /// own default, or `reader`'s, which read the key's `testValue` (`previewValue`) itself. It
    /// says the type the declaration must have: one of another type (`T?`, a subclass of `T`)
    /// compiles, silently, as a member of the key's own, and the protocol extension's is read.
    static func message(
        key: String, value: String, context: InjectedContext, readBy reader: (key: String, context: InjectedContext)?
    ) -> String {
        let missing = member(for: context)
        let reads = reader.map { "\($0.key)'s \(member(for: $0.context)) reads \(key).\(missing), which is its liveValue" }
            ?? "the \(context) context reads its liveValue"
        return "\(key) has no \(missing): \(reads) (said once for this key); "
            + "to give it one, declare static var \(missing): \(value) { ... } in \(key), of that type exactly (a "
            + "\(missing) of another type, such as an optional or a subclass, is not the protocol's and is never read)"
    }

    private static func member(for context: InjectedContext) -> String {
        context == .preview ? "previewValue" : "testValue"
    }
}
