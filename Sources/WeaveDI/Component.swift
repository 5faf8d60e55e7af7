extension WeaveDI {
    /// A module declared by its providers: the documentation's `@Component` / `@Provide`,
    /// without macros (a macro needs swift-syntax, a package this library does not depend on).
    ///
    /// ```swift
    /// struct UserComponent: WeaveDI.Component {
    ///     @Provide var repository: any UserRepository = UserRepositoryImpl()
    ///     @Provide(scope: .singleton, { r in UserServiceImpl(repository: try r.require((any UserRepository).self)) })
    ///     var service: any UserService
    /// }
    /// UserComponent.registerAll()                                       // into Container.live
    /// await WeaveDI.Container.bootstrap(modules: [UserComponent()])     // or as a module
    /// ```
    ///
    /// Every `@Provide` property is registered under its declared type, in its scope, labelled
    /// with the component's `name` (diagnostics report duplicate providers by it). Order does not
    /// matter: registrations are resolved lazily, so a provider may need one declared after it.
    /// The providers are found by reflection (`Mirror`) on a component made with `init()`.
    public protocol Component: Module {
        /// A component is made with no arguments: every provider carries its own factory.
        init()
    }
}

extension WeaveDI.Component {
    /// Registers every `@Provide` property of this component.
    public func register(in container: WeaveDI.Container) async {
        registerProviders(in: container)
    }

    /// Registers every `@Provide` property of a new component in `container` (by default
    /// `Container.live`), labelled with the component's name: the documentation's
    /// `UserComponent.registerAll()`.
    public static func registerAll(in container: WeaveDI.Container = .live) {
        let component = Self()
        ModuleContext.$current.withValue(component.name) {
            component.registerProviders(in: container)
        }
    }

    func registerProviders(in container: WeaveDI.Container) {
        var found = 0
        var mirror: Mirror? = Mirror(reflecting: self)
        while let current = mirror {
            for child in current.children {
                guard let provider = child.value as? any ProviderRegistration else { continue }
                provider.register(in: container)
                found += 1
            }
            mirror = current.superclassMirror
        }
        if found == 0 {
            WeaveDILog.log(
                .error,
                "component \(name) has no @Provide property (or the program was built without reflection metadata); "
                    + "nothing registered")
        }
    }
}

/// Declares one provider of a `WeaveDI.Component`: the property's type is registered with the
/// initial value's expression (or the closure) as its factory.
///
/// ```swift
/// @Provide var clock: any Clock = SystemClock()                 // singleton, the default
/// @Provide(scope: .transient) var formatter: Formatter = Formatter()
/// @Provide(scope: .session, { r in Cart(store: try r.require(Store.self)) }) var cart: Cart
/// ```
///
/// The initial value is not built when the component is made: it is evaluated by the container
/// when an instance is needed (once for a singleton). Reading the property resolves its type
/// from `Container.live`, as `@Injected var x: T` does.
@propertyWrapper
public struct Provide<Value: Sendable>: Sendable {
    /// The scope it is registered in.
    public let scope: WeaveDI.Scope
    let factory: @Sendable (_ resolver: any Resolver) throws -> Value
    /// Where the property is declared, for the message of a read that stops the program.
    let site: DeclarationSite
    /// What a read reads through: made once, with the component (it takes a lock to find the
    /// lookup for this declaration), so that a read takes none.
    let injected: Injected<Value>

    /// Registers the initial value's expression as the factory of `Value`, in `scope`. `fileID`
    /// and `line` default to the property's declaration, which a read that stops the program names.
    public init(
        wrappedValue: @autoclosure @escaping @Sendable () -> Value, scope: WeaveDI.Scope = .singleton,
        fileID: StaticString = #fileID, line: UInt = #line
    ) {
        self.scope = scope
        site = DeclarationSite(fileID: fileID, line: line)
        injected = Injected(declaredAt: site, wrapper: "@Provide")
        factory = { _ in wrappedValue() }
    }

    /// Registers `factory` for `Value`, in `scope`; it resolves its dependencies through the
    /// resolver it is given (and records them for `checkCycles()`). `fileID` and `line` default to
    /// the property's declaration, which a read that stops the program names.
    public init(
        scope: WeaveDI.Scope = .singleton, fileID: StaticString = #fileID, line: UInt = #line,
        _ factory: @escaping @Sendable (_ resolver: any Resolver) throws -> Value
    ) {
        self.scope = scope
        site = DeclarationSite(fileID: fileID, line: line)
        injected = Injected(declaredAt: site, wrapper: "@Provide")
        self.factory = factory
    }

    /// The provided service, resolved from `Container.live` (a read that cannot resolve it stops
    /// the program with a message naming the type).
    public var wrappedValue: Value { injected.wrappedValue }
}

/// What `Component` finds by reflection: a provider that registers itself.
protocol ProviderRegistration {
    func register(in container: WeaveDI.Container)
}

extension Provide: ProviderRegistration {
    func register(in container: WeaveDI.Container) {
        container.register(Value.self, scope: scope, factory: factory)
    }
}
