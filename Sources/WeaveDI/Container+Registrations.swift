extension WeaveDI {
    /// One registration as diagnostics see it.
    public struct Registration: Sendable, Hashable {
        /// The registered type, as `String(describing:)` spells it; with its module and enclosing
        /// types (`App.Users.Repo`) when another type the container knows has the same name.
        public let type: String
        /// Its scope.
        public let scope: WeaveDI.Scope
        /// The module that registered it (`main` outside any module).
        public let module: String
        /// The types its factory needed (recorded on its first builds): those it resolved through
        /// its resolver, and those of the same container built while it ran, however it asked for
        /// them (`@Injected`, `@Factory`, a key, a call on the container).
        public let dependencies: [String]
        /// Whether a singleton instance is built.
        public let isBuilt: Bool
    }
}

extension WeaveDI.Container {
    /// Every current registration, in the order the types were first registered.
    public var registrations: [WeaveDI.Registration] {
        let entries = currentEntries()
        let names = reportNames()
        func name(_ slot: Int) -> String { names[slot] ?? TypeSlots.shared.name(ofSlot: slot) }
        return entries.map { entry in
            let dependencies = entry.edges.map(name).sorted()
            return WeaveDI.Registration(
                type: name(entry.slot), scope: entry.scope, module: entry.module,
                dependencies: dependencies, isBuilt: entry.scope == .singleton && entry.hasInstance)
        }
    }
}
