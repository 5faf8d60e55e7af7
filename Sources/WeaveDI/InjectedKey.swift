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
    /// The value under `swift test` (defaults to `liveValue`).
    static var testValue: Value { get }
    /// The value in previews (defaults to `liveValue`).
    static var previewValue: Value { get }
}

extension InjectedKey {
    /// Defaults to `liveValue`.
    public static var testValue: Value { liveValue }
    /// Defaults to `liveValue`.
    public static var previewValue: Value { liveValue }
}
