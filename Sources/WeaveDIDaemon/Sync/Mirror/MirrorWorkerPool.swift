import Glibc
import WeaveDI
import WeaveDIPosix

/// A task executor with a fixed number of its own threads, on which a run's worker tasks do
/// their blocking file I/O (`read`, `copy_file_range`, `fsync`).
///
/// Worker tasks are added with `executorPreference: pool`, so a run can keep `workers` fsyncs
/// in flight even above the number of cores, and a long run never occupies the cooperative
/// pool the rest of the daemon's tasks need. Jobs run in the order they were enqueued.
final class MirrorWorkerPool: TaskExecutor, @unchecked Sendable {
    // @unchecked: the queue is in `Locked`, the semaphore is thread-safe, and `threads` is
    // written only by init and shutdown, which the owner calls once.

    private struct Queue {
        var jobs: [UnownedJob] = []
        var head = 0
        var stopping = false
    }

    private let queue = Locked(Queue())
    /// Counts jobs queued (plus one per thread at shutdown); threads sleep on it.
    private let available: UnsafeMutablePointer<sem_t>
    private var threads: [PosixThread] = []

    /// Starts `count` threads (at least one).
    init(threads count: Int) throws(Errno) {
        available = .allocate(capacity: 1)
        sem_init(available, 0, 0)
        for _ in 0..<max(1, count) {
            do {
                threads.append(try PosixThread { self.work() })
            } catch {
                shutdown()
                throw error
            }
        }
    }

    deinit {
        sem_destroy(available)
        available.deallocate()
    }

    /// Queues a job of a task that prefers this executor.
    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        queue.withLock { $0.jobs.append(unowned) }
        sem_post(available)
    }

    /// Lets the threads finish the queued jobs, then stops them and waits for them to end.
    /// Call it once, after the tasks that use the pool have finished, and never on a pool thread.
    func shutdown() {
        queue.withLock { $0.stopping = true }
        for _ in threads { sem_post(available) }
        for thread in threads { thread.join() }
        threads = []  // their closures held the pool
    }

    private func work() {
        while true {
            while sem_wait(available) != 0 {}  // EINTR: wait again
            let job: UnownedJob? = queue.withLock { queue in
                guard queue.head < queue.jobs.count else { return nil }
                let job = queue.jobs[queue.head]
                queue.head += 1
                if queue.head == queue.jobs.count {
                    queue.jobs.removeAll(keepingCapacity: true)
                    queue.head = 0
                } else if queue.head >= 1024 && queue.head * 2 >= queue.jobs.count {
                    queue.jobs.removeFirst(queue.head)
                    queue.head = 0
                }
                return job
            }
            guard let job else {
                // A shutdown wake-up: every job enqueued before it has been taken.
                if queue.withLock({ $0.stopping }) { return }
                continue
            }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
