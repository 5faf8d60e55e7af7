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
    final class Gate: @unchecked Sendable {  // a semaphore is made to be shared
        private let semaphore: UnsafeMutablePointer<sem_t>
        private let giveUp: Duration

        init(giveUp: Duration = .seconds(4)) {
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

    /// A load with `limit`; its stuck threads are counted apart from the process's and the
    /// other tests'.
    static func load<Value: Sendable>(
        limit: Duration, _ work: @escaping StepDeadline.Work<LoadStep, Value>
    ) throws(ConfigurationError) -> Value {
        try StepDeadline.run(limit: limit, first: reading, for: "a configuration load", stuck: StuckThreads(limit: 8), work)
    }

    /// The async form of `load(limit:_:)`.
    static func load<Value: Sendable>(
        limit: Duration, _ work: @escaping StepDeadline.Work<LoadStep, Value>
    ) async throws(ConfigurationError) -> Value {
        try await StepDeadline.run(limit: limit, first: reading, for: "a configuration load", stuck: StuckThreads(limit: 8), work)
    }

    /// `work`'s error from a load with `limit`, and how long it took.
    func failure(
        limit: Duration, _ work: @escaping StepDeadline.Work<LoadStep, Int>
    ) -> (error: ConfigurationError?, took: Duration) {
        let start = ContinuousClock.now
        do {
            let value = try Self.load(limit: limit, work)
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
            return failure(limit: .milliseconds(300)) { note throws(ConfigurationError) in
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
        #expect(took >= .milliseconds(300) && took < .seconds(3), "\(took)")
        // The step is still stuck, holding what it uses; once it returns, it ends unseen and lets go.
        #expect(released != nil)
        gate.open()
        let deadline = ContinuousClock.now + .seconds(5)
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
        // Six steps of 100 ms: 600 ms in all, more than the limit of 300 ms, but none is late.
        let value = try Self.load(limit: .milliseconds(300)) { note throws(ConfigurationError) in
            for index in 0..<6 {
                try note(LoadStep("resolving", file: Self.file, fieldPath: "sync.jobs[\(index)].source", path: "/srv/\(index)"))
                usleep(100_000)
            }
            return 42
        }
        #expect(value == 42)
    }

    @Test func checkingWhatWasRead_hasNoDeadline_andTheStepAfterItHasItsOwn() {
        // Checking for twice the limit: work in memory, not a file system that does not answer.
        #expect(throws: Never.self) {
            let value = try Self.load(limit: .milliseconds(300)) { note throws(ConfigurationError) in
                try note(.checking(file: Self.file))
                usleep(600_000)
                return 42
            }
            #expect(value == 42)
        }
        // The step after it is timed from when it begins.
        let gate = Gate()
        defer { gate.open() }
        let (error, took) = failure(limit: .milliseconds(300)) { note throws(ConfigurationError) in
            try note(.checking(file: Self.file))
            usleep(400_000)
            try note(Self.stuck)
            gate.block()
            return 1
        }
        #expect(error?.description
            == #"/etc/weavedi/weavedid.json: sync.jobs[1].destination: resolving "/mnt/nfs/backup" did not answer within 0.3 s (is its file system responding?)"#)
        #expect(took >= .milliseconds(700) && took < .seconds(3), "\(took)")
    }

    @Test func theLoadsOwnErrors_passThrough() {
        let refused = ConfigurationError(file: Self.file, fieldPath: "health.interval", problem: "expected a number")
        #expect(throws: refused) {
            try Self.load(limit: .seconds(5)) { _ throws(ConfigurationError) -> Int in throw refused }
        }
    }

    @Test func theAsyncForm_waitsWithoutHoldingTheCooperativePool() async throws {
        // More stuck loads at once than the pool has threads. Were each waited for on a pool
        // thread, the last would start only once the first had ended; suspended, they all wait
        // at the same time.
        let loads = 2 * ProcessInfo.processInfo.activeProcessorCount + 2
        let gate = Gate()
        defer { for _ in 0..<loads { gate.open() } }
        let outcomes = await withTaskGroup(of: (ConfigurationError?, started: ContinuousClock.Instant, ended: ContinuousClock.Instant).self) { group in
            for _ in 0..<loads {
                group.addTask {
                    let started = ContinuousClock.now
                    do throws(ConfigurationError) {
                        _ = try await Self.load(limit: .seconds(2)) { note throws(ConfigurationError) in
                            try note(Self.stuck)
                            gate.block()
                            return 1
                        }
                        return (nil, started, ContinuousClock.now)
                    } catch {
                        return (error, started, ContinuousClock.now)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.count == loads)
        #expect(outcomes.allSatisfy { $0.0?.problem == #"resolving "/mnt/nfs/backup" did not answer within 2 s (is its file system responding?)"# })
        let lastStart = try #require(outcomes.map(\.started).max())
        let firstEnd = try #require(outcomes.map(\.ended).min())
        #expect(lastStart < firstEnd, "a load started \(lastStart - firstEnd) after another had ended")
    }

    @Test func aCancelledCaller_stopsWaitingAtOnce() async throws {
        // The step blocks until its gate opens by itself (4 s), far within the limit: a caller
        // that waited for it would get its value. Cancelled, it gets the step's error instead.
        let gate = Gate()
        defer { gate.open() }
        let blocked = Locked(false)
        let load = Task { () -> ConfigurationError? in
            do throws(ConfigurationError) {
                _ = try await Self.load(limit: .seconds(30)) { note throws(ConfigurationError) in
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
            LoadStep("resolving", file: file, fieldPath: "sync.jobs[0].source", path: "/srv/a"),
            LoadStep("resolving", file: file, fieldPath: "sync.jobs[0].destination", path: "/backup/a"),
            // Comparing the roots found waits on no file system: no deadline.
            .checking(file: file),
            LoadStep("resolving", file: file, fieldPath: "sync.jobs[1].source", path: "/srv/b"),
            LoadStep("resolving", file: file, fieldPath: "sync.jobs[1].destination", path: "/mnt/nfs/b"),
            .checking(file: file),
        ])
        // The resolution of b's destination hangs, as on a dead mount.
        let gate = Gate()
        defer { gate.open() }
        #expect(throws: ConfigurationError(
            file: file, fieldPath: "sync.jobs[1].destination",
            problem: #"resolving "/mnt/nfs/b" did not answer within 0.3 s (is its file system responding?)"#, errno: ETIMEDOUT)
        ) {
            try Self.load(limit: .milliseconds(300)) { note throws(ConfigurationError) in
                try configuration.checkMirrorTreesOnDisk { step throws(ConfigurationError) in
                    try note(step)
                    if step.path == "/mnt/nfs/b" { gate.block() }
                }
            }
        }
    }
}
