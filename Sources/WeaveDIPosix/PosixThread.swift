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

    /// Lets the thread go (`pthread_detach(3)`): nothing will join it, and what it holds is
    /// freed when it ends. For a thread that may never end; call it instead of `join`, once.
    public func detach() {
        pthread_detach(handle)
    }

    /// Starts a thread running `body` and lets it go at once (`detach()`): nothing can wait for
    /// it, and what it holds is freed when `body` returns. For work that may never end, such as a system call on a file system that
    /// no longer answers, which is then abandoned; the process can still exit meanwhile.
    public static func detach(_ body: @escaping @Sendable () -> Void) throws(Errno) {
        try PosixThread(body).detach()
    }
}
