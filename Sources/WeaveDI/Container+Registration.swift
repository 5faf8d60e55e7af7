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
            guard let entry = table.remove(slot) else { return false }
            state.order.removeAll { $0 == slot }
            state.registrationChanges += 1
            state.retired.append(entry)
            // Its registration stays on record for duplicate detection.
            if state.history[slot] == nil { state.history[slot] = [entry.record] }
            return true
        }
        if removed {
            Generation.bump()
            WeaveDILog.log(.registration, "unregistered \(TypeSlots.shared.logName(ofSlot: slot))")
        }
        return removed
    }

    /// The current entry at `slot`, if registered (entries stay allocated while the container
    /// lives: replaced ones are retired, not freed).
    func entry(at slot: Int) -> Entry? {
        table.load(slot)?.takeUnretainedValue()
    }

    /// Whether `type` is registered.
    public func isRegistered<T>(_ type: T.Type) -> Bool {
        table.load(TypeSlots.shared.slot(for: type)) != nil
    }

    func install(_ entry: Entry) {
        let (previous, optimized): (Entry?, Bool) = state.withLock { state in
            let old = table.store(entry, at: entry.slot)
            if let old { state.retired.append(old) } else { state.order.append(entry.slot) }
            state.registrationChanges += 1
            // A first registration is on record as the entry itself; a second starts the slot's
            // list with the first (or the list is there already, from a removal). One lookup:
            // the default subscript's modify works on the list in place.
            if let old {
                state.history[entry.slot, default: [old.record]].moveToEnd(entry.record)
            } else if !state.history.isEmpty, state.history[entry.slot] != nil {
                state.history[entry.slot]!.moveToEnd(entry.record)
            }
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
