#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CWeaveDIThread

/// The services under construction on the current thread, innermost last.
///
/// Factories are synchronous, so a whole build (a factory and everything it resolves) runs on
/// one thread: a thread-local stack sees exactly this resolution's path, and concurrent
/// resolutions on other threads never report false cycles.
///
/// A pointer to this thread's `State`, found through a C thread-local: a value, so that
/// passing the stack around retains nothing. The state is freed when its thread exits.
struct ResolutionStack {
    struct Frame {
        let containerID: UInt64
        let slot: Int
        let scope: WeaveDI.Scope
        /// The session or request of this build, unretained: `build` holds it for as long as
        /// its frame is open. (A plain value, so that pushing and popping frames retains nothing.)
        let ownerObject: Unmanaged<AnyObject>?
        let ownerIsRequest: Bool
        /// Whether this build records its factory's dependencies (one of its entry's first builds).
        let records: Bool

        init(containerID: UInt64, slot: Int, scope: WeaveDI.Scope, owner: ScopeOwner?, records: Bool = false) {
            self.containerID = containerID
            self.slot = slot
            self.scope = scope
            self.records = records
            switch owner {
            case let .session(session)?: ownerObject = .passUnretained(session); ownerIsRequest = false
            case let .request(request)?: ownerObject = .passUnretained(request); ownerIsRequest = true
            case nil: ownerObject = nil; ownerIsRequest = false
            }
        }

        /// What this frame builds, for a message that also names `others` and the builds open
        /// on `stack`: a registered type's name, or `Key's default` for an `InjectedKey` default
        /// being computed (a frame of no container).
        func builtName(among others: [Int], on stack: ResolutionStack) -> String {
            let name = stack.messageName(of: slot, among: others)
            return containerID == 0 ? name + ResolutionError.keyDefaultSuffix : name
        }

        @inline(__always)
        var owner: ScopeOwner? {
            guard let object = ownerObject?.takeUnretainedValue() else { return nil }
            return ownerIsRequest
                ? .request(unsafeDowncast(object, to: Request.self))
                : .session(unsafeDowncast(object, to: Session.self))
        }
    }

    struct State {
        /// The open frames, outermost first.
        var storage: UnsafeMutablePointer<Frame>
        var capacity: Int
        var count = 0
        /// Set by `quietly`: the library's lines on this thread are dropped meanwhile.
        var quiet = false
        /// Set by `validate()` while it builds on this thread: what the key reads of its builds
        /// that fell back to a key's default report. Read only on that failure path.
        var validation: KeyFallbackCollector?
        /// The innermost singleton build open on this thread inside its gate (`produce`), set
        /// and restored by it only: a key read that keeps a key's default tells it, on that
        /// failure path (`Container.keptDefault`).
        var singletonBuild: SingletonBuild?
        /// Set by the protocol extension's `testValue` and `previewValue` of `InjectedKey`, which
        /// return `liveValue`: which key (and for which context) ran one last on this thread.
        /// Cleared and read by `KeyState.defaultValue()` around computing a key's default, to say
        /// once that a key without a `testValue` (or `previewValue`) gets its `liveValue`.
        var liveValueStandIn: LiveValueStandIn?
    }

    /// A key whose `testValue` or `previewValue` is the protocol extension's, which returns its
    /// `liveValue`, the key's value type, and the context it stood in for.
    struct LiveValueStandIn {
        let key: Any.Type
        let value: Any.Type
        let context: InjectedContext
    }

    /// Notes on this thread that `key`'s `context` value is the protocol extension's: its `liveValue`.
    static func noteLiveValueStandIn(for key: Any.Type, value: Any.Type, in context: InjectedContext) {
        current.state.pointee.liveValueStandIn = LiveValueStandIn(key: key, value: value, context: context)
    }

    /// Whether `quietly` runs on this thread now (false on a thread that never built).
    static var isQuiet: Bool {
        guard let raw = weavedi_thread_state() else { return false }
        return raw.assumingMemoryBound(to: State.self).pointee.quiet
    }

    /// Runs `body` (synchronous: it stays on this thread) with the library's log lines on this
    /// thread dropped, when `quiet`.
    static func quietly<R, E: Error>(_ quiet: Bool, _ body: () throws(E) -> R) throws(E) -> R {
        guard quiet else { return try body() }
        let state = current.state
        let before = state.pointee.quiet
        state.pointee.quiet = true
        defer { state.pointee.quiet = before }
        return try body()
    }

    /// Runs `body` (synchronous: it stays on this thread) with `collector` told of every key
    /// read in its builds that falls back to the key's default because the registration of the
    /// key's value type failed (`validate()`).
    static func collectingKeyFallbacks<R>(into collector: KeyFallbackCollector, _ body: () -> R) -> R {
        let state = current.state
        let before = state.pointee.validation
        state.pointee.validation = collector
        defer { state.pointee.validation = before }
        return body()
    }

    let state: UnsafeMutablePointer<State>

    /// This thread's stack.
    @inline(__always)
    static var current: ResolutionStack {
        if let raw = weavedi_thread_state() { return ResolutionStack(state: raw.assumingMemoryBound(to: State.self)) }
        return makeForThisThread()
    }

    private static func makeForThisThread() -> ResolutionStack {
        let state = UnsafeMutablePointer<State>.allocate(capacity: 1)
        state.initialize(to: State(storage: .allocate(capacity: 32), capacity: 32))
        weavedi_set_thread_state(state)
        pthread_setspecific(destructorKey, state)  // only so that it is freed with the thread
        return ResolutionStack(state: state)
    }

    /// Frees a thread's state when the thread exits.
    private static let destructorKey: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { raw in
            guard let state = raw?.assumingMemoryBound(to: State.self) else { return }
            weavedi_set_thread_state(nil)
            state.pointee.storage.deallocate()
            state.deinitialize(count: 1)
            state.deallocate()
        }
        precondition(status == 0, "WeaveDI: pthread_key_create failed (\(status))")
        return key
    }()

    /// The open frames, outermost first (valid until the next push or pop).
    @inline(__always)
    var frames: UnsafeBufferPointer<Frame> { UnsafeBufferPointer(start: state.pointee.storage, count: state.pointee.count) }

    /// Whether no build is open on this thread.
    @inline(__always)
    var isEmpty: Bool { state.pointee.count == 0 }

    /// The innermost open frame.
    @inline(__always)
    var innermost: Frame? {
        let count = state.pointee.count
        return count == 0 ? nil : state.pointee.storage[count &- 1]
    }

    /// The session or request a resolution starting here happens in: the innermost open
    /// build's, or outside any build the one made current by `withCurrent`.
    @inline(__always)
    var owner: ScopeOwner? {
        isEmpty ? ScopeContext.active : innermost!.owner
    }

    /// Opens a frame; balance with `pop()`.
    @inline(__always)
    func push(_ frame: Frame) {
        if state.pointee.count == state.pointee.capacity { grow() }
        (state.pointee.storage + state.pointee.count).initialize(to: frame)
        state.pointee.count &+= 1
    }

    /// Closes the innermost frame.
    @inline(__always)
    func pop() {
        state.pointee.count &-= 1
    }

    private func grow() {
        let capacity = state.pointee.capacity
        let bigger = UnsafeMutablePointer<Frame>.allocate(capacity: capacity * 2)
        bigger.moveInitialize(from: state.pointee.storage, count: state.pointee.count)
        state.pointee.storage.deallocate()
        state.pointee.storage = bigger
        state.pointee.capacity = capacity * 2
    }

    /// The index of a frame building `slot` of container `id`, if one is open.
    @inline(__always)
    func index(of slot: Int, in id: UInt64) -> Int? {
        let storage = state.pointee.storage
        var i = state.pointee.count
        while i > 0 {
            i &-= 1
            if storage[i].slot == slot, storage[i].containerID == id { return i }
        }
        return nil
    }

    /// The slot of the innermost build, looking through `InjectedKey` defaults being computed
    /// (their frames belong to no container), if it is a build of container `id` that records
    /// its factory's dependencies: what a build starting now is a dependency of.
    @inline(__always)
    func recordingBuild(in id: UInt64) -> Int? {
        let storage = state.pointee.storage
        var i = state.pointee.count
        while i > 0 {
            i &-= 1
            let frame = storage[i]
            if frame.containerID == 0 { continue }
            return frame.records && frame.containerID == id ? frame.slot : nil
        }
        return nil
    }

    /// The innermost frame with a lifetime of its own (not transient).
    var nearestScoped: Frame? {
        frames.last { $0.scope != .transient }
    }

    /// The error for building `slot` again while the frame at `start` (building it) is open.
    @inline(never)
    func cycle(from start: Int, to slot: Int) -> ResolutionError {
        .cycle(path: Self.names(of: frames[start...].map(\.slot) + [slot]))
    }

    /// The error for building `slot` with `ResolutionError.maximumDepth` frames open.
    @inline(never)
    func tooDeep(at slot: Int) -> ResolutionError {
        .tooDeep(path: Self.names(of: frames.map(\.slot) + [slot]))
    }

    /// The names of a path of types, told apart where two types share a name.
    static func names(of slots: [Int]) -> [String] {
        let names = TypeSlots.shared.names(ofSlots: slots)
        return slots.map { names[$0]! }
    }

    /// The name of `slot` in an error made or passed on here: qualified (`App.Users.Repo`) when
    /// a build open on this thread, one of `others`, or a type `error` names already, is another
    /// type of the same name. An error names the builds open where it is made (its path, as it
    /// is passed on through them) and its subject; each name spelled so, both of two types of
    /// one name come out qualified, whichever is spelled first.
    @inline(never)
    func messageName(of slot: Int, among others: [Int] = [], in error: ResolutionError? = nil) -> String {
        var slots = frames.map(\.slot) + others
        if let error { slots += error.typeNames.compactMap { TypeSlots.shared.slot(ofQualifiedName: $0) } }
        return TypeSlots.shared.name(ofSlot: slot, among: slots)
    }
}
