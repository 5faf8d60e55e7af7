#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The builds of shared instances in progress, process-wide: singletons, session- and
/// request-scoped instances, and `InjectedKey` defaults. Each instance has its own gate, so
/// one is built exactly once, while builds of different instances on different threads go on
/// side by side, whatever their factories do.
///
/// A thread that needs an instance another thread is building waits for it. Waits never close
/// a circle unnoticed: before waiting, a thread follows the chain (the builder of what it
/// needs, what that builder waits for, who builds that, …), and if the chain comes back to
/// itself, waiting would never end: it gets the cycle instead (two builds on two threads, each
/// needing what the other is building). A wait the gates cannot see (a factory that blocks on a
/// thread that needs what the factory builds) is reported after `patience` (5 s), and again
/// each time as long again has passed.
///
/// One mutex guards the table; it is held only to look at and change the table, never while a
/// factory runs, a message is logged or a type's name is spelled.
///
/// The table is two short arrays searched from the end, not dictionaries: it holds only the
/// builds in progress right now (a few per thread, one per level of nesting), so a scan is
/// cheaper than hashing a key twice per build, and a build is the common case. It lives behind
/// a pointer, so that reaching it takes no dynamic exclusivity check (a class's stored `var`
/// takes one per access); the mutex is what keeps accesses apart.
///
/// `@unchecked Sendable`: the table is only touched with the mutex held.
final class BuildGates: @unchecked Sendable {
    /// What one gate stands for: an object (a registration, a scope's instances, a key's
    /// state) and a cell of it.
    struct Key: Hashable {
        let object: ObjectIdentifier
        let cell: Int
    }

    /// Waiting for the instance would never end; `path` is the cycle, from an instance this
    /// thread is building back to it (`["A", "B", "A"]`: this thread builds A and needs B,
    /// whose builder waits for A).
    struct Deadlock: Error {
        let path: [String]
    }

    private struct Builder {
        let thread: UInt
        /// The type slot of what it builds (`TypeSlots`), for messages.
        let slot: Int
    }

    /// The builds in progress and the waits, as short arrays (see above).
    private struct Table {
        /// The builder of every instance being built; the newest last.
        var building: [(key: Key, builder: Builder)] = []
        /// What each waiting thread waits for.
        var waiting: [(thread: UInt, key: Key)] = []

        func builder(of key: Key) -> Builder? {
            var index = building.count
            while index > 0 {
                index -= 1
                if building[index].key == key { return building[index].builder }
            }
            return nil
        }

        mutating func removeBuild(of key: Key) {
            // Builds nest, so the one ended is nearly always the newest: the last.
            var index = building.count
            while index > 0 {
                index -= 1
                if building[index].key == key {
                    building.remove(at: index)
                    return
                }
            }
        }

        func awaited(by thread: UInt) -> Key? {
            waiting.first { $0.thread == thread }?.key
        }

        mutating func setAwaited(_ key: Key?, by thread: UInt) {
            if let index = waiting.firstIndex(where: { $0.thread == thread }) {
                if let key { waiting[index].key = key } else { waiting.remove(at: index) }
            } else if let key {
                waiting.append((thread, key))
            }
        }
    }

    static let shared = BuildGates()

    /// How long a thread waits before it says it is still waiting (and again each time as long
    /// again has passed).
    let patience: Duration
    /// Says it; the shared gates log an error.
    private let report: @Sendable (String) -> Void

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let finished: UnsafeMutablePointer<pthread_cond_t>
    private let table: UnsafeMutablePointer<Table>

    init(
        patience: Duration = .seconds(5),
        report: @escaping @Sendable (String) -> Void = { WeaveDILog.log(.error, $0) }
    ) {
        self.patience = patience
        self.report = report
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        finished = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if os(Linux)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(finished, &attributes)
        pthread_condattr_destroy(&attributes)
        table = .allocate(capacity: 1)
        table.initialize(to: Table())
    }

    deinit {
        table.deinitialize(count: 1)
        table.deallocate()
        pthread_cond_destroy(finished)
        finished.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Waits until `done` says the instance exists (false: the caller reads it) or this thread
    /// may build it (true: the caller builds it, publishes it so that `done` finds it, and
    /// calls `leave(key)` whether the build succeeded or not). `key` stands for an instance of
    /// the type in `slot`.
    ///
    /// `done` is asked first and again after each wait, with the table's mutex held: it must
    /// only look (atomics, a scope's own lock), never build or log. When a build fails, nothing
    /// is published and the next waiting thread builds it itself. `deadlock` makes the error
    /// for a cycle across threads.
    func enter<E: Error>(
        _ key: Key, slot: Int, done: () throws(E) -> Bool, deadlock: (Deadlock) -> E
    ) throws(E) -> Bool {
        let me = Self.currentThread()
        pthread_mutex_lock(mutex)
        var waitStarted: timespec? = nil
        var nextReport = patience
        while true {
            let found: Bool
            do {
                found = try done()
            } catch {
                pthread_mutex_unlock(mutex)
                throw error
            }
            if found {
                pthread_mutex_unlock(mutex)
                return false
            }
            guard let builder = table.pointee.builder(of: key) else { break }
            if let slots = cycle(waitingFor: key, thread: me) {
                pthread_mutex_unlock(mutex)
                throw deadlock(Deadlock(path: ResolutionStack.names(of: slots)))
            }
            let started = waitStarted ?? Self.monotonicNow()
            waitStarted = started
            table.pointee.setAwaited(key, by: me)
            var deadline = Self.adding(nextReport, to: started)
            let status = pthread_cond_timedwait(finished, mutex, &deadline)
            table.pointee.setAwaited(nil, by: me)
            if status == ETIMEDOUT, table.pointee.builder(of: key)?.thread == builder.thread {
                pthread_mutex_unlock(mutex)
                let name = TypeSlots.shared.name(ofSlot: builder.slot)
                report(
                    "still waiting after \(nextReport) for \(name), which another thread is building; "
                        + "if its factory waits for a thread that needs \(name), this never ends")
                nextReport += patience
                pthread_mutex_lock(mutex)
            }
        }
        table.pointee.building.append((key, Builder(thread: me, slot: slot)))
        pthread_mutex_unlock(mutex)
        return true
    }

    /// Ends this thread's build of `key` (after `enter` returned true), published or failed,
    /// and wakes the threads waiting for a build.
    func leave(_ key: Key) {
        pthread_mutex_lock(mutex)
        table.pointee.removeBuild(of: key)
        if !table.pointee.waiting.isEmpty { pthread_cond_broadcast(finished) }
        pthread_mutex_unlock(mutex)
    }

    /// The cycle that waiting for `key` on `thread` would close, as type slots, or nil: the
    /// chain of builders and what they wait for, followed until it ends or comes back to
    /// `thread`.
    private func cycle(waitingFor key: Key, thread: UInt) -> [Int]? {
        var slots: [Int] = []
        var current = key
        while let builder = table.pointee.builder(of: current), slots.count <= table.pointee.building.count {
            slots.append(builder.slot)
            if builder.thread == thread { return [builder.slot] + slots }
            guard let next = table.pointee.awaited(by: builder.thread) else { return nil }
            current = next
        }
        return nil
    }

    private static func currentThread() -> UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }

    private static func monotonicNow() -> timespec {
        var now = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_MONOTONIC, &now)
        #else
        clock_gettime(CLOCK_REALTIME, &now)
        #endif
        return now
    }

    private static func adding(_ duration: Duration, to time: timespec) -> timespec {
        let (seconds, attoseconds) = duration.components
        var result = time
        result.tv_sec += Int(seconds)
        result.tv_nsec += Int(attoseconds / 1_000_000_000)
        if result.tv_nsec >= 1_000_000_000 {
            result.tv_sec += 1
            result.tv_nsec -= 1_000_000_000
        }
        return result
    }
}
