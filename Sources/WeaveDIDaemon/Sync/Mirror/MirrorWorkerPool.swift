import Glibc
import WeaveDI
import WeaveDIPosix

/// A task executor with a fixed number of its own threads, on which a run's worker tasks do
/// their blocking file I/O (`read`, `copy_file_range`, `fsync`).
///
/// Worker tasks are added with `executorPreference: pool`, so a run can keep `workers` fsyncs
/// in flight even above the number of cores, and a long run never occupies the cooperative
/// pool the rest of the daemon's tasks need. Jobs run in the order they were enqueued.
///
/// Each thread notes its steps in a slot of the run's `WalkWatch`. A run whose worker is stuck
/// in a call on a file system that does not answer lets the pool go with `abandon`, which
/// never waits for a thread: each ends once its job returns, if ever.
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
    /// The run's watchdog, which holds a slot per thread.
    let watch: WalkWatch

    /// Starts `count` threads (at least one), each with a slot of `watch`.
    init(threads count: Int, watch: WalkWatch) throws(Errno) {
        available = .allocate(capacity: 1)
        sem_init(available, 0, 0)
        self.watch = watch
        for _ in 0..<max(1, count) {
            let slot = watch.makeSlot()
            do {
                threads.append(try PosixThread { self.work(slot) })
            } catch {
                watch.threadEnded()
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
        let unownedJob = UnownedJob(job)
        let queued = queue.withLock { queue in
            guard !queue.stopping else { return false }
            queue.jobs.append(unownedJob)
            return true
        }
        if queued {
            sem_post(available)
            return
        }
        // Enqueued after `abandon` (a task added as its run was given up): its threads may be
        // gone or stuck, so the job gets a thread of its own, watched as theirs are.
        let slot = watch.makeSlot()
        do {
            try PosixThread.detach {
                slot.enter()
                unownedJob.runSynchronously(on: self.asUnownedTaskExecutor())
                slot.idle()
                self.watch.threadEnded()
            }
        } catch {
            // No thread to be had: the job runs on Swift's shared pool rather than never (which
            // would leave its task hanging). Its task belongs to a run given up on, and is
            // cancelled: it stops at its next check, between files or chunks.
            watch.threadEnded()
            globalConcurrentExecutor.enqueue(ExecutorJob(unownedJob))
        }
    }

    /// Lets the threads finish the queued jobs, then stops them and waits for them to end.
    /// Call it once, after the tasks that use the pool have finished, and never on a pool thread.
    func shutdown() {
        queue.withLock { $0.stopping = true }
        for _ in threads { sem_post(available) }
        for thread in threads { thread.join() }
        threads = []  // their closures held the pool
        watch.poolStopping()
    }

    /// Lets the threads go without waiting for them: each ends once the queued jobs are taken
    /// and its own job has returned (a thread stuck on a dead mount, when its call returns, if
    /// ever). Jobs enqueued afterwards get threads of their own. Call it once, instead of
    /// `shutdown`, never on a pool thread.
    func abandon() {
        queue.withLock { $0.stopping = true }
        for _ in threads { sem_post(available) }
        for thread in threads { thread.detach() }
        threads = []
        watch.poolStopping()
    }

    private func work(_ slot: WalkSlot) {
        slot.enter()
        defer { watch.threadEnded() }
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
            slot.idle()
        }
    }
}
