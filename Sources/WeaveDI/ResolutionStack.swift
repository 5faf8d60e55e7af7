#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The services under construction on the current thread, innermost last.
///
/// Factories are synchronous, so a whole build (a factory and everything it resolves) runs on
/// one thread: a thread-local stack sees exactly this resolution's path, and concurrent
/// resolutions on other threads never report false cycles.
final class ResolutionStack {
    struct Frame {
        let containerID: UInt64
        let slot: Int
        let scope: WeaveDI.Scope
        /// The session or request of this build, unretained: `build` holds it for as long as
        /// its frame is open. (A plain value, so that pushing and popping frames retains nothing.)
        let ownerObject: Unmanaged<AnyObject>?
        let ownerIsRequest: Bool

        init(containerID: UInt64, slot: Int, scope: WeaveDI.Scope, owner: ScopeOwner?) {
            self.containerID = containerID
            self.slot = slot
            self.scope = scope
            switch owner {
            case let .session(session)?: ownerObject = .passUnretained(session); ownerIsRequest = false
            case let .request(request)?: ownerObject = .passUnretained(request); ownerIsRequest = true
            case nil: ownerObject = nil; ownerIsRequest = false
            }
        }

        var owner: ScopeOwner? {
            guard let object = ownerObject?.takeUnretainedValue() else { return nil }
            return ownerIsRequest
                ? .request(unsafeDowncast(object, to: Request.self))
                : .session(unsafeDowncast(object, to: Session.self))
        }
    }

    /// The open frames, outermost first.
    private var storage: UnsafeMutablePointer<Frame>
    private var capacity = 32
    private var count = 0

    /// The open frames, outermost first (valid until the next push or pop).
    var frames: UnsafeBufferPointer<Frame> { UnsafeBufferPointer(start: storage, count: count) }

    /// Whether no build is open on this thread.
    var isEmpty: Bool { count == 0 }

    /// The innermost open frame.
    var innermost: Frame? { count == 0 ? nil : storage[count &- 1] }

    /// Opens a frame; balance with `pop()`.
    @inline(__always)
    func push(_ frame: Frame) {
        if count == capacity { grow() }
        (storage + count).initialize(to: frame)
        count &+= 1
    }

    /// Closes the innermost frame.
    @inline(__always)
    func pop() {
        count &-= 1
    }

    private func grow() {
        let bigger = UnsafeMutablePointer<Frame>.allocate(capacity: capacity * 2)
        bigger.moveInitialize(from: storage, count: count)
        storage.deallocate()
        storage = bigger
        capacity *= 2
    }

    /// Room for the values being built on this thread, one per open build, innermost last
    /// (see `reserve`): a factory's result lands here before it is returned, which unspecialized
    /// generic code could otherwise only do with a metadata lookup on every build.
    private let scratch = UnsafeMutableRawPointer.allocate(byteCount: ResolutionStack.scratchCapacity, alignment: 16)
    private var scratchUsed = 0
    private static let scratchCapacity = 16 * 1024

    init() { storage = .allocate(capacity: capacity) }

    deinit {
        storage.deallocate()
        scratch.deallocate()
    }

    /// Memory for one value of `T`, until `unreserve` (calls nest: last reserved, first
    /// unreserved). Falls back to the heap when the scratch area is full.
    @inline(__always)
    func reserve<T>(for type: T.Type) -> (memory: UnsafeMutableRawPointer, mark: Int) {
        let alignment = MemoryLayout<T>.alignment
        let start = (scratchUsed &+ alignment &- 1) & ~(alignment &- 1)
        let end = start &+ MemoryLayout<T>.size
        if alignment <= 16, end <= ResolutionStack.scratchCapacity {
            let mark = scratchUsed
            scratchUsed = end
            return (scratch + start, mark)
        }
        return (.allocate(byteCount: Swift.max(MemoryLayout<T>.size, 1), alignment: alignment), -1)
    }

    /// Gives back what `reserve` returned (its value already moved out or never initialized).
    @inline(__always)
    func unreserve(_ memory: UnsafeMutableRawPointer, mark: Int) {
        if mark < 0 { memory.deallocate() } else { scratchUsed = mark }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { raw in
            if let raw { Unmanaged<ResolutionStack>.fromOpaque(raw).release() }
        }
        precondition(status == 0, "WeaveDI: pthread_key_create failed (\(status))")
        return key
    }()

    /// This thread's stack.
    static var current: ResolutionStack { currentRef.takeUnretainedValue() }

    /// This thread's stack, unretained: it lives as long as the thread. (Read it through
    /// `_withUnsafeGuaranteedRef`, which retains nothing.)
    static var currentRef: Unmanaged<ResolutionStack> {
        if let raw = pthread_getspecific(key) { return Unmanaged<ResolutionStack>.fromOpaque(raw) }
        let stack = Unmanaged.passRetained(ResolutionStack())
        pthread_setspecific(key, stack.toOpaque())
        return stack
    }

    /// The index of a frame building `slot` of container `id`, if one is open.
    func index(of slot: Int, in id: UInt64) -> Int? {
        frames.firstIndex { $0.slot == slot && $0.containerID == id }
    }

    /// The innermost frame with a lifetime of its own (not transient).
    var nearestScoped: Frame? {
        frames.last { $0.scope != .transient }
    }
}
