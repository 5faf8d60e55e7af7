extension WeaveDI {
    /// What building every registration once found (`Container.validate()`).
    public struct ValidationReport: Sendable, Equatable {
        /// Registrations built without error.
        public var built: [String]
        /// Registrations that could not be built, with the reason, and those whose build read an
        /// `InjectedKey` whose registration failed, and so kept the key's default.
        public var failures: [Failure]
        /// Dependency cycles in the recorded graph (see `Container.checkCycles()`).
        public var cycles: [[String]]
        /// Duplicate providers, scope drift and scope mismatches (see `Container.diagnoseComponents()`).
        public var componentIssues: [ComponentIssue]

        /// One registration that failed to build; printed as the bootstrap's log says it,
        /// `NodeB (singleton) failed to build: <reason>` (the reason as it is, not escaped).
        public struct Failure: Sendable, Equatable, CustomStringConvertible {
            /// The registered type.
            public var type: String
            /// Its scope.
            public var scope: WeaveDI.Scope
            /// Why it failed (`ResolutionError.description`; for a build that kept a key's
            /// default, the key, the registration that failed and its error).
            public var reason: String
            /// Whether the reason is a scope mismatch.
            public var isScopeMismatch: Bool
            /// Whether the reason is a cycle.
            public var isCycle: Bool

            public var description: String { "\(type) (\(scope)) failed to build: \(reason)" }
        }

        /// True when nothing failed and no cycles were found.
        public var isValid: Bool { failures.isEmpty && cycles.isEmpty }
    }
}

extension WeaveDI.ValidationReport.Failure {
    /// A failure for `reason`, its flags from `error` (its type is named later, by the report).
    init(scope: WeaveDI.Scope, reason: String, error: ResolutionError) {
        var mismatch = false, cycle = false
        if case .scopeMismatch = error { mismatch = true }
        if case .cycle = error { cycle = true }
        self.init(type: "", scope: scope, reason: reason, isScopeMismatch: mismatch, isCycle: cycle)
    }
}

extension WeaveDI.Container {
    /// Builds every registration once, each in its own scope: singletons are built (and stay
    /// built), session- and request-scoped ones inside a probe session and request that are
    /// then closed (disposing what they built), transients once. Building records the dependency
    /// graph; the report adds its cycles and the component issues. A build that reads a key
    /// whose registration fails (and so keeps the key's default) is a failure of that build.
    @discardableResult
    public func validate() async -> WeaveDI.ValidationReport {
        await validate(logged: true)
    }

    /// `validate()`, saying what it does (the probe session, the summary) only when `logged`:
    /// the `container.graph` health check runs it every round, and stays quiet unless health
    /// logging is on.
    func validate(logged: Bool) async -> WeaveDI.ValidationReport {
        let pass = validationPass(currentEntries(), logged: logged)
        await pass.closeProbe(logged: logged)
        return finish(pass, logged: logged)
    }

    /// What the `container.graph` check remembers between its rounds: the registrations it
    /// built and those that failed, as of a count of registration changes of one container
    /// (the check of `Container.live` looks at another one once `live` is replaced).
    final class GraphCheckMemory: Sendable {
        struct Validated {
            /// The `id` of the container validated.
            var container: UInt64
            var changes: UInt64
            var built: Set<Int>
            var failures: [(slot: Int, failure: WeaveDI.ValidationReport.Failure)]
            /// The singletons built with a key's default in place of a failed registration, by
            /// slot: their entries, which keep that default while they keep their instance.
            var keptDefaults: [Int: ObjectIdentifier] = [:]
        }
        let validated = Locked<Validated?>(nil)
    }

    /// The `container.graph` check's round: `validate(logged:)` the first time and whenever a
    /// registration was added, replaced or removed since; otherwise it builds again only the
    /// registrations that failed (to see them recover), and takes the others as they were.
    /// The cycles and component issues are read afresh every round (they build nothing). So a
    /// session-scoped service's factory does not run every round, nor a transient's.
    func validateForHealth(_ memory: GraphCheckMemory, logged: Bool) async -> WeaveDI.ValidationReport {
        let (changes, entries) = state.withLock { state in
            (state.registrationChanges, state.order.compactMap(entry(at:)))
        }
        guard let known = memory.validated.withLock({ $0 }), known.container == id, known.changes == changes else {
            let pass = validationPass(entries, logged: logged)
            await pass.closeProbe(logged: logged)
            memory.validated.withLock {
                $0 = .init(container: id, changes: changes, built: Set(pass.built), failures: pass.failures, keptDefaults: pass.keptDefaults)
            }
            return finish(pass, logged: logged)
        }
        // A singleton that kept a key's default still holds it (building it again would read
        // the instance, not the key): its failure stands until it is released or replaced.
        let kept = known.keptDefaults.filter { slot, entry in
            self.entry(at: slot).map { ObjectIdentifier($0) == entry && $0.hasInstance } ?? false
        }
        let failed = Set(known.failures.map(\.slot)).subtracting(kept.keys)
        var pass = validationPass(entries.filter { failed.contains($0.slot) }, logged: logged)
        await pass.closeProbe(logged: logged)
        pass.failures += known.failures.filter { kept[$0.slot] != nil }
        pass.keptDefaults.merge(kept) { new, _ in new }
        let built = known.built.union(pass.built).subtracting(pass.failures.map(\.slot))
        memory.validated.withLock { validated in
            // Kept only if no registration changed meanwhile (a newer round would validate again).
            guard validated?.container == id, validated?.changes == changes else { return }
            validated = .init(container: id, changes: changes, built: built, failures: pass.failures, keptDefaults: pass.keptDefaults)
        }
        pass.built = entries.map(\.slot).filter(built.contains)
        pass.count = entries.count
        return finish(pass, logged: logged, rebuilt: failed.count)
    }

    /// The registrations, in registration order.
    func currentEntries() -> [Entry] {
        state.withLock { state in state.order.compactMap(entry(at:)) }
    }

    /// What building a set of registrations found, with the probe session still open.
    struct ValidationPass {
        var count: Int
        /// The slots of the registrations built.
        var built: [Int] = []
        /// The registrations that failed, by slot; their names are filled in by `finish`.
        var failures: [(slot: Int, failure: WeaveDI.ValidationReport.Failure)] = []
        /// The singletons built with a key's default in place of a failed registration (see
        /// `GraphCheckMemory.Validated.keptDefaults`).
        var keptDefaults: [Int: ObjectIdentifier] = [:]
        /// None when there was nothing to build.
        let probe: Session?

        /// Closes the probe session, disposing what it built; quiet unless `logged`, as its
        /// builds were: the lines of those disposals are the validation's too.
        func closeProbe(logged: Bool) async {
            guard let probe else { return }
            if logged { await probe.close() } else { await WeaveDILog.$quietedTask.withValue(true) { await probe.close() } }
        }
    }

    /// Builds `entries` once each, in a probe session and request for the scoped ones; the
    /// caller closes `probe`.
    func validationPass(_ entries: [Entry], logged: Bool) -> ValidationPass {
        if entries.isEmpty { return ValidationPass(count: 0, probe: nil) }
        let session = openSession(id: "weavedi-validation", attributes: ["purpose": "validation"], logged: logged)
        let request = session.openRequest(id: "weavedi-validation")
        var pass = ValidationPass(count: entries.count, probe: session)
        let collector = KeyFallbackCollector(containerID: id)
        // Singletons built before: read, not built, so what their build found is told from it.
        let builtBefore = Set(entries.lazy.filter { $0.scope == .singleton && !$0.isProvidedInstance && $0.hasInstance }
            .map(\.slot))
        for entry in entries {
            collector.validating = (entry.slot, entry.scope)
            let owner: ScopeOwner? = switch entry.scope {
            case .singleton: nil
            case .session: .session(session)
            case .request, .transient: .request(request)
            }
            do {
                // Quiet unless logged: the lines of the factories it runs (a resolve that finds
                // nothing) are the validation's.
                let result = ResolutionStack.collectingKeyFallbacks(into: collector) {
                    ResolutionStack.quietly(!logged) { () -> Result<Any, ResolutionError> in
                        do throws(ResolutionError) { return .success(try entry.resolveErased(in: self, owner: owner)) } catch {
                            return .failure(error)
                        }
                    }
                }
                _ = try result.get()
                let prior = builtBefore.contains(entry.slot) ? priorBuildFailures(of: entry) : []
                if prior.isEmpty {
                    pass.built.append(entry.slot)
                } else {
                    pass.failures += prior.map { (entry.slot, $0) }
                    if !entry.keptDefaults.isEmpty { pass.keptDefaults[entry.slot] = ObjectIdentifier(entry) }
                }
            } catch {
                pass.failures.append((entry.slot, .init(scope: entry.scope, reason: error.description, error: error)))
            }
        }
        // A build that kept a key's default in place of a failed registration is a failure,
        // whichever validated build ran it (its own, or one that needed it).
        for fallback in collector.fallbacks {
            pass.failures.append((fallback.slot, .init(scope: fallback.scope, reason: fallback.reason, error: fallback.error)))
        }
        let failed = Set(collector.fallbacks.map(\.slot))
        pass.built.removeAll { failed.contains($0) }
        for fallback in collector.fallbacks where fallback.scope == .singleton {
            if let entry = entry(at: fallback.slot) { pass.keptDefaults[fallback.slot] = ObjectIdentifier(entry) }
        }
        return pass
    }

    /// Gives the singleton `entry`, just built by `produce` inside its gate, what `record` found
    /// of that build, before the instance is published: the dependencies it got from `require`
    /// that are registered, with their scope now (the build has just asked for them), and the
    /// key defaults it kept. A singleton is built once, so this costs no read.
    @inline(never)
    func keep(_ record: SingletonBuild, in entry: Entry) {
        var builtWith: [Int: WeaveDI.Scope] = [:]
        for slot in record.required.withLock({ $0 }) { if let dependency = self.entry(at: slot) { builtWith[slot] = dependency.scope } }
        entry.builtWith = builtWith
        entry.keptDefaults = record.keptDefaults
    }

    /// A key read on this thread got the key's default because the registration of its value
    /// type (`valueSlot`, here) failed with `error`: the innermost singleton being built inside
    /// its gate on this thread (`ResolutionStack.State.singletonBuild`, which a `makeFresh`
    /// build never sets) keeps that default, which `validate()` reports once it reads the
    /// instance instead of building it. (Not a cycle through the key: `checkCycles()` shows it.)
    @inline(never)
    func keptDefault(key: Int, valueSlot: Int, error: ResolutionError) {
        let stack = ResolutionStack.current
        if case .cycle = error, stack.index(of: valueSlot, in: id) != nil { return }
        // Read by the singleton's own factory (its container's innermost build), as `validate()`
        // itself tells a fallback (`KeyFallbackCollector.fellBack`): one read by a transient it
        // builds is that transient's, reported whenever the transient is validated.
        guard let build = stack.state.pointee.singletonBuild,
            stack.frames.last(where: { $0.containerID == build.containerID })?.slot == build.slot,
            !build.keptDefaults.contains(where: { $0.key == key })
        else { return }
        build.keptDefaults.append(.init(slot: build.slot, scope: .singleton, key: key, valueSlot: valueSlot, error: error))
    }

    /// What `validate()` reports of the singleton `entry`, built before it ran, which it reads
    /// instead of building (after loading its instance: `Entry.builtWith`): the key defaults its
    /// build kept in place of a failed registration, a dependency its factory required that is
    /// no longer registered, and one registered since in a shorter-lived scope than it was then
    /// (a build now would be a scope mismatch). What it got from an optional `resolve` is no
    /// failure: a build now would do without it.
    func priorBuildFailures(of entry: Entry) -> [WeaveDI.ValidationReport.Failure] {
        var failures: [WeaveDI.ValidationReport.Failure] = entry.keptDefaults.map { kept in
            .init(scope: .singleton, reason: kept.reason, error: kept.error)
        }
        for (slot, scopeThen) in entry.builtWith.sorted(by: { $0.key < $1.key }) {
            let names = ResolutionStack.names(of: [entry.slot, slot])
            guard let now = self.entry(at: slot) else {
                failures.append(.init(
                    type: "", scope: .singleton,
                    reason: "\(names[0]) was built with \(names[1]), which is no longer registered: building "
                        + "\(names[0]) again (after releaseAll() or evict) would not find it",
                    isScopeMismatch: false, isCycle: false))
                continue
            }
            if now.scope != .transient, now.scope.lifetime < WeaveDI.Scope.singleton.lifetime,
                scopeThen == .transient || scopeThen.lifetime >= WeaveDI.Scope.singleton.lifetime {
                let mismatch = ResolutionError.scopeMismatch(
                    outer: names[0], outerScope: .singleton, inner: names[1], innerScope: now.scope)
                failures.append(.init(
                    scope: .singleton,
                    reason: "\(names[0]) was built with \(names[1]) (\(scopeThen)), registered since as \(now.scope): "
                        + "building \(names[0]) again would fail (\(mismatch))",
                    error: mismatch))
            }
        }
        return failures
    }

    /// The report of `pass`: its builds and failures, the cycles and component issues of the
    /// whole container.
    /// `rebuilt`: how many of `pass.count` were built this time, when not all were.
    func finish(_ pass: ValidationPass, logged: Bool, rebuilt: Int? = nil) -> WeaveDI.ValidationReport {
        let names = reportNames()
        func name(_ slot: Int) -> String { names[slot] ?? TypeSlots.shared.name(ofSlot: slot) }
        let failures = pass.failures.map { failed in
            var failure = failed.failure
            failure.type = name(failed.slot)
            return failure
        }
        let report = WeaveDI.ValidationReport(
            built: pass.built.map(name), failures: failures, cycles: checkCycles().cycles,
            componentIssues: diagnoseComponents().issues)
        if logged {
            let what = rebuilt.map { "checked \(pass.count) registration(s), unchanged since validated (\($0) that failed built again)" }
                ?? "validated \(pass.count) registration(s)"
            WeaveDILog.log(
                .optimization,
                "\(what): \(pass.built.count) built, \(pass.failures.count) failed, "
                    + "\(report.cycles.count) cycle(s), \(report.componentIssues.count) component issue(s)")
        }
        return report
    }

    /// Evicts the built singleton of `type`: the next resolve builds a new one; the evicted
    /// instance is disposed if it adopts `Disposable`. Returns whether there was one to evict.
    ///
    /// As with `releaseAll()`, a singleton whose build was under way when the instance was
    /// evicted is not cached (it may hold the evicted instance): its resolve gets it, the next
    /// resolve builds it afresh. That goes for a build of any singleton of this container then
    /// under way, whether or not it needs the evicted one.
    @discardableResult
    public func evict<T>(_ type: T.Type) async -> Bool {
        await evict(slot: TypeSlots.shared.slot(for: type))
    }

    /// `evict(_:)` by slot; `logged`: whether it says so (the `container.singletons` fix's
    /// eviction is a health log: only with health logging on).
    func evict(slot: Int, logged: Bool = true) async -> Bool {
        let evicted: (any Disposable)?? = state.withLock { state in
            guard let entry = entry(at: slot), entry.scope == .singleton, !entry.isProvidedInstance,
                entry.hasInstance
            else { return nil }
            // Counted as a release: a singleton build under way (of any type) may hold the
            // instance evicted here, so it is not cached when it ends (`produce`).
            releases.add(1, ordering: .relaxed)
            let fresh = entry.fresh()
            if let old = table.store(fresh, at: slot) { state.retired.append(old) }
            let built = ObjectIdentifier(entry)
            let index = state.disposables.firstIndex { $0.entry == built }
            return .some(index.map { state.disposables.remove(at: $0).disposable })
        }
        guard let evicted else { return false }
        Generation.bump()
        if let disposable = evicted { await disposable.dispose() }
        if logged { WeaveDILog.log(.diagnostic, "evicted the singleton \(TypeSlots.shared.logName(ofSlot: slot))") }
        return true
    }

    /// The built singletons that report their own health, by type name.
    func healthReportingSingletons() -> [(slot: Int, type: String, reporter: any HealthReporting)] {
        let names = reportNames()
        return state.withLock { state in
            state.order.compactMap { slot in
                guard let entry = entry(at: slot), let reporter = entry.builtInstance as? any HealthReporting
                else { return nil }
                return (slot, names[slot] ?? entry.typeName, reporter)
            }
        }
    }
}

/// What `validate()` learns, on the thread that builds, of the key reads in its builds that got
/// a key's default because the registration of the key's value type failed: the build keeps the
/// default (a singleton for good), so the validation reports it as a failure of that build.
/// Used on that thread only.
final class KeyFallbackCollector {
    struct Fallback {
        /// The registration whose build read the key (of the validated container), and its scope.
        let slot: Int
        let scope: WeaveDI.Scope
        /// The key's slot.
        let key: Int
        let reason: String
        let error: ResolutionError

        /// The fallback of the key at `key`, read while `slot` (of `scope`) built, whose value
        /// type's registration (`valueSlot`) failed with `error`.
        init(slot: Int, scope: WeaveDI.Scope, key: Int, valueSlot: Int, error: ResolutionError) {
            let names = ResolutionStack.names(of: [slot, key, valueSlot])
            self.slot = slot
            self.scope = scope
            self.key = key
            self.reason = "\(names[1]) was read while building \(names[0]) and gave the key's default, which "
                + "\(names[0]) keeps: the registration of \(names[2]) failed (\(error))"
            self.error = error
        }
    }

    /// The validated container.
    let containerID: UInt64
    /// The registration being validated: the build a key read is charged to when no build of
    /// the validated container is open.
    var validating: (slot: Int, scope: WeaveDI.Scope)?
    private(set) var fallbacks: [Fallback] = []

    init(containerID: UInt64) { self.containerID = containerID }

    /// A read of key `key` fell back to its default: the registration of its value type
    /// (`valueSlot`, in `container`, which the key reads) failed with `error`. A read made while
    /// that very registration is being built is a cycle through the key, which the report's
    /// cycles show: not counted again.
    func fellBack(key: Int, valueSlot: Int, error: ResolutionError, in container: WeaveDI.Container) {
        let stack = ResolutionStack.current
        if case .cycle = error, stack.index(of: valueSlot, in: container.id) != nil { return }
        let open = stack.frames.last { $0.containerID == containerID }
        guard let (slot, scope) = open.map({ ($0.slot, $0.scope) }) ?? validating else { return }
        if fallbacks.contains(where: { $0.slot == slot && $0.key == key }) { return }
        fallbacks.append(.init(slot: slot, scope: scope, key: key, valueSlot: valueSlot, error: error))
    }
}
