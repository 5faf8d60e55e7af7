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
/// needing what the other is building), named by the requests that make it: a waiting thread
/// leaves its resolution stack in the table, and the cycle's path takes each thread's open
/// builds from the one whose gate it holds (`Deadlock`). A wait the gates cannot see (a factory that blocks on a
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
    /// thread is building back to it, each type one that the type before it asked for: this
    /// thread's open builds from that instance on, then what it needs, and for each thread in
    /// the chain, its open builds from the instance it builds to its innermost, whose factory
    /// asked for what that thread waits for (`["A", "X", "B", "Y", "A"]`: this thread builds A,
    /// whose factory needs X, whose factory needs B; another thread builds B, whose factory
    /// needs Y, whose factory waits for A).
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
        /// What each waiting thread waits for, and its resolution stack: its open builds, which
        /// do not change while it waits (it is blocked, or holds the mutex), read by `cycle`.
        var waiting: [(thread: UInt, key: Key, stack: UnsafeMutablePointer<ResolutionStack.State>)] = []

        func builder(of key: Key) -> Builder? {
            var index = building.count
            while index > 0 {
                index -= 1
                if building[index].key == key { return building[index].builder }
            }
            return nil
        }

        /// Where the build of `key` is in `building`.
        func index(of key: Key) -> Int? {
            var index = building.count
            while index > 0 {
                index -= 1
                if building[index].key == key { return index }
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

        func awaited(by thread: UInt) -> (key: Key, stack: UnsafeMutablePointer<ResolutionStack.State>)? {
            waiting.first { $0.thread == thread }.map { ($0.key, $0.stack) }
        }

        mutating func setAwaited(_ key: Key, by thread: UInt, stack: UnsafeMutablePointer<ResolutionStack.State>) {
            if let index = waiting.firstIndex(where: { $0.thread == thread }) {
                waiting[index].key = key
                waiting[index].stack = stack
            } else {
                waiting.append((thread, key, stack))
            }
        }

        mutating func removeAwaited(by thread: UInt) {
            if let index = waiting.firstIndex(where: { $0.thread == thread }) { waiting.remove(at: index) }
        }

        /// The types of the builds open on `stack` from the one that holds the gate at `index`
        /// in `building` (of that thread) to the innermost: the frame of that build is found by
        /// its type, counted from the innermost past as many frames of the type (not transient)
        /// as that thread holds gates of the type opened later. (Builds of one type nest on one
        /// thread only across containers, or through `makeFresh`; a frame of the type found
        /// too late still starts a path of real requests, a shorter one.) Just the type if no
        /// frame is found.
        func openBuilds(from index: Int, on stack: UnsafeMutablePointer<ResolutionStack.State>) -> [Int] {
            let builder = building[index].builder
            var later = 0
            for newer in building[(index + 1)...]
            where newer.builder.thread == builder.thread && newer.builder.slot == builder.slot {
                later += 1
            }
            let frames = ResolutionStack(state: stack).frames
            var start = frames.count
            while start > 0 {
                start -= 1
                guard frames[start].slot == builder.slot, frames[start].scope != .transient else { continue }
                if later == 0 { return frames[start...].map(\.slot) }
                later -= 1
            }
            return [builder.slot]
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
            // About to wait: only here is this thread's stack looked at.
            let stack = ResolutionStack.current.state
            if let slots = cycle(waitingFor: key, thread: me, stack: stack) {
                pthread_mutex_unlock(mutex)
                throw deadlock(Deadlock(path: ResolutionStack.names(of: slots)))
            }
            let started = waitStarted ?? Self.monotonicNow()
            waitStarted = started
            table.pointee.setAwaited(key, by: me, stack: stack)
            var deadline = Self.adding(nextReport, to: started)
            let status = pthread_cond_timedwait(finished, mutex, &deadline)
            table.pointee.removeAwaited(by: me)
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

    /// The cycle that waiting for `key` on `thread` (whose resolution stack is `stack`) would
    /// close, as type slots (`Deadlock.path`), or nil: the chain of builders and what they wait
    /// for, followed until it ends or comes back to `thread`. Each thread's part of the path is
    /// copied from its stack here, under the mutex, while it cannot change; only once the chain
    /// is known to come back (most waits close no cycle, and copy nothing).
    private func cycle(
        waitingFor key: Key, thread: UInt, stack: UnsafeMutablePointer<ResolutionStack.State>
    ) -> [Int]? {
        var current = key
        var hops = 0
        while true {
            guard let builder = table.pointee.builder(of: current), hops <= table.pointee.building.count else { return nil }
            hops += 1
            if builder.thread == thread { break }
            guard let next = table.pointee.awaited(by: builder.thread) else { return nil }
            current = next.key
        }
        var others: [Int] = []
        current = key
        while true {
            let index = table.pointee.index(of: current)!
            let builder = table.pointee.building[index].builder
            if builder.thread == thread { return table.pointee.openBuilds(from: index, on: stack) + others + [builder.slot] }
            let next = table.pointee.awaited(by: builder.thread)!
            others += table.pointee.openBuilds(from: index, on: next.stack)
            current = next.key
        }
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
