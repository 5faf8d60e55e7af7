import Foundation
import Glibc
import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// Workers from WeaveDI, their bound, checksum comparisons and progress.
@Suite struct MirrorEngineWorkerTests {
    @Test func eachTask_getsAFreshCopier() async throws {
        let fixture = try MirrorFixture()
        // Batches never span directories, and a large file gets a task of its own: 12 + 2 tasks.
        for index in 0..<12 { try fixture.write("src/d\(index)/only.txt", "file \(index)") }
        try fixture.write("src/large/one", [UInt8](repeating: 1, count: 2 << 20))
        try fixture.write("src/large/two", [UInt8](repeating: 2, count: 2 << 20))
        let made = Locked(0)
        let container = WeaveDI.Container.mirrorWorkers { made.withLock { $0 += 1 } }

        let report = await MirrorEngine(settings: fixture.settings(), container: container).run()

        #expect(report.result == .success)
        #expect(report.copied == 14)
        #expect(made.withLock { $0 } == 14)
        // Nothing to copy, no task, no copier.
        #expect(await MirrorEngine(settings: fixture.settings(), container: container).run().unchanged == 14)
        #expect(made.withLock { $0 } == 14)
    }

    @Test func missingWorkerRegistration_failsTheRun() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        let withoutHasher = WeaveDI.Container()
        withoutHasher.register(FileCopier.self, scope: .transient) { FileCopier() }

        let checksum = await MirrorEngine(
            settings: fixture.settings(compare: .checksum), container: withoutHasher
        ).run()
        #expect(checksum.result == .failed)
        #expect(checksum.errors.first?.reason.contains("no FileHasher is registered") == true)
        let empty = await MirrorEngine(settings: fixture.settings(), container: WeaveDI.Container()).run()
        #expect(empty.result == .failed)
        #expect(empty.errors.first?.reason.contains("no FileCopier is registered") == true)
        #expect(fixture.status("dst") == nil)
        // Size and mtime comparisons need no hasher.
        #expect(await MirrorEngine(settings: fixture.settings(), container: withoutHasher).run().result == .success)
    }

    @Test func checksumMode_detectsAChangeWithTheSameSizeAndMtime() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/same.txt", "version 1", mtime: sampleTime())
        try fixture.write("src/mode.txt", "mode only", mode: 0o644, mtime: sampleTime())
        try fixture.write("src/untouched.txt", "untouched", mtime: sampleTime())
        #expect(await fixture.mirror().copied == 3)
        try fixture.write("src/same.txt", "version 2", mtime: sampleTime())  // same size, same mtime
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: fixture.destination + "/mode.txt", 0o600)
        let modeInode = fixture.status("dst/mode.txt")?.inode

        let quick = await fixture.mirror()
        #expect(quick.updated == 1)  // only the mode difference is visible to size and mtime
        #expect(fixture.read("dst/same.txt") == "version 1")
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: fixture.destination + "/mode.txt", 0o600)

        let thorough = await fixture.mirror(compare: .checksum)
        #expect(thorough.result == .success)
        #expect(thorough.updated == 2 && thorough.unchanged == 1)
        #expect(thorough.bytes == 9)  // same.txt copied; mode.txt only fixed
        #expect(fixture.read("dst/same.txt") == "version 2")
        #expect(fixture.status("dst/mode.txt")?.inode == modeInode)
        try fixture.expectExactMirror()
    }

    @Test func progress_isReportedAtMostEvery50ms_andEndsComplete() async throws {
        let fixture = try MirrorFixture()
        for index in 0..<300 { try fixture.write("src/d\(index % 100)/f\(index)", "progress \(index)") }
        try fixture.write("src/big", [UInt8](repeating: 9, count: 3 << 20))
        let reports = Locked<[(ContinuousClock.Instant, MirrorProgress)]>([])
        // 101 tasks of at least 2 ms each: the run lasts long enough for several reports.
        let slow = WeaveDI.Container.mirrorWorkers { usleep(2000) }

        let start = ContinuousClock.now
        let report = await MirrorEngine(settings: fixture.settings(), container: slow).run { progress in
            reports.withLock { $0.append((ContinuousClock.now, progress)) }
        }
        let elapsed = ContinuousClock.now - start

        let seen = reports.withLock { $0 }
        #expect(report.result == .success && report.copied == 301)
        #expect(seen.count >= 3)
        let last = try #require(seen.last?.1)
        #expect(last.filesDone == 301 && last.filesTotal == 301)
        #expect(last.bytesTotal == report.bytes && last.bytesDone == last.bytesTotal)
        let progress = seen.map(\.1)
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0.filesDone <= $1.filesDone && $0.bytesDone <= $1.bytesDone })
        // Throttled: the meter spaces the reports before the final one at least 50 ms apart on
        // its own clock, within the run, so there are at most elapsed / 50 ms of them. (Stamps
        // taken here, after the meter's, can come closer when a thread waits for a core; the
        // spacing itself is checked on a clock the test moves, below.) Unthrottled, there would
        // be one per batch and directory: hundreds.
        #expect(seen.count - 1 <= Int(elapsed / .milliseconds(50)))
    }

    @Test func progressMeter_reportsOncePerInterval_onItsClock() {
        let origin = ContinuousClock.now
        let clock = Locked(origin)
        var meter = ProgressMeter(interval: .milliseconds(50)) { clock.withLock { $0 } }
        var reported: [(Duration, MirrorProgress)] = []
        func tick(at milliseconds: Int) {
            clock.withLock { $0 = origin + .milliseconds(milliseconds) }
            meter.tick { reported.append((clock.withLock { $0 } - origin, $0)) }
        }
        meter.found(files: 3, settled: 1, failed: 1, bytes: 30)
        tick(at: 10)
        tick(at: 49)
        #expect(reported.isEmpty)
        tick(at: 50)
        meter.settled(files: 1, failed: 0, bytes: 10)
        tick(at: 60)
        tick(at: 99)
        tick(at: 130)
        tick(at: 175)
        tick(at: 180)
        #expect(reported.map(\.0) == [.milliseconds(50), .milliseconds(130), .milliseconds(180)])
        #expect(reported.first?.1 == MirrorProgress(filesDone: 1, filesFailed: 1, filesTotal: 3, bytesDone: 0, bytesTotal: 30))
        #expect(reported.last?.1 == MirrorProgress(filesDone: 2, filesFailed: 1, filesTotal: 3, bytesDone: 10, bytesTotal: 30))
        #expect(meter.progress == MirrorProgress(filesDone: 2, filesFailed: 1, filesTotal: 3, bytesDone: 10, bytesTotal: 30))
    }

    @Test func workerPool_runsAtMostItsThreadCount_onThreadsOfItsOwn() async throws {
        let pool = try MirrorWorkerPool(threads: 3, watch: WalkWatch(source: "/source", destination: "/destination"))
        let running = Locked((now: 0, peak: 0))
        let threads = Locked<Set<UInt>>([])
        let callerThread = UInt(pthread_self())
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<24 {
                group.addTask(executorPreference: pool) {
                    running.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) }
                    threads.withLock { _ = $0.insert(UInt(pthread_self())) }
                    usleep(5000)  // blocking, as file I/O is
                    running.withLock { $0.now -= 1 }
                }
            }
        }
        pool.shutdown()
        #expect(running.withLock { $0.peak } == 3)
        #expect(threads.withLock { $0.count } == 3)
        #expect(!threads.withLock { $0.contains(callerThread) })
    }

    @Test func settings_comeFromTheConfiguration_withCoresAsDefaultWorkers() throws {
        let configuration = try loadConfiguration(#"""
            {"sync": {"jobs": [
              {"name": "a", "source": "/srv/a", "destination": "/backup/a"},
              {"name": "b", "source": "/srv/b", "destination": "/backup/b", "compare": "checksum",
               "delete": true, "durable": false, "workers": 7}
            ]}}
            """#)
        let a = MirrorSettings(try #require(configuration.sync.jobs[0].mirror))
        #expect(a == MirrorSettings(source: "/srv/a", destination: "/backup/a"))
        #expect(a.workers == Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) && !a.delete && a.durable)
        let b = MirrorSettings(try #require(configuration.sync.jobs[1].mirror))
        #expect(b.compare == .checksum && b.delete && !b.durable && b.workers == 7)
    }
}
