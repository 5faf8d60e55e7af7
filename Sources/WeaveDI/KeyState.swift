import Synchronization

/// Reads one key's value; what `@Injected(\.key)` calls on every read once it knows its key.
///
/// The common cases (no override ever made in this process, and either no registration of the
/// value's type in `Container.live` with the default for this context already computed, or a
/// registered singleton already built) are `read()`, inlined into the caller and specialized
/// for `Value` there: a few relaxed or acquiring loads and a copy of the value. Everything
/// else goes through `readSlow()`.
///
/// `@unchecked Sendable`: the shared state is in atomics; subclasses keep theirs in atomics
/// and locks.
@usableFromInline
class KeyReader<Value>: @unchecked Sendable {
    /// One cell per `InjectedContext` (by its index): the key's default as a retained
    /// `Box<Value>`, set once each. A raw pointer, so that the atomic has a concrete type and
    /// generic code never instantiates `Atomic<Unmanaged<Box<Value>>?>` at run time.
    @usableFromInline
    let defaults: UnsafeMutablePointer<Atomic<UnsafeRawPointer?>>
    /// The generation at which `Container.live` was last seen to have no registration of the
    /// value's type; while the generation stays, reads go straight to the default.
    @usableFromInline
    let noRegistrationAsOf = Atomic<UInt64>(0)
    /// The box of the key's value when no override is in effect, as of a generation: the built
    /// singleton registered for the value's type in `Container.live`, or, with none registered,
    /// the key's default for the context then current (a change of context starts a generation).
    @usableFromInline
    let answer = BoxCache()
    /// `Generation.counter`, kept here: see `Generation`.
    @usableFromInline
    let generationCounter = Generation.counter

    init() {
        defaults = .allocate(capacity: InjectedContext.allCases.count)
        for i in 0..<InjectedContext.allCases.count { (defaults + i).initialize(to: Atomic(nil)) }
    }

    deinit {
        for i in 0..<InjectedContext.allCases.count {
            if let raw = defaults[i].load(ordering: .acquiring) { Unmanaged<Box<Value>>.fromOpaque(raw).release() }
        }
        defaults.deinitialize(count: InjectedContext.allCases.count)
        defaults.deallocate()
    }

    /// The key's value here: override, registration or default.
    @inlinable @inline(__always)
    final func read() -> Value {
        // One load for both: no override ever made (the generation's bit), and the generation.
        let generation = self.generation
        if generation & Generation.overridesUsed == 0, let raw = box(at: generation) {
            return Unmanaged<Box<Value>>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.value }
        }
        return readSlow()
    }

    /// The box of the key's value as of `generation` (the current one) when no override is in
    /// effect, if known: the built singleton registered for its type, or its default for this
    /// context.
    @inlinable @inline(__always)
    final func box(at generation: UInt64) -> UnsafeRawPointer? {
        answer.load(at: generation)
    }

    /// The current generation (`Generation.current`, through `generationCounter`).
    @inlinable @inline(__always)
    final var generation: UInt64 { generationCounter.pointee.load(ordering: .acquiring) }

    /// `read()` in full.
    @usableFromInline
    func readSlow() -> Value { fatalError("abstract") }
}

/// The process-wide state of one `InjectedKey`: its cached defaults (one per context) and what
/// it last learned about registrations of its value's type. Created once per key, never freed.
final class KeyState<K: InjectedKey>: KeyReader<K.Value>, @unchecked Sendable {
    let slot: Int
    let valueSlot: Int

    init(slot: Int) {
        self.slot = slot
        valueSlot = TypeSlots.shared.slot(for: K.Value.self)
        super.init()
    }

    override func readSlow() -> K.Value {
        // With no override ever made, `read()` looked in the cache already.
        let generation = self.generation
        if generation & Generation.overridesUsed != 0 {
            if let node = Overrides.current, let box = node.boxAddress(for: slot) {
                return unbox(box, as: K.Value.self)  // `node` keeps the box alive
            }
            // Not overridden here: the answer, when known (as `read()` takes it before any override).
            if let raw = box(at: generation) { return unbox(raw, as: K.Value.self) }
        }
        return resolved()
    }

    /// The value without overrides: a registration of the value's type, else the default.
    func resolved() -> K.Value {
        let generation = Generation.current
        if noRegistrationAsOf.load(ordering: .relaxed) != generation {
            let container = WeaveDI.Container.live
            if container.table.load(valueSlot) != nil {
                do {
                    let value = try container.require(K.Value.self)
                    answer.store(singletonOf: valueSlot, in: container, at: generation)
                    return value
                } catch {
                    readDefault(because: error, in: container)
                    return defaultValue()
                }
            }
            noRegistrationAsOf.store(generation, ordering: .relaxed)
        }
        // Nothing registered as of `generation`: the default of the context current then is the
        // answer while it lasts (read after the generation: a change of context bumps it).
        let context = InjectedContext.current
        let value = defaultValue(in: context)
        if let raw = defaults[Int(context.index)].load(ordering: .acquiring) { answer.store(raw, at: generation) }
        return value
    }

    /// Set once a read found no active session or request for the value's type and said so.
    private let noActiveScopeLogged = Atomic<Bool>(false)

    /// Logs why a read gets the key's default instead of the registration of its value's type.
    /// No active session or request for it (or the registration gone since it was seen) is what
    /// the default is for: a diagnostic, once per key. Anything else (a failed factory, a cycle,
    /// a missing dependency, a scope mismatch) is an error, every time.
    @inline(never)
    private func readDefault(because error: ResolutionError, in container: WeaveDI.Container) {
        switch error {
        case .notRegistered where error.path.isEmpty, .noActiveScope:
            guard !noActiveScopeLogged.exchange(true, ordering: .relaxed) else { return }
            WeaveDILog.log(
                .diagnostic, subsystem: "injected",
                "\(TypeSlots.shared.logName(ofSlot: slot)) reads the key's default: \(noActiveScope(error, in: container)) "
                    + "(said once for this key)")
        default:
            WeaveDILog.log(.error, subsystem: "injected", registrationFailed(error, in: container))
            container.keptDefault(key: slot, valueSlot: valueSlot, error: error)
            if let collector = ResolutionStack.current.state.pointee.validation {
                collector.fellBack(key: slot, valueSlot: valueSlot, error: error, in: container)
            }
        }
    }

    /// `error`, or, for a `noActiveScope` while another container's session or request is in
    /// effect (which `Container.live`, the container every key reads, does not use), the error
    /// told as that.
    private func noActiveScope(_ error: ResolutionError, in container: WeaveDI.Container) -> String {
        container.noActiveScopeElsewhere(
            error, asked: K.Value.self, name: WeaveDI.Container.liveName, role: ", the container the key reads")
            ?? error.description
    }

    /// Why the key's default is read instead of the registration of its value's type. Read while
    /// that registration is being built on this thread (its factory, or one it needs, reads the
    /// key), it cannot give the value it is building: a cycle, said as one through the key.
    @inline(never)
    private func registrationFailed(_ error: ResolutionError, in container: WeaveDI.Container) -> String {
        let key = TypeSlots.shared.logName(ofSlot: slot)
        let stack = ResolutionStack.current
        guard case .cycle = error, let start = stack.index(of: valueSlot, in: container.id) else {
            return "\(key): the registration of \(TypeSlots.shared.logName(ofSlot: valueSlot)) failed (\(error)); "
                + "using the key's default"
        }
        let names = ResolutionStack.names(of: stack.frames[start...].map(\.slot) + [valueSlot])
        let building = names.last!
        let path = names.dropLast() + [key, building]
        return "\(key) was read while building \(building), the registration of its value's type, which cannot "
            + "give the value it is building (\(path.joined(separator: " -> "))); using the key's default. To build "
            + "on the default on purpose, use \(key).liveValue in the factory; otherwise read the key at use, "
            + "not in the factory"
    }

    /// The key's default for `context` (the current one), computed once per context, without the
    /// overrides in effect here: it is cached for the whole process, so an override made where
    /// it happens to be computed first must not end up in it.
    func defaultValue(in context: InjectedContext = .current) -> K.Value {
        let cell = Int(context.index)
        if let raw = defaults[cell].load(ordering: .acquiring) {
            return Unmanaged<Box<K.Value>>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.value }
        }
        let stack = ResolutionStack.current
        if let start = stack.index(of: slot, in: 0) {
            let path = ResolutionStack.names(of: stack.frames[start...].map(\.slot)) + ["\(K.self)"]
            needEachOther(path, acrossThreads: false)
        }
        if stack.state.pointee.count >= ResolutionError.maximumDepth { tooDeep(stack) }
        let gate = BuildGates.Key(object: ObjectIdentifier(self), cell: cell)
        let mine = BuildGates.shared.enter(
            gate, slot: slot, done: { defaults[cell].load(ordering: .acquiring) != nil },
            deadlock: { needEachOther($0.path, acrossThreads: true) })
        guard mine else {
            return Unmanaged<Box<K.Value>>.fromOpaque(defaults[cell].load(ordering: .acquiring).unsafelyUnwrapped)
                ._withUnsafeGuaranteedRef { $0.value }
        }
        defer { BuildGates.shared.leave(gate) }
        // Kept for the process, as a singleton is: what it resolves is checked as a singleton's
        // factory's is (a session- or request-scoped service is a `scopeMismatch`).
        stack.push(.init(containerID: 0, slot: slot, scope: .singleton, owner: nil))
        defer { stack.pop() }
        // Whether this key's own `testValue` (`previewValue`) is the protocol extension's: it
        // notes so on this thread. Cleared first, and put back after, so that a note left by
        // another key (one whose default this one reads, which puts back the note it found, or a
        // direct read of `X.testValue` elsewhere) is never taken for this key's. A note of
        // another key found after is a direct read of its `testValue` by this default.
        let state = stack.state
        let standInBefore = state.pointee.liveValueStandIn
        state.pointee.liveValueStandIn = nil
        let value: K.Value = Overrides.withoutOverrides {
            switch context {
            case .live: K.liveValue
            case .test: K.testValue
            case .preview: K.previewValue
            }
        }
        let standIn = state.pointee.liveValueStandIn
        state.pointee.liveValueStandIn = standInBefore
        defaults[cell].store(UnsafeRawPointer(Unmanaged.passRetained(Box(value)).toOpaque()), ordering: .releasing)
        if context != .live, let standIn {
            if standIn.key == K.self, standIn.context == context {
                LiveValueFallbacks.found(key: K.self, value: K.Value.self, in: context)
            } else {
                // Another key's `testValue` (`previewValue`), the protocol extension's, read
                // directly by this default (`static var testValue: T { OtherKey.testValue }`):
                // that key is the one without a value of its own.
                LiveValueFallbacks.found(
                    key: standIn.key, value: standIn.value, in: standIn.context, readBy: (K.self, context))
            }
        }
        return value
    }

    /// Stops the process: computing this default would open one build too many on this thread
    /// (defaults that read one another without end would overflow the stack), and
    /// `liveValue` cannot throw.
    @inline(never)
    private func tooDeep(_ stack: ResolutionStack) -> Never {
        fatalError("WeaveDI: \(K.self): \(stack.tooDeep(at: slot)) (an InjectedKey default cannot throw)")
    }

    /// Stops the process: the defaults (and registrations) on `path` need each other, so none
    /// can be computed, and `liveValue` cannot throw. `acrossThreads`: two threads were
    /// building them at once, each waiting for the other.
    private func needEachOther(_ path: [String], acrossThreads: Bool) -> Never {
        let what = acrossThreads
            ? "these InjectedKey defaults and services need each other (two threads were building them at once, "
                + "each waiting for the other)"
            : "the defaults of these InjectedKeys need each other"
        fatalError("WeaveDI: \(what): \(path.joined(separator: " -> ")); "
            + "break the cycle by reading one of them lazily (at use, not in liveValue)")
    }
}

/// The `KeyState` of every key, by the key type's slot.
@usableFromInline
enum KeyStates {
    @usableFromInline
    static let states = PermanentObjects()

    /// The reader of `key`, if its state was made (unretained: states are never freed).
    @inlinable @inline(__always)
    static func existingReader<K: InjectedKey>(for key: K.Type) -> Unmanaged<KeyReader<K.Value>>? {
        guard let object = states.existing(at: TypeSlots.shared.slot(for: key)) else { return nil }
        return Unmanaged.fromOpaque(object.toOpaque())
    }

    static func state<K: InjectedKey>(for key: K.Type) -> KeyState<K> {
        let slot = TypeSlots.shared.slot(for: key)
        return states.object(at: slot, as: KeyState<K>.self) { KeyState<K>(slot: slot) }
    }
}
