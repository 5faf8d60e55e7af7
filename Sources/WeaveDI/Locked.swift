#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a pthread mutex.
///
/// Used instead of `Synchronization.Mutex` because ThreadSanitizer models pthread mutexes but
/// not the futex calls `Mutex` makes on Linux, and reports races inside correctly locked code;
/// `swift test --sanitize=thread` must stay clean. Nothing on a read fast path takes a lock.
///
/// `@unchecked Sendable`: `value` is only touched with the mutex held.
package final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Unchecked exclusivity: the mutex already makes every access exclusive.
    @exclusivity(unchecked)
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` on the value with the mutex held.
    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// A pthread mutex that guards state kept elsewhere.
///
/// Not `Locked<()>`: ThreadSanitizer reports the inout access to a zero-sized value as a write
/// at the object's own address, racing with a lock-free read of the object's header on another
/// thread, a false report that stops a sanitized process (exit 66).
///
/// `@unchecked Sendable`: the mutex is the synchronisation; its storage never moves.
package final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the mutex held.
    package func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
