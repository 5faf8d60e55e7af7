import Glibc

/// A joinable operating-system thread, for loops that block in `poll(2)` and must not
/// occupy the cooperative thread pool.
public final class PosixThread: @unchecked Sendable {  // `handle` is written once, before join
    private let body: @Sendable () -> Void
    private var handle = pthread_t()

    /// Creates and starts a thread running `body` (`pthread_create(3)`).
    public init(_ body: @escaping @Sendable () -> Void) throws(Errno) {
        self.body = body
        let context = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&handle, nil, { raw in
            let thread = Unmanaged<PosixThread>.fromOpaque(raw!).takeRetainedValue()
            thread.body()
            return nil
        }, context)
        if status != 0 {
            Unmanaged<PosixThread>.fromOpaque(context).release()
            throw Errno(rawValue: status)
        }
    }

    /// Waits for the thread to end (`pthread_join(3)`); blocks the caller.
    public func join() {
        pthread_join(handle, nil)
    }
}
