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
        let owner: ScopeOwner?
    }

    /// Unchecked exclusivity: the stack belongs to one thread, and no access to `frames` spans
    /// a call that could reach it again; dynamic checks cost more than the rest of a build.
    @exclusivity(unchecked)
    var frames: [Frame] = []

    init() { frames.reserveCapacity(16) }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { raw in
            if let raw { Unmanaged<ResolutionStack>.fromOpaque(raw).release() }
        }
        precondition(status == 0, "WeaveDI: pthread_key_create failed (\(status))")
        return key
    }()

    /// This thread's stack.
    static var current: ResolutionStack {
        if let raw = pthread_getspecific(key) {
            return Unmanaged<ResolutionStack>.fromOpaque(raw).takeUnretainedValue()
        }
        let stack = ResolutionStack()
        pthread_setspecific(key, Unmanaged.passRetained(stack).toOpaque())
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
