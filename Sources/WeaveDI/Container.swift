import Synchronization

extension WeaveDI {
    /// A dependency-injection container: registrations by type, each in a scope, resolved on
    /// demand. `WeaveDI.Container.live` is the process-wide one that `@Injected` and `@Factory`
    /// read; tests swap it (`WeaveDI.Container.live = WeaveDI.Container()`).
    ///
    /// Reading a built singleton takes no lock: a type-slot lookup and two atomic loads.
    /// Building goes through the instance's own gate (`BuildGates`): each shared instance is
    /// built once, factories may resolve (and register) other services freely, on this thread
    /// or others, and two threads that would wait for each other get a cycle error instead.
    ///
    /// `@unchecked Sendable`: the entry table is atomic, everything else sits in `state`.
    public final class Container: Resolver, @unchecked Sendable {
        private static let nextID = Atomic<UInt64>(1)

        /// A number unique to this container in this process.
        public let id: UInt64
        @usableFromInline
        let table = EntryTable()
        /// `TypeSlots.shared`, kept here: a resolve loads it from the container at hand instead
        /// of calling into this module for the lazily made global (its `swift_once` check).
        @usableFromInline
        let typeSlots = TypeSlots.shared
        let state = Locked(State())
        /// How many `releaseAll()`s and `evict`s (of a built singleton) have started, raised
        /// under `state`'s lock as each swaps built singletons out: a singleton build that saw
        /// another count before it began than under that lock when it ended straddled a release
        /// or an eviction, and is not cached (`produce`).
        let releases = Atomic<UInt64>(0)

        struct RegistrationRecord: Equatable {
            var module: String
            var scope: WeaveDI.Scope
        }

        struct State {
            /// Every registered slot, in registration order of first sight (its entry is in the
            /// container's `table`: `entry(at:)`).
            var order: [Int] = []
            /// Every (module, scope) a slot was registered with here, each once, the latest last:
            /// for duplicate detection. Only of slots registered more than once or removed (a
            /// slot's one registration is its entry: a bootstrap's first registrations write no
            /// list). Bounded by the distinct pairs, so a process that registers the same type
            /// again and again does not grow it.
            var history: [Int: [RegistrationRecord]] = [:]
            /// Replaced entries, kept alive because lock-free readers may still hold them.
            var retired: [Entry] = []
            /// Built singletons that adopt `Disposable`, in creation order, each with the entry
            /// that built it (by identity: entries outlive this list, see `retired`). Matched by
            /// entry, not by the instance: a value type has no identity (boxed as an object, it
            /// is a new object every time).
            var disposables: [(entry: ObjectIdentifier, disposable: any Disposable)] = []
            /// Open sessions by identity.
            var sessions: [ObjectIdentifier: Session] = [:]
            /// How many times a registration was added, replaced or removed: what the
            /// `container.graph` health check compares to know whether to build again.
            var registrationChanges: UInt64 = 0
            /// Set for good by `UnifiedRegistry.enableOptimization()`.
            var optimized = false
            /// In an optimized container, the slots registered since the last optimization pass,
            /// in registration order: the end of the outermost `bootstrap` warms them.
            var unoptimized: [Int] = []
        }

        /// Creates an empty container.
        public init() {
            id = Container.nextID.add(1, ordering: .relaxed).newValue
        }

        // MARK: The process-wide container

        /// The live container, retained for good: every container that was ever `live` stays
        /// allocated for the rest of the process, so that lock-free readers (and the caches of
        /// `@Injected`, which point into its singleton cells) never see it freed.
        /// (The address as an integer: raw pointers are not `Sendable`.)
        @usableFromInline
        static let liveCell = Atomic<UInt>(UInt(bitPattern: Unmanaged.passRetained(Container()).toOpaque()))

        /// The process-wide container that `@Injected`, `@Factory` and `bootstrap` use.
        /// Assigning a new one (tests do) takes effect for every later read.
        ///
        /// Reading it takes no lock: an atomic load. A container assigned here is never
        /// deallocated (nor are its singletons), even after another one replaces it.
        public static var live: Container {
            get { liveRef.takeUnretainedValue() }
            set {
                let retained = Unmanaged.passRetained(newValue)
                let old = liveCell.exchange(UInt(bitPattern: retained.toOpaque()), ordering: .acquiringAndReleasing)
                // Readers may still be using the replaced container: its +1 goes to `formerLive`.
                let replaced = Unmanaged<Container>.fromOpaque(UnsafeRawPointer(bitPattern: old)!).takeRetainedValue()
                formerLive.withLock { $0.append(replaced) }
                Generation.bump()
            }
        }

        /// Every container that was `live` and was replaced, kept for the rest of the process
        /// (see `liveCell`) where a leak checker can see it kept: a container kept only by a
        /// reference count nothing points to is what LeakSanitizer (`swift test
        /// --sanitize=address`) reports as leaked, with everything it holds, and fails the run.
        private static let formerLive = Locked<[Container]>([])

        /// The live container, unretained (it is never freed): read it through
        /// `_withUnsafeGuaranteedRef`, which retains nothing.
        @inlinable
        static var liveRef: Unmanaged<Container> {
            Unmanaged<Container>.fromOpaque(UnsafeRawPointer(bitPattern: liveCell.load(ordering: .acquiring))!)
        }

        /// Runs `configure` on the live container (registrations accumulate across calls).
        public static func bootstrap(
            isolation: isolated (any Actor)? = #isolation,
            _ configure: (Container) async throws -> Void
        ) async rethrows {
            try await live.bootstrap(isolation: isolation, configure)
        }

        /// Registers every module's services in the live container, each labelled with its module.
        public static func bootstrap(
            isolation: isolated (any Actor)? = #isolation, modules: [any WeaveDI.Module]
        ) async {
            await live.bootstrap(isolation: isolation, modules: modules)
        }

        /// Releases the live container's singletons and closes its open sessions.
        public static func releaseAll() async {
            await live.releaseAll()
        }

        /// Runs `configure` on this container.
        public func bootstrap(
            isolation: isolated (any Actor)? = #isolation,
            _ configure: (Container) async throws -> Void
        ) async rethrows {
            if BootstrapContext.active { return try await configure(self) }
            try await BootstrapContext.$active.withValue(true, operation: { try await configure(self) }, isolation: isolation)
            await optimizeNewRegistrations()
        }

        /// Registers every module's services in this container, in order, each labelled with its
        /// module's name (see `registrations`).
        public func bootstrap(isolation: isolated (any Actor)? = #isolation, modules: [any WeaveDI.Module]) async {
            let outermost = !BootstrapContext.active
            await BootstrapContext.$active.withValue(true, operation: {
                for module in modules {
                    await ModuleContext.$current.withValue(module.name) {
                        await module.register(in: self)
                    }
                }
            }, isolation: isolation)
            if outermost { await optimizeNewRegistrations() }
        }

        /// Releases every singleton this container built (disposing the `Disposable` ones in
        /// reverse creation order) and closes its open sessions. Registrations stay: the next
        /// resolve builds afresh. Instances given with `register(_:instance:)` are kept as they are.
        ///
        /// A released instance's memory is reclaimed when the container itself goes away:
        /// lock-free readers may still be holding its cell.
        ///
        /// A singleton that a `dispose()` run here (a singleton's, or a closed session's
        /// instance's) resolves, directly or through what it builds, is built anew after the
        /// release: it stays built and this `releaseAll` does not dispose it;
        /// each such build is logged as an error naming the type (a `Task.detached` that a
        /// `dispose()` starts does not carry the task-local that tells: its builds are not logged).
        /// A singleton whose build started before the call and ends after it is not cached (it
        /// may hold what this call disposed): its resolve gets it, the next resolve builds
        /// afresh, and a `Disposable` one is listed for the next `releaseAll()`.
        public func releaseAll() async {
            let (disposables, sessions): ([any Disposable], [Session]) = state.withLock { state in
                releases.add(1, ordering: .relaxed)
                for slot in state.order {
                    guard let entry = entry(at: slot), entry.hasInstance, !entry.isProvidedInstance else { continue }
                    let fresh = entry.fresh()
                    if let old = table.store(fresh, at: fresh.slot) { state.retired.append(old) }
                }
                let taken = (state.disposables.map(\.disposable), Array(state.sessions.values))
                state.disposables = []
                return taken
            }
            Generation.bump()
            // A singleton a dispose() resolves (a session's instance's too) is built again, after
            // the release: `produce` says so.
            await ReleaseContext.$disposing.withValue(id) {
                for session in sessions { await session.close(cause: .releaseAll) }
                for disposable in disposables.reversed() { await disposable.dispose() }
            }
            WeaveDILog.log(.diagnostic, "released \(disposables.count) disposable singleton(s) and \(sessions.count) session(s)")
        }

        /// Opens a session: session-scoped services resolved through it (or inside its
        /// `withCurrent`) live until `close()`. With `closesWhenIdle` false, the
        /// `container.sessions` health check never counts it idle and its fix never closes it:
        /// for a session the program keeps open on purpose, used now and then (a server's
        /// parent session for stateless requests).
        ///
        /// `id` names the session in logs and health messages; it is not a key: two open sessions
        /// of one id are two sessions, each with its own instances.
        public func openSession(id: String, attributes: [String: String] = [:], closesWhenIdle: Bool = true) -> Session {
            openSession(id: id, attributes: attributes, logged: true, closesWhenIdle: closesWhenIdle)
        }

        /// Opens a session that logs its opening and closing only when `logged`.
        func openSession(id: String, attributes: [String: String], logged: Bool, closesWhenIdle: Bool = true) -> Session {
            let session = Session(id: id, container: self, attributes: attributes, logged: logged, closesWhenIdle: closesWhenIdle)
            state.withLock { $0.sessions[ObjectIdentifier(session)] = session }
            if logged { WeaveDILog.log(.diagnostic, "session '\(id)' opened") }
            return session
        }

        /// The sessions open now, oldest first.
        public var openSessions: [Session] {
            state.withLock { Array($0.sessions.values) }.sorted { $0.openedAt < $1.openedAt }
        }

        func sessionClosed(_ session: Session) {
            _ = state.withLock { $0.sessions.removeValue(forKey: ObjectIdentifier(session)) }
        }
    }
}

/// The module whose `register(in:)` is running, so that registrations know who made them.
enum ModuleContext {
    @TaskLocal static var current: String = "main"
}

/// The container whose `releaseAll` is disposing, in the task that runs the disposals: a
/// singleton built there was released already, and is built again for good.
enum ReleaseContext {
    @TaskLocal static var disposing: UInt64?
}

/// Whether a `bootstrap` is running: in an optimized container its end warms what it registered.
enum BootstrapContext {
    @TaskLocal static var active = false
}
