extension WeaveDI.Container {
    /// The instance for `type`, or nil when it cannot be resolved (the reason is logged as an
    /// error: not registered, a cycle, a scope mismatch, no active scope, a failed factory).
    @inlinable
    public func resolve<T: Sendable>(_ type: T.Type) -> T? {
        let slot = typeSlots.slot(for: type)
        if let box = table.singletonBox(slot) { return unbox(box, as: T.self) }
        // Wrapped in the optional here, where `T` is known, rather than in generic code.
        do {
            return try requireSlow(type, slot: slot, explicit: nil, logged: true)
        } catch {
            resolveFailed(type, error)
            return nil
        }
    }

    /// The instance for `type`; throws `ResolutionError` saying why it cannot be resolved.
    @inlinable @inline(__always)
    public func require<T: Sendable>(_ type: T.Type) throws(ResolutionError) -> T {
        try requireSendable(type)
    }

    /// `require` for internal callers whose `T` is `Sendable` where the compiler cannot see it
    /// (a lookup made by `Injected.init()`, whose `Value` is `Sendable`, for `Value` or the
    /// `Wrapped` of `Value`), and `require`'s body. Never call it with any other type.
    /// `logged`: as `requireSlow`'s.
    @inlinable @inline(__always)
    func requireSendable<T>(_ type: T.Type, logged: Bool = false) throws(ResolutionError) -> T {
        let slot = typeSlots.slot(for: type)
        if let box = table.singletonBox(slot) { return unbox(box, as: T.self) }
        return try requireSlow(type, slot: slot, explicit: nil, logged: logged)
    }

    /// Logs a singleton built by a `dispose()` that `releaseAll` runs: it outlives the release.
    @inline(never)
    func builtWhileReleasing(_ entry: Entry) {
        WeaveDILog.log(
            .error,
            "\(entry.logName) was built by a dispose() during releaseAll(), after the singletons were released: "
                + "it stays built and this releaseAll() does not dispose it; let dispose() use what its instance holds "
                + "instead of resolving \(entry.logName)")
    }

    /// Logs a singleton whose build straddled a `releaseAll()` or an `evict`: not cached.
    @inline(never)
    func builtAcrossRelease(_ entry: Entry) {
        WeaveDILog.log(
            .diagnostic,
            "\(entry.logName) was being built when releaseAll() or evict began: this instance goes to its resolve only, "
                + "not cached (it may hold what was released); the next resolve builds it again")
    }

    /// Logs why `resolve` returns nil. (A type not registered is explained only if the line is
    /// written: see `requireSlow`.) No active scope while another container's session or request
    /// is in effect is said as that (`noActiveScopeElsewhere`).
    @usableFromInline
    func resolveFailed(_ type: Any.Type, _ error: ResolutionError) {
        WeaveDILog.log(.error, "resolve(\(TypeSlots.shared.logName(of: type))) returned nil: \(failure(error, resolving: type))")
    }

    /// What `resolveFailed` says of `error`.
    @inline(never)
    private func failure(_ error: ResolutionError, resolving type: Any.Type) -> String {
        let name = self === WeaveDI.Container.live ? Self.liveName : "this container"
        return noActiveScopeElsewhere(error, asked: type, name: name) ?? explained(error, for: type).description
    }

    /// `logged`: the caller only logs the error (`resolve`), and passes it through
    /// `explained(_:for:)` inside the log line's message. For a type not registered it then gets
    /// `ResolutionError.unexplained`, which costs nothing, rather than `notRegistered(type)`,
    /// whose suggestions compare the name with every registered type's: made only if the line is
    /// written, at once, on this thread (so from the registrations of the failure).
    @usableFromInline @inline(__always)
    func requireSlow<T>(_ type: T.Type, slot: Int, explicit: ScopeOwner?, logged: Bool = false) throws(ResolutionError) -> T {
        guard let unmanaged = table.load(slot) else { throw logged ? ResolutionError.unexplained : notRegistered(type) }
        // Safe unretained: entries live as long as their container (retired, never freed early).
        if unmanaged._withUnsafeGuaranteedRef({ $0.scope == .transient }) {
            // The transient path retains neither the entry nor the thread's stack.
            let stack = ResolutionStack.current
            return try build(unmanaged, as: type, owner: explicit ?? owner(in: stack), stack: stack)
        }
        return try produce(unmanaged.takeUnretainedValue(), as: type, explicit: explicit)
    }

    /// Resolves through a session or request; `logged`: as `requireSlow`'s.
    func requireScoped<T>(_ type: T.Type, explicit: ScopeOwner, logged: Bool = false) throws(ResolutionError) -> T {
        let slot = typeSlots.slot(for: type)
        if let box = table.singletonBox(slot) { return unbox(box, as: T.self) }
        return try requireSlow(type, slot: slot, explicit: explicit, logged: logged)
    }

    /// `error`, or for `ResolutionError.unexplained` (a type not registered, thrown to a
    /// caller that only logs it) the `notRegistered` error that explains it, made now. Call it
    /// inside the log line's message, which is built only if the line is written.
    func explained(_ error: ResolutionError, for type: Any.Type) -> ResolutionError {
        error.isUnexplained ? notRegistered(type) : error
    }

    /// Returns the instance `entry` stands for in the right scope, building it if needed.
    func produce<T>(_ entry: Entry, as type: T.Type, explicit: ScopeOwner?) throws(ResolutionError) -> T {
        if entry.scope == .singleton, let box = entry.instance.load(ordering: .acquiring) { return unbox(box, as: T.self) }
        let stack = ResolutionStack.current
        if entry.scope != .transient { recordAsDependency(entry.slot, stack) }
        if entry.scope != .transient, let outer = stack.nearestScoped, entry.scope.lifetime < outer.scope.lifetime {
            throw .scopeMismatch(
                outer: outer.builtName(among: [entry.slot], on: stack), outerScope: outer.scope,
                inner: entry.messageName, innerScope: entry.scope)
        }
        let owner = explicit ?? owner(in: stack)
        switch entry.scope {
        case .transient:
            return try build(.passUnretained(entry), as: type, owner: owner, stack: stack)
        case .singleton:
            // Not built (looked at first thing): a cycle on this thread is caught before the
            // gate, which this thread may hold already.
            if let start = stack.index(of: entry.slot, in: id) { throw stack.cycle(from: start, to: entry.slot) }
            let gate = BuildGates.Key(object: ObjectIdentifier(entry), cell: -1)
            // Until this thread builds it or finds it built. (Nothing unpublishes an instance:
            // `releaseAll` and re-registration put in a new entry; the loop costs nothing.)
            while true {
                if let box = entry.instance.load(ordering: .acquiring) { return unbox(box, as: T.self) }
                guard try BuildGates.shared.enter(
                    gate, slot: entry.slot,
                    done: { () throws(ResolutionError) -> Bool in entry.instance.load(ordering: .acquiring) != nil },
                    deadlock: { .cycle(path: $0.path) })
                else { continue }
                defer { BuildGates.shared.leave(gate) }
                let releasesBefore = releases.load(ordering: .relaxed)
                // What this build requires and the key defaults it keeps, told to the entry with
                // the instance (`validate()` reads them once it reads the instance).
                let record = SingletonBuild(containerID: id, slot: entry.slot)
                let outerRecord = stack.state.pointee.singletonBuild
                stack.state.pointee.singletonBuild = record
                let value: T
                do {
                    defer { stack.state.pointee.singletonBuild = outerRecord }
                    value = try build(.passUnretained(entry), as: type, owner: nil, stack: stack, singleton: record)
                }
                keep(record, in: entry)
                let disposable = entry.disposable(value)
                // Published and listed at once: an `evict` (which looks under this lock) sees
                // both or neither, so it never takes an instance without its disposal. Under the
                // lock too, the count of releases: a `releaseAll` or an `evict` that began during
                // the build (each swaps built singletons out under this lock) may have disposed
                // what the factory took, so the instance is its caller's only, never cached.
                let cached: Bool = state.withLock { state in
                    let cached = releases.load(ordering: .relaxed) == releasesBefore
                    if cached { entry.publish(value) }
                    if let disposable {
                        // Not published: listed under no entry, so that no `evict` takes it.
                        let owner = cached ? ObjectIdentifier(entry) : ObjectIdentifier(Never.self)
                        state.disposables.append((owner, disposable))
                    }
                    return cached
                }
                if !cached { builtAcrossRelease(entry) }
                if ReleaseContext.disposing == id { builtWhileReleasing(entry) }
                return value
            }
        case .session, .request:
            let target = try scopeTarget(for: entry, owner: owner)
            let instances = target.instances
            let gate = BuildGates.Key(object: ObjectIdentifier(instances), cell: entry.slot)
            while true {
                let found = try instances.box(entry.slot, typeName: entry.messageName)
                if let box = found.box { return unsafeDowncast(box, to: Box<T>.self).value }
                // Not built in this scope (another scope's instance is no cycle): a cycle on this
                // thread is caught before the gate, which this thread may hold already.
                if let start = stack.index(of: entry.slot, in: id) { throw stack.cycle(from: start, to: entry.slot) }
                // A scope's instances are stored only inside their gates: while its change count
                // is what the lookup saw, nothing was built meanwhile. Built, or closed, the loop
                // looks again (outside the gates' lock, where the error may spell a type).
                guard try BuildGates.shared.enter(
                    gate, slot: entry.slot,
                    done: { () throws(ResolutionError) -> Bool in
                        instances.changes.load(ordering: .relaxed) != found.changes && instances.holdsOrIsClosed(entry.slot)
                    },
                    deadlock: { .cycle(path: $0.path) })
                else { continue }
                defer { BuildGates.shared.leave(gate) }
                let value = try build(.passUnretained(entry), as: type, owner: target, stack: stack)
                try instances.store(
                    entry.makeBox(value), disposable: entry.disposable(value), slot: entry.slot, typeName: entry.messageName)
                return value
            }
        }
    }

    /// The session or request a resolution starting here happens in (`ResolutionStack.owner`),
    /// if it is one of this container's: another container's session, current or building, is
    /// nothing to this one (its transients resolve from this container, its scoped services find
    /// no active scope).
    @inline(__always)
    func owner(in stack: ResolutionStack) -> ScopeOwner? {
        guard let owner = stack.owner, owner.container === self else { return nil }
        return owner
    }

    /// The session or request that holds instances of `entry`, from the owner in effect
    /// (`makeFresh` asks it too, for the same `noActiveScope`).
    func scopeTarget(for entry: Entry, owner: ScopeOwner?) throws(ResolutionError) -> ScopeOwner {
        guard let owner, owner.container === self else {
            throw .noActiveScope(type: entry.messageName, scope: entry.scope)
        }
        switch (entry.scope, owner) {
        case (.session, .session), (.request, .request): return owner
        case let (.session, .request(request)):
            // Through a request (current, or building), which must be open, as for `request.require`.
            try request.instances.ensureOpen(for: entry.messageName)
            return .session(request.session)
        default: throw .noActiveScope(type: entry.messageName, scope: entry.scope)
        }
    }

    /// Runs `entry`'s factory with cycle and depth checks, inside a frame on this thread's stack.
    ///
    /// Always inlined, and calling the factory itself: a five-level graph of transients nests
    /// five builds, and each call level in a build is a return address more than the processor
    /// predicts (its return stack holds 16 to 32). The entry is passed unretained: retaining and
    /// releasing it was a large part of a transient build. The caller keeps it alive (an entry
    /// lives as long as its container), and the body uses it as a guaranteed reference: with an
    /// `unowned(unsafe)` local instead, the optimizer still retained and released it once per
    /// build, around the copy of `owner`.
    ///
    /// `singleton`: of `produce`'s gated build of a singleton, what it records of this build
    /// (the factory is handed an `EdgeRecorder` that tells it the dependencies it requires).
    @inline(__always)
    func build<T>(
        _ entryRef: Unmanaged<Entry>, as type: T.Type, owner: ScopeOwner?, stack: ResolutionStack,
        singleton: SingletonBuild? = nil
    ) throws(ResolutionError) -> T {
        // `_withUnsafeGuaranteedRef` rethrows untyped errors; the body throws only `ResolutionError`.
        do {
            return try entryRef._withUnsafeGuaranteedRef { entry throws(ResolutionError) -> T in
                let slot = entry.slot
                // (`produce` has recorded the others.)
                if entry.scope == .transient { recordAsDependency(slot, stack) }
                if let start = stack.index(of: slot, in: id) { throw stack.cycle(from: start, to: slot) }
                if stack.state.pointee.count >= ResolutionError.maximumDepth { throw stack.tooDeep(at: slot) }
                // A plain load first: past the first builds, no read-modify-write (and no cache
                // line bouncing between threads that build the same transient).
                let records = entry.builds.load(ordering: .relaxed) < EdgeRecorder.recordedBuilds
                    && entry.builds.add(1, ordering: .relaxed).newValue <= EdgeRecorder.recordedBuilds
                stack.push(.init(containerID: id, slot: slot, scope: entry.scope, owner: owner, records: records))
                defer { stack.pop() }
                do {
                    if records || singleton != nil {
                        return try entry.callFactory(
                            as: T.self,
                            EdgeRecorder(base: owner?.resolver ?? self, parent: entry, recordsEdges: records, build: singleton))
                    } else if let owner {
                        return try entry.callFactory(as: T.self, owner.resolver)
                    } else {
                        return try entry.callFactory(as: T.self, self)
                    }
                } catch {
                    throw ResolutionError.thrownByFactory(error, slot: slot)
                }
            }
        } catch {
            throw error as! ResolutionError
        }
    }

    /// Records `slot` as a dependency of the build open on this thread, if that build's factory
    /// records its edges: however the factory asked for it (its resolver, `@Injected`,
    /// `@Factory`, a key whose value or default needs it, a call on the container), and before
    /// any cycle check, so that a cycle stopped here is in the graph `checkCycles()` reads.
    @inline(__always)
    func recordAsDependency(_ slot: Int, _ stack: ResolutionStack) {
        if let parent = stack.recordingBuild(in: id) {
            table.load(parent)?._withUnsafeGuaranteedRef { $0.recordEdge(to: slot) }
        }
    }

    /// The error for `type`, not registered here. Its suggestions are registered types of
    /// similar names that could be what was meant: related to `type` (`TypeRelation`: a
    /// protocol and a type that conforms to it, a class and a subclass), or where the run time
    /// cannot tell; never an unrelated type, nor one being built on this thread (asking for it
    /// there would be a cycle). A registered type of the same name is named qualified in the
    /// suggestions, and so is `type` then.
    ///
    /// Made for thousands of registrations: every name is spelled once per process and read
    /// under one lock for the batch (`TypeSlots.spelledNames()`), with its lowercased form; a
    /// type that cannot be related to `type` by its kind alone (a struct against another struct,
    /// an enum or a class) is set aside before its name is compared; and of the rest, relatedness
    /// is asked only of a name that would be among the three closest so far
    /// (`NameSimilarity.closest`).
    func notRegistered(_ type: Any.Type) -> ResolutionError {
        let typeSlots = TypeSlots.shared
        let slot = typeSlots.slot(forAny: type)
        let registered = state.withLock { $0.order }
        let frames = ResolutionStack.current.frames
        let building = Set(frames.lazy.filter { $0.containerID == self.id }.map(\.slot))
        // Every name the message may compare or be told apart from, spelled (once per process).
        typeSlots.spellNames(ofSlots: registered + [slot] + frames.map(\.slot))
        let spelled = typeSlots.spelledNames()
        func shortName(_ slot: Int) -> String { spelled.name(ofSlot: slot) ?? "slot \(slot)" }

        // Two of the message's types (the registered ones and `type`) of one name are named
        // qualified (as `TypeSlots.names(ofSlots:)` names them): only a name some other type
        // has can be one.
        var sharing: [String: [Int]] = [:]
        for candidate in registered where spelled.isShared(candidate) {
            sharing[shortName(candidate), default: []].append(candidate)
        }
        if spelled.isShared(slot), !(sharing[shortName(slot)]?.contains(slot) ?? false) {
            sharing[shortName(slot), default: []].append(slot)
        }
        var qualified: [Int: String] = [:]
        for slots in sharing.values where slots.count > 1 {
            for shared in slots { qualified[shared] = typeSlots.qualifiedName(ofSlot: shared) }
        }
        func messageName(_ candidate: Int) -> String { qualified[candidate] ?? shortName(candidate) }

        // The candidates in the order of `registered`, one per name: of two of one name (a
        // qualified name that is also another's name), the later one.
        var superseded: Set<Int> = []
        if !qualified.isEmpty {
            let lengths = Set(qualified.values.map(\.utf8.count))
            var latest: [String: Int] = [:]
            for candidate in registered where !building.contains(candidate) {
                let name = messageName(candidate)
                guard lengths.contains(name.utf8.count) else { continue }
                if let earlier = latest.updateValue(candidate, forKey: name) { superseded.insert(earlier) }
            }
        }
        var pool: [(slot: Int, name: String, compared: NameSimilarity.Compared)] = []
        for candidate in registered where !building.contains(candidate) && !superseded.contains(candidate) {
            // Not related, whatever its name: it would never be suggested.
            if TypeRelation.plainlyUnrelated(spelled.type(ofSlot: candidate), type) { continue }
            if let name = qualified[candidate] {
                pool.append((candidate, name, NameSimilarity.Compared(name)))
            } else {
                let name = shortName(candidate)
                pool.append((candidate, name, spelled.compared(ofSlot: candidate) ?? NameSimilarity.Compared(name)))
            }
        }
        let suggestions = NameSimilarity.closest(
            to: shortName(slot), count: pool.count, name: { pool[$0].name }, compared: { pool[$0].compared },
            keep: { TypeRelation.related(spelled.type(ofSlot: pool[$0].slot), type) != false }
        ).map { pool[$0].name }

        // `type` named as `ResolutionStack.messageName(of:among:)` names it among `registered`:
        // qualified when a build open on this thread or a registered type is another of its name.
        let name = shortName(slot)
        var subject = name
        if spelled.isShared(slot),
            sharing[name].map({ $0.contains { $0 != slot } }) ?? false
                || frames.contains(where: { $0.slot != slot && shortName($0.slot) == name }) {
            subject = typeSlots.qualifiedName(ofSlot: slot)
        }
        return .notRegistered(type: subject, suggestions: suggestions)
    }
}

/// The resolver handed to a factory during its first builds, and to a singleton's build in
/// `produce`: it records which services the factory resolves (the dependency graph, in the
/// first builds), and of a singleton's build which ones it required, then forwards.
final class EdgeRecorder: Resolver {
    /// How many builds of each registration record their edges.
    static let recordedBuilds = 4

    let base: any Resolver
    let parent: Entry
    /// Whether this build records the factory's edges (one of its entry's first builds).
    let recordsEdges: Bool
    /// Of a singleton's gated build, where the dependencies it got from `require` are told.
    let build: SingletonBuild?

    init(base: any Resolver, parent: Entry, recordsEdges: Bool = true, build: SingletonBuild? = nil) {
        self.base = base
        self.parent = parent
        self.recordsEdges = recordsEdges
        self.build = build
    }

    /// An optional dependency: the factory copes without it, so a build of the singleton later
    /// would not fail for it (not told to `build`).
    func resolve<T: Sendable>(_ type: T.Type) -> T? {
        if recordsEdges { parent.recordEdge(to: TypeSlots.shared.slot(for: type)) }
        return base.resolve(type)
    }

    /// A required dependency: told to `build` once it was got (a build without it would throw).
    func require<T: Sendable>(_ type: T.Type) throws(ResolutionError) -> T {
        let slot = TypeSlots.shared.slot(for: type)
        if recordsEdges { parent.recordEdge(to: slot) }
        let value = try base.require(type)
        build?.required.withLock { $0.append(slot) }
        return value
    }
}

/// What a singleton's build in `produce` (inside its gate) found that `validate()` reports of
/// the instance once it reads it instead of building it: the dependencies its factory got from
/// `require` (not those it asked for with `resolve`, which it copes without), and the key reads
/// that kept a key's default. Made, pushed on the building thread's `ResolutionStack` and popped
/// by that build; its contents go to the entry inside the gate, before the instance is
/// published (`Container.keep(_:in:)`).
///
/// `@unchecked Sendable`: `keptDefaults` is used only on the building thread while the
/// (synchronous) factory runs, through the thread's stack; `required` is told by the build's
/// `EdgeRecorder`, which a factory could keep and call later, from anywhere (what it requires
/// then is not of this build: `keep` has read it already).
final class SingletonBuild: @unchecked Sendable {
    /// The singleton's container and slot.
    let containerID: UInt64
    let slot: Int
    /// The slots its factory got from `require`, in order.
    let required = Locked<[Int]>([])
    var keptDefaults: [KeyFallbackCollector.Fallback] = []

    init(containerID: UInt64, slot: Int) {
        self.containerID = containerID
        self.slot = slot
    }
}
