import Foundation
import Glibc
import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// The deadline on work that reads the file system (here, mostly the configuration's load): a
/// step that blocks, as `realpath` does on a dead NFS mount, fails the work with its path and
/// is left behind on its own thread.
@Suite struct StepDeadlineTests {
    /// A step that blocks until opened, as a call on a dead mount would for ever; it opens by
    /// itself after `giveUp`, so that a load without a deadline ends the test instead of hanging it.
    /// The tests open their gates themselves: `giveUp` is far beyond what a busy machine can
    /// add to a wait, so that a gate never opens by itself while its test runs.
    final class Gate: @unchecked Sendable {  // a semaphore is made to be shared
        private let semaphore: UnsafeMutablePointer<sem_t>
        private let giveUp: Duration

        init(giveUp: Duration = .seconds(30)) {
            semaphore = .allocate(capacity: 1)
            sem_init(semaphore, 0, 0)
            self.giveUp = giveUp
        }

        deinit {
            sem_destroy(semaphore)
            semaphore.deallocate()
        }

        func block() {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            var until = timespec(tv_sec: now.tv_sec + Int(giveUp.components.seconds), tv_nsec: now.tv_nsec)
            while sem_timedwait(semaphore, &until) != 0, errno == EINTR {}
        }

        func open() { sem_post(semaphore) }
    }

    final class Token: Sendable {}

    static let file = "/etc/weavedi/weavedid.json"
    static let reading = LoadStep("reading", file: file, fieldPath: nil, path: file)
    static let stuck = LoadStep("resolving", file: file, fieldPath: "sync.jobs[1].destination", path: "/mnt/nfs/backup")
    /// A first step without a deadline: the work's thread may start late on a busy machine,
    /// and the deadline starts with the step the test times, which the work notes itself.
    static let untimed = LoadStep.checking(file: file)

    /// A load with `limit`, from step `first`; its stuck threads are counted apart from the
    /// process's and the other tests'.
    static func load<Value: Sendable>(
        limit: Duration, first: LoadStep = reading, _ work: @escaping StepDeadline.Work<LoadStep, Value>
    ) throws(ConfigurationError) -> Value {
        try StepDeadline.run(limit: limit, first: first, for: "a configuration load", stuck: StuckThreads(limit: 8), work)
    }

    /// The async form of `load(limit:_:)`.
    static func load<Value: Sendable>(
        limit: Duration, _ work: @escaping StepDeadline.Work<LoadStep, Value>
    ) async throws(ConfigurationError) -> Value {
        try await StepDeadline.run(limit: limit, first: reading, for: "a configuration load", stuck: StuckThreads(limit: 8), work)
    }

    /// `work`'s error from a load with `limit`, and how long it took.
    func failure(
        limit: Duration, first: LoadStep = reading, _ work: @escaping StepDeadline.Work<LoadStep, Int>
    ) -> (error: ConfigurationError?, took: Duration) {
        let start = ContinuousClock.now
        do {
            let value = try Self.load(limit: limit, first: first, work)
            Issue.record("the load returned \(value)")
            return (nil, ContinuousClock.now - start)
        } catch {
            return (error, ContinuousClock.now - start)
        }
    }

    @Test func aStepThatDoesNotAnswer_failsTheLoadWithItsPath_andIsLeftBehind() async throws {
        let gate = Gate()
        weak var released: Token?
        let (error, took) = {
            let token = Token()
            released = token
            return failure(limit: .milliseconds(300), first: Self.untimed) { note throws(ConfigurationError) in
                try note(Self.stuck)
                gate.block()
                _ = token
                return 1
            }
        }()
        #expect(error?.description
            == #"/etc/weavedi/weavedid.json: sync.jobs[1].destination: resolving "/mnt/nfs/backup" did not answer within 0.3 s (is its file system responding?)"#)
        #expect(error?.errno == ETIMEDOUT)
        // Not the file's fault: the start exits 75 (EX_TEMPFAIL), which systemd restarts, not 78.
        #expect(error.map(DaemonMain.exitStatus(for:)) == 75)
        #expect(DaemonMain.exitStatus(for: ConfigurationError(file: "f", fieldPath: "x", problem: "bad", errno: EINVAL)) == 78)
        // The deadline ended the wait (not the step: the gate is still closed), having waited
        // it out.
        #expect(took >= .milliseconds(300), "\(took)")
        // The step is still stuck, holding what it uses; once it returns, it ends unseen and lets go.
        #expect(released != nil)
        gate.open()
        let deadline = ContinuousClock.now + .seconds(30)
        while released != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(released == nil)
    }

    @Test func theFileItself_isNamedWhenItsReadDoesNotAnswer() {
        let gate = Gate()
        defer { gate.open() }
        let (error, _) = failure(limit: .milliseconds(200)) { _ throws(ConfigurationError) in
            gate.block()
            return 1
        }
        #expect(error?.description
            == "/etc/weavedi/weavedid.json: reading the file did not answer within 0.2 s (is its file system responding?)")
        #expect(error?.fieldPath == nil)
    }

    @Test func eachStep_hasTheWholeLimit() throws {
        // Five steps of 500 ms: 2.5 s in all, more than the limit of 2 s, but none is late (each
        // has 1.5 s to spare, for a busy machine).
        let value = try Self.load(limit: .seconds(2)) { note throws(ConfigurationError) in
            for index in 0..<5 {
                try note(LoadStep("resolving", file: Self.file, fieldPath: "sync.jobs[\(index)].source", path: "/srv/\(index)"))
                usleep(500_000)
            }
            return 42
        }
        #expect(value == 42)
    }

    @Test func checkingWhatWasRead_hasNoDeadline_andTheStepAfterItHasItsOwn() {
        // Checking for twice the limit: work in memory, not a file system that does not answer.
        #expect(throws: Never.self) {
            let value = try Self.load(limit: .milliseconds(300), first: Self.untimed) { note throws(ConfigurationError) in
                try note(.checking(file: Self.file))
                usleep(600_000)
                return 42
            }
            #expect(value == 42)
        }
        // The step after it is timed from when it begins.
        let gate = Gate()
        defer { gate.open() }
        let (error, took) = failure(limit: .milliseconds(300), first: Self.untimed) { note throws(ConfigurationError) in
            try note(.checking(file: Self.file))
            usleep(400_000)
            try note(Self.stuck)
            gate.block()
            return 1
        }
        #expect(error?.description
            == #"/etc/weavedi/weavedid.json: sync.jobs[1].destination: resolving "/mnt/nfs/backup" did not answer within 0.3 s (is its file system responding?)"#)
        #expect(took >= .milliseconds(700), "\(took)")
    }

    @Test func theLoadsOwnErrors_passThrough() {
        let refused = ConfigurationError(file: Self.file, fieldPath: "health.interval", problem: "expected a number")
        #expect(throws: refused) {
            try Self.load(limit: .seconds(5)) { _ throws(ConfigurationError) -> Int in throw refused }
        }
    }

    @Test func theAsyncForm_waitsWithoutHoldingTheCooperativePool() async throws {
        // More loads at once than the pool has threads, each of whose steps waits until all of
        // them wait. Were each waited for on a pool thread, the loads past the pool's width
        // would start only once the first had timed out, which would fail. Suspended, they all
        // wait at the same time, and each gets its value. (The limit leaves a busy machine, whose
        // other tests may keep this one's tasks off the pool for a while, 30 s to start them.)
        let loads = 2 * ProcessInfo.processInfo.activeProcessorCount + 2
        let gate = Gate(giveUp: .seconds(60))
        defer { for _ in 0..<loads { gate.open() } }
        let waiting = Locked(0)
        let outcomes = await withTaskGroup(of: Result<Int, ConfigurationError>.self) { group in
            for index in 0..<loads {
                group.addTask {
                    do throws(ConfigurationError) {
                        return .success(try await Self.load(limit: .seconds(30)) { note throws(ConfigurationError) in
                            try note(Self.stuck)
                            // The last one to wait opens the gate for all.
                            if waiting.withLock({ $0 += 1; return $0 }) == loads { for _ in 0..<loads { gate.open() } }
                            gate.block()
                            return index
                        })
                    } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.compactMap { try? $0.get() }.sorted() == Array(0..<loads), "\(outcomes)")
    }

    @Test func aCancelledCaller_stopsWaitingAtOnce() async throws {
        // The step blocks until its gate opens by itself (60 s: however late this task gets to
        // cancel), far within the limit: a caller that waited for it would get its value.
        // Cancelled, it gets the step's error instead.
        let gate = Gate(giveUp: .seconds(60))
        defer { gate.open() }
        let blocked = Locked(false)
        let load = Task { () -> ConfigurationError? in
            do throws(ConfigurationError) {
                _ = try await Self.load(limit: .seconds(120)) { note throws(ConfigurationError) in
                    try note(Self.stuck)
                    blocked.withLock { $0 = true }
                    gate.block()
                    return 1
                }
                return nil
            } catch {
                return error
            }
        }
        while !blocked.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        load.cancel()
        let error = await load.value
        #expect(error?.description
            == #"/etc/weavedi/weavedid.json: sync.jobs[1].destination: resolving "/mnt/nfs/backup" was not waited for: cancelled"#)
        #expect(error?.errno == ECANCELED)
    }

    @Test func theFilesLoad_notesThatItChecksWhatItRead() throws {
        let directory = try ConfigurationDirectory()
        let file = try directory.write(#"{"sync": {"jobs": [{"name": "a", "source": "/srv/a", "destination": "/backup/a"}]}}"#)
        let noted = Locked<[LoadStep]>([])
        _ = try DaemonConfiguration.resolve(explicitPath: file, environment: systemdEnvironment, workingDirectory: testWorkingDirectory) {
            step in noted.withLock { $0.append(step) }
        }
        // Reading the file is the load's first step (`DaemonContext`); decoding and checking
        // what was read waits on no file system: no deadline.
        #expect(noted.withLock { $0 } == [.checking(file: file)])
    }

    @Test func theMirrorTreesCheck_notesEachPath_soThatOneThatHangsIsNamed() throws {
        let configuration = try loadConfiguration(#"""
            {"control": {"socket": "/run/weavedi-test/control.sock"}, "sync": {"jobs": [
              {"name": "a", "source": "/srv/a", "destination": "/backup/a"},
              {"name": "b", "source": "/srv/b", "destination": "/mnt/nfs/b"}]}}
            """#)
        let file = try #require(configuration.filePath)
        let noted = Locked<[LoadStep]>([])
        try configuration.checkMirrorTreesOnDisk { step in noted.withLock { $0.append(step) } }
        #expect(noted.withLock { $0 } == [
            LoadStep("reading", file: file, fieldPath: nil, path: "/proc/self/mountinfo"),
            LoadStep("resolving", file: file, fieldPath: "control.socket", path: "/run/weavedi-test/control.sock"),
            LoadStep("resolving", file: file, fieldPath: "stateDirectory", path: "/var/lib/weavedi"),
            LoadStep("resolving", file: file, fieldPath: "stateDirectory", path: "/var/lib/weavedi/weavedid.lock"),
            LoadStep("resolving", file: file, fieldPath: "stateDirectory", path: "/var/lib/weavedi/jobs.json"),
            LoadStep("resolving", file: file, fieldPath: "stateDirectory", path: "/var/lib/weavedi/jobs.json.corrupt"),
            LoadStep("resolving", file: file, fieldPath: "sync.jobs[0].source", path: "/srv/a"),
            LoadStep("resolving", file: file, fieldPath: "sync.jobs[0].destination", path: "/backup/a"),
            // Comparing the roots found waits on no file system: no deadline.
            .checking(file: file),
            LoadStep("resolving", file: file, fieldPath: "sync.jobs[1].source", path: "/srv/b"),
            LoadStep("resolving", file: file, fieldPath: "sync.jobs[1].destination", path: "/mnt/nfs/b"),
            .checking(file: file),
        ])
        // The resolution of b's destination hangs, as on a dead mount; each step before it has
        // 2 s, plenty on a busy machine.
        let gate = Gate()
        defer { gate.open() }
        #expect(throws: ConfigurationError(
            file: file, fieldPath: "sync.jobs[1].destination",
            problem: #"resolving "/mnt/nfs/b" did not answer within 2 s (is its file system responding?)"#, errno: ETIMEDOUT)
        ) {
            try Self.load(limit: .seconds(2), first: Self.untimed) { note throws(ConfigurationError) in
                try configuration.checkMirrorTreesOnDisk { step throws(ConfigurationError) in
                    try note(step)
                    if step.path == "/mnt/nfs/b" { gate.block() }
                }
            }
        }
    }
}
