import Glibc

/// A joinable pthread, for tests that need more real threads than the cooperative pool has.
final class Thread: @unchecked Sendable {  // the body is set once, before start
    private let body: @Sendable () -> Void
    private var handle = pthread_t()

    init(_ body: @escaping @Sendable () -> Void) { self.body = body }

    func start() {
        let context = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&handle, nil, { raw in
            let thread = Unmanaged<Thread>.fromOpaque(raw!).takeRetainedValue()
            thread.body()
            return nil
        }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
    }

    func join() { pthread_join(handle, nil) }
}
