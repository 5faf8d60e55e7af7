/// Resolves `T` from `WeaveDI.Container.live` on every read; nil if it cannot.
@available(*, deprecated, message: "@Inject is deprecated: use @Injected(\\.key) with an InjectedKey, or @Injected var value: T? for a registered type")
@propertyWrapper
public struct Inject<T>: Sendable {
    /// Resolves the property's type.
    public init() {}

    /// The resolved instance, or nil.
    public var wrappedValue: T? { WeaveDI.Container.live.resolve(T.self) }
}

/// Resolves `T` from `WeaveDI.Container.live`; `getValue()` throws the reason it cannot.
@available(*, deprecated, message: "@SafeInject is deprecated: use @Injected(\\.key) with an InjectedKey, or try container.require(T.self) for a registered type")
@propertyWrapper
public struct SafeInject<T>: Sendable {
    /// Resolves the property's type.
    public init() {}

    /// The resolved instance, or nil.
    public var wrappedValue: T? { WeaveDI.Container.live.resolve(T.self) }

    /// The wrapper itself, so that `$value.getValue()` can throw.
    public var projectedValue: SafeInject<T> { self }

    /// The resolved instance; throws `ResolutionError` saying why it cannot be resolved.
    public func getValue() throws(ResolutionError) -> T {
        try WeaveDI.Container.live.require(T.self)
    }
}
