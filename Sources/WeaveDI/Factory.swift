/// A new instance on every read, whatever scope the type is registered in: for workers fanned
/// out over a task group, one fresh instance per task.
///
/// ```swift
/// final class DocumentService {
///     @Factory var pdfGenerator: PDFGenerator
/// }
/// ```
///
/// The instance is built by the registration's factory in `WeaveDI.Container.live`, with the
/// current session or request (if any) as its resolver. A read cannot throw, so a read that
/// cannot build stops the program with the `ResolutionError` `makeFresh` would throw, which
/// names the types and what to do: the type is not registered; it is session- or
/// request-scoped and read inside the build of a longer-lived service, or where no such scope
/// is active (see `Container.makeFresh`); it is part of a cycle (A's initializer reads `@Factory var b: B`, and
/// B's reads `@Factory var a: A`); its factory threw. Call `try $x.getValue()` (or
/// `try container.makeFresh(T.self)`) where such a failure must be handled. The stop's message names the property's declaration
/// (`@Factory var ...: PDFGenerator (declared at App/DocumentService.swift:2): ...`): the
/// initializers take `#fileID` and `#line` as defaults, which Swift evaluates where the property
/// is declared. Leave them out.
///
/// Each instance read is the reader's, as a transient is, whatever the registration's scope:
/// nothing keeps it, and no session, request or `releaseAll()` disposes it; a reader of a
/// `Disposable` type calls `dispose()` itself when done with it.
@propertyWrapper
public struct Factory<Value: Sendable>: Sendable {
    /// Where the property is declared, for a stop's message (read by nothing else).
    let site: DeclarationSite

    /// A factory for the wrapped property's type. `fileID` and `line` default to the property's
    /// declaration, which a read that stops the program names.
    public init(fileID: StaticString = #fileID, line: UInt = #line) {
        site = DeclarationSite(fileID: fileID, line: line)
    }

    /// A factory for `type`. `fileID` and `line` default to the property's declaration, which a
    /// read that stops the program names.
    public init(_ type: Value.Type, fileID: StaticString = #fileID, line: UInt = #line) {
        site = DeclarationSite(fileID: fileID, line: line)
    }

    /// A freshly built instance.
    public var wrappedValue: Value {
        do {
            return try Self.fresh()
        } catch {
            Self.unbuilt(error, declaredAt: site)
        }
    }

    /// The wrapper itself, so that `try $x.getValue()` can throw where a read would stop the
    /// program (a computed property: the wrapper does not grow).
    public var projectedValue: Factory<Value> { self }

    /// A freshly built instance, or the `ResolutionError` a read would stop the program with
    /// (what `try container.makeFresh(Value.self)` throws from `WeaveDI.Container.live`).
    public func getValue() throws(ResolutionError) -> Value {
        try Self.fresh()
    }

    /// A freshly built instance; the site stays out of the build (only the failure path reads it).
    @inline(__always)
    static func fresh() throws(ResolutionError) -> Value {
        // The live container is never freed: borrowed, not retained. (`_withUnsafeGuaranteedRef`
        // rethrows untyped errors; the body throws only `ResolutionError`.)
        do {
            return try WeaveDI.Container.liveRef._withUnsafeGuaranteedRef { container throws(ResolutionError) in
                try container.makeFresh(Value.self)
            }
        } catch {
            throw error as! ResolutionError
        }
    }

    /// Why a read could not build, as the program's last words.
    @inline(never)
    static func unbuilt(_ error: ResolutionError, declaredAt site: DeclarationSite) -> Never {
        fatalError(
            "@Factory var ...: \(Value.self)\(site.declaredAt): \(WeaveDI.Container.wrapperFailure(error, reading: Value.self)) (a @Factory read cannot throw; "
                + "try $x.getValue() throws this error instead, as try WeaveDI.Container.live.makeFresh(\(Value.self).self) does)")
    }
}

extension WeaveDI.Container {
    /// Builds a new instance of `type` with its registered factory, bypassing any cache.
    ///
    /// Whatever the registration's scope, with two exceptions, as `require`: inside the build
    /// of a longer-lived service (a singleton's factory or an `InjectedKey`'s default, directly
    /// or through transients, or a session-scoped one's), a session- or request-scoped `type`
    /// throws `scopeMismatch`: the longer-lived instance would keep what the shorter scope
    /// built; and where no such scope is active (no session or request current or building),
    /// it throws `noActiveScope` (`scopeClosed` for a closed one), never an instance nothing owns.
    ///
    /// The instance is the caller's, whatever the registration's scope, as a transient is: the
    /// container keeps no reference to it, and no session, request or `releaseAll()` disposes
    /// it. A `Disposable` one is disposed by its caller (`await instance.dispose()`) when done.
    public func makeFresh<T: Sendable>(_ type: T.Type) throws(ResolutionError) -> T {
        let slot = typeSlots.slot(for: type)
        guard let unmanaged = table.load(slot) else { throw notRegistered(type) }
        let stack = ResolutionStack.current
        let scope = unmanaged._withUnsafeGuaranteedRef { $0.scope }
        let owner = owner(in: stack)
        if scope == .session || scope == .request {
            if !stack.isEmpty { try checkCapture(of: unmanaged, scope: scope, stack: stack) }
            // As `resolve`: no instance of a scope that is not active (nothing would own it).
            _ = try scopeTarget(for: unmanaged.takeUnretainedValue(), owner: owner)
        }
        return try build(unmanaged, as: type, owner: owner, stack: stack)
    }

    /// Throws `scopeMismatch` when the innermost build with a lifetime of its own outlives `scope`.
    @inline(never)
    private func checkCapture(of entry: Unmanaged<Entry>, scope: WeaveDI.Scope, stack: ResolutionStack) throws(ResolutionError) {
        guard let outer = stack.nearestScoped, scope.lifetime < outer.scope.lifetime else { return }
        throw .scopeMismatch(
            outer: outer.builtName(among: [entry._withUnsafeGuaranteedRef { $0.slot }], on: stack), outerScope: outer.scope,
            inner: entry._withUnsafeGuaranteedRef { $0.messageName }, innerScope: scope)
    }
}
