/// A key for a dependency read through `InjectedValues` and `@Injected(\.key)`.
///
/// ```swift
/// struct UserServiceKey: InjectedKey {
///     static var liveValue: any UserService { LiveUserService() }
///     static var testValue: any UserService { MockUserService() }   // optional
/// }
/// extension InjectedKeys {
///     var userService: UserServiceKey.Type { UserServiceKey.self }   // @Injected(\.userService)
/// }
/// ```
///
/// (A property of `InjectedValues` that reads `self[UserServiceKey.self]` works too, but
/// `@Injected` applies it on every read: see `InjectedKeys`.)
///
/// The default for the current context (`InjectedContext.current`) is computed once and cached
/// for the process, without the overrides of `withInjectedValues` in effect where it is first
/// read (a default that reads another key gets that key's registration or default). Kept for
/// the process, as a singleton is, a default that resolves a session- or request-scoped service
/// gets `ResolutionError.scopeMismatch`.
public protocol InjectedKey {
    /// The type of the dependency.
    associatedtype Value: Sendable
    /// The value in a running program.
    static var liveValue: Value { get }
    /// The value under `swift test` (defaults to `liveValue`, which is then said once as a diagnostic).
    static var testValue: Value { get }
    /// The value in previews (defaults to `liveValue`, which is then said once as a diagnostic).
    static var previewValue: Value { get }
}

extension InjectedKey {
    /// Defaults to `liveValue`. A key's default computed so in the test context is said once, as
    /// a diagnostic: a test then reads what a running program would (its network, its database).
    public static var testValue: Value {
        let value = liveValue
        ResolutionStack.noteLiveValueStandIn(for: Self.self, value: Value.self, in: .test)
        return value
    }
    /// Defaults to `liveValue`. A key's default computed so in the preview context is said once,
    /// as a diagnostic.
    public static var previewValue: Value {
        let value = liveValue
        ResolutionStack.noteLiveValueStandIn(for: Self.self, value: Value.self, in: .preview)
        return value
    }
}
