extension WeaveDI {
    /// A feature's registrations, grouped so that every registration knows which module made it
    /// (diagnostics report duplicate providers by module).
    ///
    /// ```swift
    /// struct NetworkModule: WeaveDI.Module {
    ///     func register(in container: WeaveDI.Container) async {
    ///         container.register(NetworkService.self) { LiveNetwork() }
    ///     }
    /// }
    /// await WeaveDI.Container.bootstrap(modules: [NetworkModule(), UserModule()])
    /// ```
    ///
    /// Registrations made outside any module are labelled `main`.
    public protocol Module: Sendable {
        /// The module's name in diagnostics; defaults to the type's name.
        var name: String { get }
        /// Registers the module's services.
        func register(in container: WeaveDI.Container) async
    }
}

extension WeaveDI.Module {
    /// The type's name, e.g. `NetworkModule`.
    public var name: String { String(describing: Self.self) }
}
