/// Resolves the property's type from `WeaveDI.Container.live` on every read, as
/// `@Injected var x: T?` / `@Injected var x: T` do: `@Inject var x: T?` is nil when `T` cannot
/// be resolved; `@Inject var x: T` stops the program with a message naming the type.
@available(*, deprecated, message: "@Inject is deprecated: use @Injected(\\.key) with an InjectedKey, or @Injected var value: T (or T?) for a registered type")
@propertyWrapper
public struct Inject<Value: Sendable>: Sendable {
    let injected: Injected<Value>

    /// Resolves the property's type. `fileID` and `line` default to the property's declaration,
    /// which a read that stops the program names.
    public init(fileID: StaticString = #fileID, line: UInt = #line) {
        injected = Injected(declaredAt: DeclarationSite(fileID: fileID, line: line), wrapper: "@Inject")
    }

    /// The resolved instance (nil for an optional property when it cannot be resolved).
    public var wrappedValue: Value { injected.wrappedValue }
}

/// Resolves `T` from `WeaveDI.Container.live`; `getValue()` throws the reason it cannot.
@available(*, deprecated, message: "@SafeInject is deprecated: use @Injected var x: T? (or T) for a registered type, whose try $x.getValue() throws as this one's does, or @Injected(\\.key) with an InjectedKey")
@propertyWrapper
public struct SafeInject<T: Sendable>: Sendable {
    /// Resolves the property's type.
    public init() {}

    /// The resolved instance, or nil (read as `@Injected var x: T?` reads).
    public var wrappedValue: T? { LiveTypeLookup<T>.shared().read() }

    /// The wrapper itself, so that `$value.getValue()` can throw.
    public var projectedValue: SafeInject<T> { self }

    /// The resolved instance; throws `ResolutionError` saying why it cannot be resolved.
    public func getValue() throws(ResolutionError) -> T {
        try WeaveDI.Container.live.require(T.self)
    }
}
