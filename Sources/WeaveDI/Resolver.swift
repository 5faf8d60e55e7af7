/// What `Container`, `Session` and `Request` share: looking services up.
///
/// A factory that takes a resolver (`container.register(T.self) { r in ... }`) gets the resolver of
/// the scope its instance is being built in: the container for singletons, the session for
/// session-scoped services, the request for request-scoped ones, and the caller's for transients.
///
/// Class-bound: a factory's `any Resolver` is then one reference (and its witness table), passed
/// in registers without being copied into a box and retained on every build.
public protocol Resolver: AnyObject, Sendable {
    /// The instance for `type`, or nil (and a logged reason) when it cannot be resolved.
    func resolve<T: Sendable>(_ type: T.Type) -> T?
    /// The instance for `type`; throws `ResolutionError` saying why it cannot be resolved.
    func require<T: Sendable>(_ type: T.Type) throws(ResolutionError) -> T
}

/// What a scoped instance adopts to be told that its scope has ended: a singleton when its
/// container releases it, a session- or request-scoped instance when that scope closes.
/// `dispose()` is called once, in reverse creation order.
///
/// Only what a container keeps is disposed by it: not a transient, not an instance made fresh
/// (`makeFresh`, `@Factory`) whatever its registration's scope, not one given with
/// `register(_:instance:)`. Those are their caller's to dispose.
public protocol Disposable: Sendable {
    /// Releases what the instance holds (connections, files, tasks).
    func dispose() async
}
