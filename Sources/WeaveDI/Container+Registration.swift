extension WeaveDI.Container {
    /// Registers how to build `type` in `scope` (default: singleton). Registering a type again
    /// replaces the earlier registration (its cached singleton is dropped) and logs it.
    ///
    /// `T` is `Sendable`, here and wherever the container takes or hands out a type: one instance
    /// is shared by every thread that resolves it.
    public func register<T: Sendable>(
        _ type: T.Type, scope: WeaveDI.Scope = .singleton,
        factory: @escaping @Sendable () throws -> T
    ) {
        let slot = TypeSlots.shared.slot(for: type)
        install(Entry(type, slot: slot, scope: scope, module: ModuleContext.current, factory: factory))
    }

    /// Registers `type` with a factory that resolves its dependencies through `resolver`
    /// (constructor injection): `container.register(A.self) { r in A(b: try r.require(B.self)) }`.
    public func register<T: Sendable>(
        _ type: T.Type, scope: WeaveDI.Scope = .singleton,
        factory: @escaping @Sendable (_ resolver: any Resolver) throws -> T
    ) {
        let slot = TypeSlots.shared.slot(for: type)
        install(Entry(type, slot: slot, scope: scope, module: ModuleContext.current, factory: factory))
    }

    /// Registers an existing instance as the singleton for `type`. The container hands it out
    /// as it is and never disposes it.
    public func register<T: Sendable>(_ type: T.Type, instance: T) {
        let slot = TypeSlots.shared.slot(for: type)
        install(Entry(type, slot: slot, module: ModuleContext.current, instance: instance))
    }

    /// Removes the registration of `type`; returns whether there was one.
    @discardableResult
    public func unregister<T>(_ type: T.Type) -> Bool {
        let slot = TypeSlots.shared.slot(for: type)
        let removed: Bool = state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: slot) else { return false }
            state.order.removeAll { $0 == slot }
            state.registrationChanges += 1
            state.retired.append(entry)
            _ = table.remove(slot)
            return true
        }
        if removed {
            Generation.bump()
            WeaveDILog.log(.registration, "unregistered \(TypeSlots.shared.logName(ofSlot: slot))")
        }
        return removed
    }

    /// Whether `type` is registered.
    public func isRegistered<T>(_ type: T.Type) -> Bool {
        table.load(TypeSlots.shared.slot(for: type)) != nil
    }

    func install(_ entry: Entry) {
        let (previous, optimized): (Entry?, Bool) = state.withLock { state in
            let old = table.store(entry, at: entry.slot)
            if let old { state.retired.append(old) } else { state.order.append(entry.slot) }
            state.entries[entry.slot] = entry
            state.registrationChanges += 1
            let record = RegistrationRecord(module: entry.module, scope: entry.scope)
            // One lookup: the default subscript's modify works on the slot's list in place.
            state.history[entry.slot, default: []].moveToEnd(record)
            if state.optimized, !state.unoptimized.contains(entry.slot) { state.unoptimized.append(entry.slot) }
            return (old, state.optimized)
        }
        Generation.bump()
        // The registration first, then what becomes of it: a reader of the log sees the type
        // registered before being told it waits to be warmed.
        if let previous {
            WeaveDILog.log(
                .overwrite,
                "\(entry.logName) registered again by module \(entry.module) (\(entry.scope)); it replaces "
                    + "the registration by module \(previous.module) (\(previous.scope))")
        } else {
            WeaveDILog.log(.registration, "registered \(entry.logName) (\(entry.scope), module \(entry.module))")
        }
        if optimized, !BootstrapContext.active {
            WeaveDILog.log(
                .optimization,
                "\(entry.logName) registered outside bootstrap after enableOptimization(): the next bootstrap "
                    + "or enableOptimization() warms it")
        }
    }
}

extension Array where Element == WeaveDI.Container.RegistrationRecord {
    /// `record` last, and nowhere else in the list.
    mutating func moveToEnd(_ record: Element) {
        removeAll { $0 == record }
        append(record)
    }
}
