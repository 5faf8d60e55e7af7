import Glibc
import Synchronization
import WeaveDI
import WeaveDIPosix

/// What a worker of a mirror run is doing on the file system, for the watchdog's messages and
/// limits (`WalkWatch`).
enum WalkStepKind: Sendable {
    enum Side: Sendable {
        case source, destination
    }

    /// `readdir` of the directory.
    case listing(Side)
    /// `lstat` (and `readlink`) of an entry.
    case lookingAt(Side)
    /// Opening (in the destination: unlinking what is in the way, creating) a subdirectory.
    case openingDirectory(Side)
    /// Removing an entry (or a tree) from the destination.
    case removing
    /// Opening a source file and reading its status.
    case openingFile
    /// Creating the temporary copy, or the temporary link, in the destination.
    case creatingCopy
    /// Moving one chunk of a file's content (`copy_file_range`, or `read` and `write`).
    case copying
    /// Reading a file for its checksum.
    case checksumming(Side)
    /// `fchmod`, `futimens`, `utimensat` in the destination.
    case settingAttributes
    /// `fsync`, `syncfs`, `sync_file_range` in the destination.
    case flushing
    /// Renaming a copy or link into place.
    case renaming

    /// The side whose entry the step works on; for a copy, the source (it works on both:
    /// `sides`).
    var side: Side {
        switch self {
        case let .listing(side), let .lookingAt(side), let .openingDirectory(side), let .checksumming(side): side
        case .openingFile, .copying: .source
        case .removing, .creatingCopy, .settingAttributes, .flushing, .renaming: .destination
        }
    }

    /// The sides the step waits on: a copy reads the source file and writes its copy in the
    /// destination, and either file system may be the one that does not answer.
    var sides: [Side] {
        if case .copying = self { [.source, .destination] } else { [side] }
    }

    /// `reading the source entry`: what a message says the worker was doing.
    var subject: String {
        let side = side == .source ? "source" : "destination"
        return switch self {
        case .listing: "listing the \(side) directory"
        case .lookingAt: "reading the \(side) entry"
        case .openingDirectory: "opening the \(side) directory"
        case .removing: "removing from the destination"
        case .openingFile: "opening the source file"
        case .creatingCopy: "creating the copy in the destination"
        case .copying: "copying the file's content"
        case .checksumming: "reading the \(side) file for its checksum"
        case .settingAttributes: "setting mode and mtime in the destination"
        case .flushing: "flushing the destination"
        case .renaming: "renaming the copy into place"
        }
    }
}

/// A step of a mirror run's walk, as `StuckThreads` sees it.
struct WalkStep: DeadlineStep {
    let subject: String
    /// The step's paths, on each of its sides (`WalkStepKind.sides`): the first is the one
    /// messages begin with.
    let paths: [String]
    var path: String { paths[0] }

    /// The step `kind` on `name` in `directory`, the paths as `watch` spells them. A step on
    /// two sides names the other in its subject: `copying the file's content to "/dst/a/f"`.
    init(_ kind: WalkStepKind, _ directory: MirrorDirectory?, _ name: String?, in watch: WalkWatch) {
        // Built from the directory's chain of parents (`MirrorDirectory.path`), once.
        let relative = directory?.path
        paths = kind.sides.map { watch.path($0, relative, name) }
        subject = paths.count > 1 ? "\(kind.subject) to \(JSONValue.quotedPathForMessage(paths[1]))" : kind.subject
    }

    func failure(_ problem: String, errno: Int32) -> MirrorFailure {
        .notTried(problem)
    }
}

/// How a run's walk ended early, as its `WalkWatch` saw it.
enum WalkVerdict: Sendable {
    /// A worker's step did not answer within its limit (its thread is left behind, counted in
    /// `StuckThreads`), or a step was not tried because a thread is stuck on its path: the run
    /// fails, with this error.
    case failed(path: String, reason: String)
    /// The run was cancelled, and a worker's step had not answered `cancelGrace` later: the
    /// run ends cancelled without waiting for it.
    case abandoned
}

/// The watchdog of one mirror run's workers: each worker thread of the run's
/// `MirrorWorkerPool` has a slot in which it notes the step it begins (`begin`: a lock and an
/// atomic add, no system call and no clock), and a thread of the watch's own looks at the
/// slots five times a second. A step that has not moved on within its limit (5 s,
/// `StepDeadline.stepLimit`, plus 1 s per MiB the step moves, plus 30 s for a flush) gets the
/// run its verdict: the run fails, naming the path and the step (`ETIMEDOUT`, as a root that
/// does not answer at the run's start), the worker's thread is left behind and counted in
/// `StuckThreads`, and the pool lets go of its threads without joining them. The watch goes
/// on looking at the pool's threads until they have all ended: a thread stuck later is counted
/// too, and a stuck thread whose call returns is forgotten (`StuckThreads.finish`), its work
/// going no further (every later `begin` throws `cancelled`).
///
/// Before a step, `begin` also asks `StuckThreads` (only when some thread is stuck: one
/// atomic load otherwise) whether a thread is stuck on the step's path or above it: the step
/// is then not tried, and the run fails at once.
final class WalkWatch: Sendable {
    /// How long a step may take beyond its base limit per MiB it moves: a disk slower than
    /// 1 MiB/s is taken for one that does not answer.
    static let perMiB: Duration = .seconds(1)
    /// What a flush (`fsync`, `syncfs`) may take beyond that: it waits for the device's queue,
    /// which other writers fill.
    static let flushAllowance: Duration = .seconds(30)
    /// How long a cancelled run waits for a worker's step to move on before it ends without it.
    static let cancelGrace: Duration = .seconds(2)
    /// How often the watch looks at the slots.
    static let tick: Duration = .milliseconds(200)
    /// What `StuckThreads` says the threads it leaves behind were doing.
    static let purpose = "a mirror run's walk"

    let sourceRoot: String
    let destinationRoot: String
    let stuck: StuckThreads
    /// The step limit before the allowances (`StepDeadline.stepLimit`; tests shorten it).
    let baseLimit: UInt64
    private let slots = Locked<[WalkSlot]>([])
    /// Whether nobody waits for the workers' work any more (a verdict was given).
    private let unwanted = Atomic<Bool>(false)
    /// When the run was cancelled (monotonic nanoseconds), 0 before.
    private let cancelledAt = Atomic<UInt64>(0)
    /// Pool threads started and not yet ended.
    private let liveThreads = Atomic<Int>(0)
    /// Whether the pool is shutting down: the watch ends once `liveThreads` is 0.
    private let poolStopped = Atomic<Bool>(false)
    private let verdictTaker = Locked<(@Sendable (WalkVerdict) -> Void)?>(nil)

    init(source: String, destination: String, stuck: StuckThreads = .shared, baseLimit: Duration = StepDeadline.stepLimit) {
        sourceRoot = source
        destinationRoot = destination
        self.stuck = stuck
        self.baseLimit = baseLimit.clampedNanoseconds
    }

    /// Starts the watch's thread; `verdict` hears the first verdict, once.
    func start(verdict: @escaping @Sendable (WalkVerdict) -> Void) throws(Errno) {
        verdictTaker.withLock { $0 = verdict }
        try PosixThread.detach { self.watch() }
    }

    /// A new slot for a thread of the pool, which the thread takes with `enter`.
    func makeSlot() -> WalkSlot {
        let slot = WalkSlot(watch: self)
        slots.withLock { $0.append(slot) }
        liveThreads.wrappingAdd(1, ordering: .relaxed)
        return slot
    }

    /// A pool thread ends (after its slot went idle).
    func threadEnded() {
        liveThreads.wrappingSubtract(1, ordering: .relaxed)
    }

    /// The pool lets its threads go: the watch ends once they have all ended.
    func poolStopping() {
        poolStopped.store(true, ordering: .relaxed)
    }

    /// The run was cancelled: a step that does not move on within `cancelGrace` from now ends
    /// the run without it.
    func cancel() {
        _ = cancelledAt.compareExchange(expected: 0, desired: SystemClock.monotonicNanoseconds(), ordering: .relaxed)
    }

    var isUnwanted: Bool { unwanted.load(ordering: .relaxed) }

    /// The absolute path of `name` in the directory at `relative` (its path relative to the
    /// roots) on `side`, as the job's roots are configured.
    func path(_ side: WalkStepKind.Side, _ relative: String?, _ name: String?) -> String {
        var path = side == .source ? sourceRoot : destinationRoot
        for part in [relative, name] {
            guard let part, !part.isEmpty else { continue }
            path += path.hasSuffix("/") ? part : "/" + part
        }
        return path
    }

    /// The limit of a step of `kind` that moves `bytes`, in nanoseconds.
    func limit(_ kind: WalkStepKind, bytes: Int64) -> UInt64 {
        var limit = baseLimit
        if bytes > 0 { limit += (UInt64(bytes) + (1 << 20) - 1) / (1 << 20) * Self.perMiB.clampedNanoseconds }
        if case .flushing = kind { limit += Self.flushAllowance.clampedNanoseconds }
        return limit
    }

    /// Gives `verdict`, unless one was given; from then on nobody waits for the work.
    func give(_ verdict: WalkVerdict) {
        unwanted.store(true, ordering: .relaxed)
        let taker = verdictTaker.withLock { $0.take() }
        taker?(verdict)
    }

    // MARK: The worker's side

    /// The calling pool thread's slot (`WalkSlot.enter`); nil on any other thread.
    static func currentSlot() -> WalkSlot? {
        guard let raw = pthread_getspecific(slotKey) else { return nil }
        return Unmanaged<WalkSlot>.fromOpaque(raw).takeUnretainedValue()
    }

    fileprivate static let slotKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The calling worker begins a step of `kind` on `name` (nil: the directory itself) in
    /// `directory` (nil: the directory of its previous step), moving `bytes`. Throws
    /// `cancelled` once the run no longer waits for the work, and `notTried` (failing the run)
    /// when a thread is stuck on the step's path. Does nothing outside a mirror pool's thread.
    static func begin(
        _ kind: WalkStepKind, _ name: String?, in directory: MirrorDirectory? = nil, bytes: Int64 = 0
    ) throws(MirrorFailure) {
        try currentSlot()?.begin(kind, name, in: directory, bytes: bytes)
    }

    /// The calling worker is still moving within its step (a chunk read, an entry removed):
    /// the step's limit starts again.
    static func pulse() {
        currentSlot()?.pulse()
    }

    /// Whether the calling worker's run wants no more of its work: its task is cancelled (a
    /// reload removed the job, the daemon is stopping, the job's fix cancelled a stuck run) or
    /// the watch gave its verdict. Asked at each entry by work that goes on entry after entry
    /// within one step (a tree's removal, a directory's scan, its listing: `list`), which no
    /// `begin` would stop.
    static var runIsStopping: Bool {
        Task.isCancelled || currentSlot()?.watch.isUnwanted == true
    }

    /// How many entries a worker lists between two looks at its run (`list`): fewer than a
    /// `getdents64` of 32 KiB holds (some hundreds of names).
    static let listingInterval = 64

    /// The calling worker lists `directory` (a failure said as `operation`): every
    /// `listingInterval` entries read start its step's limit again, and a run cancelled or given
    /// up on (`runIsStopping`) stops the listing there (`cancelled`), before its next read,
    /// rather than at the end of a directory of a million names.
    static func list(_ directory: FileDescriptor, _ operation: String = "readdir") throws(MirrorFailure) -> [DirectoryEntry] {
        let entries = try MirrorFailure.attempt(operation) {
            try directory.directoryEntries(every: listingInterval) { _ in
                pulse()
                return !runIsStopping
            }
        }
        guard let entries else { throw .cancelled }
        return entries
    }

    // MARK: The watch's thread

    private struct Seen {
        var generation: UInt64
        var since: UInt64
    }

    private func watch() {
        var seen: [ObjectIdentifier: Seen] = [:]
        let tick = UInt32(Self.tick.clampedNanoseconds / 1000)
        while true {
            usleep(tick)
            let ending = poolStopped.load(ordering: .relaxed) && liveThreads.load(ordering: .relaxed) == 0
            let now = SystemClock.monotonicNanoseconds()
            let cancelled = cancelledAt.load(ordering: .relaxed)
            for slot in slots.withLock({ $0 }) {
                let key = ObjectIdentifier(slot)
                let finding = slot.inspect { generation, busy, limit in
                    var last = seen[key] ?? Seen(generation: generation, since: now)
                    if last.generation != generation { last = Seen(generation: generation, since: now) }
                    seen[key] = last
                    guard busy else { return .none }
                    if now - last.since >= limit { return .stuck(since: last.since, limit: limit) }
                    if cancelled != 0, now - max(last.since, cancelled) >= Self.cancelGrace.clampedNanoseconds {
                        return .lingering
                    }
                    return .none
                }
                switch finding {
                case .none:
                    break
                case let .stuck(step, limit):
                    give(.failed(path: step.path, reason: StepDeadline.problem(step, limit: .nanoseconds(Int64(limit)))))
                case .lingering:
                    give(.abandoned)
                }
            }
            if ending { return }
        }
    }
}

/// One pool thread's notes for the watch: the step it is in, and how far it got.
final class WalkSlot: @unchecked Sendable {
    // @unchecked: `state` is in `Locked`, `generation` is atomic, `watch` is immutable.
    private struct State {
        var busy = false
        var kind = WalkStepKind.listing(.source)
        var directory: MirrorDirectory?
        var name: String?
        var limit: UInt64 = 0
        /// The `StuckThreads` identity under which the thread is counted stuck, and the
        /// generation it was stuck at.
        var stuckID: Int?
        var stuckGeneration: UInt64 = 0
    }

    /// What the watch found in a slot.
    enum Finding {
        case none
        /// Stuck in this step, just now left behind.
        case stuck(WalkStep, limit: UInt64)
        /// The run is cancelled and the step has not moved on within the grace.
        case lingering
    }

    /// Bumped by every step and pulse; only the slot's thread writes it.
    private let generation = Atomic<UInt64>(0)
    private let state = Locked(State())
    unowned let watch: WalkWatch

    fileprivate init(watch: WalkWatch) {
        self.watch = watch
    }

    /// Makes this the calling thread's slot.
    func enter() {
        pthread_setspecific(WalkWatch.slotKey, Unmanaged.passUnretained(self).toOpaque())
    }

    fileprivate func begin(_ kind: WalkStepKind, _ name: String?, in directory: MirrorDirectory?, bytes: Int64) throws(MirrorFailure) {
        let limit = watch.limit(kind, bytes: bytes)
        let returned: Int? = state.withLock { state in
            state.busy = true
            state.kind = kind
            if let directory { state.directory = directory }
            state.name = name
            state.limit = limit
            generation.wrappingAdd(1, ordering: .relaxed)
            return state.stuckID.take()
        }
        if let returned { watch.stuck.finish(returned) }
        if watch.isUnwanted { throw .cancelled }
        if !watch.stuck.isEmpty {
            let step = state.withLock { WalkStep(kind, $0.directory, name, in: watch) }
            if let refusal = watch.stuck.refusal(toTry: step, by: -1) {
                watch.give(.failed(path: refusal.at, reason: refusal.problem))
                throw .notTried(refusal.problem)
            }
        }
    }

    fileprivate func pulse() {
        generation.wrappingAdd(1, ordering: .relaxed)
    }

    /// The thread is between jobs: no step, and if it was stuck, it is no more.
    func idle() {
        let returned: Int? = state.withLock { state in
            state.busy = false
            state.directory = nil
            state.name = nil
            return state.stuckID.take()
        }
        if let returned { watch.stuck.finish(returned) }
    }

    /// The watch's look: `judge` gets the generation, whether a step is under way and its
    /// limit, and says whether it is stuck (then the thread is counted in `StuckThreads`,
    /// once per stuck step) or lingers after a cancellation.
    fileprivate func inspect(_ judge: (UInt64, Bool, UInt64) -> StuckJudgement) -> Finding {
        var returned: Int?
        let finding: Finding = state.withLock { state in
            let current = generation.load(ordering: .relaxed)
            if state.stuckID != nil, state.stuckGeneration != current { returned = state.stuckID.take() }
            switch judge(current, state.busy, state.limit) {
            case .none:
                return .none
            case let .stuck(since, limit):
                guard state.stuckID == nil else { return .none }  // counted already
                let step = WalkStep(state.kind, state.directory, state.name, in: watch)
                let id = watch.stuck.newID()
                state.stuckID = id
                state.stuckGeneration = current
                // Under the slot's lock, so that the thread's return (`begin`, `idle`) is never
                // seen before it was counted stuck.
                watch.stuck.leave(id, paths: step.paths, purpose: WalkWatch.purpose, since: since)
                return .stuck(step, limit: limit)
            case .lingering:
                return state.stuckID == nil ? .lingering : .none
            }
        }
        if let returned { watch.stuck.finish(returned) }
        return finding
    }
}

/// What the watch's look at a slot concludes (`WalkSlot.inspect`).
enum StuckJudgement {
    case none
    case stuck(since: UInt64, limit: UInt64)
    case lingering
}
