extension WeaveDI {
    /// What building every registration once found (`Container.validate()`).
    public struct ValidationReport: Sendable, Equatable {
        /// Registrations built without error.
        public var built: [String]
        /// Registrations that could not be built, with the reason.
        public var failures: [Failure]
        /// Dependency cycles in the recorded graph (see `Container.checkCycles()`).
        public var cycles: [[String]]
        /// Duplicate providers and scope drift (see `Container.diagnoseComponents()`).
        public var componentIssues: [ComponentIssue]

        /// One registration that failed to build.
        public struct Failure: Sendable, Equatable {
            /// The registered type.
            public var type: String
            /// Its scope.
            public var scope: WeaveDI.Scope
            /// Why it failed (`ResolutionError.description`).
            public var reason: String
            /// Whether the reason is a scope mismatch.
            public var isScopeMismatch: Bool
            /// Whether the reason is a cycle.
            public var isCycle: Bool
        }

        /// True when nothing failed and no cycles were found.
        public var isValid: Bool { failures.isEmpty && cycles.isEmpty }
    }
}

extension WeaveDI.Container {
    /// Builds every registration once, each in its own scope: singletons are built (and stay
    /// built), session- and request-scoped ones inside a probe session and request that are
    /// then closed (disposing what they built), transients once. Building records the dependency
    /// graph; the report adds its cycles and the component issues.
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
    /// built and those that failed, as of a count of registration changes.
    final class GraphCheckMemory: Sendable {
        struct Validated {
            var changes: UInt64
            var built: Set<Int>
            var failures: [(slot: Int, failure: WeaveDI.ValidationReport.Failure)]
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
            (state.registrationChanges, state.order.compactMap { state.entries[$0] })
        }
        guard let known = memory.validated.withLock({ $0 }), known.changes == changes else {
            let pass = validationPass(entries, logged: logged)
            await pass.closeProbe(logged: logged)
            memory.validated.withLock {
                $0 = .init(changes: changes, built: Set(pass.built), failures: pass.failures)
            }
            return finish(pass, logged: logged)
        }
        let failed = Set(known.failures.map(\.slot))
        var pass = validationPass(entries.filter { failed.contains($0.slot) }, logged: logged)
        await pass.closeProbe(logged: logged)
        let built = known.built.union(pass.built)
        memory.validated.withLock { validated in
            // Kept only if no registration changed meanwhile (a newer round would validate again).
            guard validated?.changes == changes else { return }
            validated = .init(changes: changes, built: built, failures: pass.failures)
        }
        pass.built = entries.map(\.slot).filter(built.contains)
        pass.count = entries.count
        return finish(pass, logged: logged, rebuilt: failed.count)
    }

    /// The registrations, in registration order.
    func currentEntries() -> [Entry] {
        state.withLock { state in state.order.compactMap { state.entries[$0] } }
    }

    /// What building a set of registrations found, with the probe session still open.
    struct ValidationPass {
        var count: Int
        /// The slots of the registrations built.
        var built: [Int] = []
        /// The registrations that failed, by slot; their names are filled in by `finish`.
        var failures: [(slot: Int, failure: WeaveDI.ValidationReport.Failure)] = []
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
        for entry in entries {
            let owner: ScopeOwner? = switch entry.scope {
            case .singleton: nil
            case .session: .session(session)
            case .request, .transient: .request(request)
            }
            do {
                // Quiet unless logged: the lines of the factories it runs (a resolve that finds
                // nothing) are the validation's.
                _ = try ResolutionStack.quietly(!logged) { () throws(ResolutionError) -> Any in
                    try entry.resolveErased(in: self, owner: owner)
                }
                pass.built.append(entry.slot)
            } catch {
                var mismatch = false, cycle = false
                if case .scopeMismatch = error { mismatch = true }
                if case .cycle = error { cycle = true }
                pass.failures.append((entry.slot, .init(type: "", scope: entry.scope, reason: error.description,
                                                        isScopeMismatch: mismatch, isCycle: cycle)))
            }
        }
        return pass
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
            guard let entry = state.entries[slot], entry.scope == .singleton, !entry.isProvidedInstance,
                entry.hasInstance
            else { return nil }
            // Counted as a release: a singleton build under way (of any type) may hold the
            // instance evicted here, so it is not cached when it ends (`produce`).
            releases.add(1, ordering: .relaxed)
            let fresh = entry.fresh()
            if let old = table.store(fresh, at: slot) { state.retired.append(old) }
            state.entries[slot] = fresh
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
                guard let entry = state.entries[slot], let reporter = entry.builtInstance as? any HealthReporting
                else { return nil }
                return (slot, names[slot] ?? entry.typeName, reporter)
            }
        }
    }
}
