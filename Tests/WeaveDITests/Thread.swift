import Glibc

/// A pthread, for tests that need more real threads than the cooperative pool has: joinable
/// (`start`, then `join`), or detached (`detach`) when the test may have to leave it blocked,
/// as a test of a hang does when it fails.
final class Thread: @unchecked Sendable {  // the body is set once, before start
    private let body: @Sendable () -> Void
    private var handle = pthread_t()

    init(_ body: @escaping @Sendable () -> Void) { self.body = body }

    /// Starts the thread; `join()` it.
    func start() { create(detached: false) }

    /// Starts a thread nobody joins: it ends on its own (the process does not wait for it).
    static func detach(_ body: @escaping @Sendable () -> Void) {
        Thread(body).create(detached: true)
    }

    func join() { pthread_join(handle, nil) }

    private func create(detached: Bool) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        let context = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&handle, &attributes, { raw in
            let thread = Unmanaged<Thread>.fromOpaque(raw!).takeRetainedValue()
            thread.body()
            return nil
        }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
    }
}
