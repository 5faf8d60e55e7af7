import Foundation
import Glibc
import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// How durable runs make their copies durable: one `syncfs` per batch where the file system
/// honours it completely, one `fsync` per file elsewhere, nothing with `durable: false`.
@Suite struct MirrorEngineDurabilityTests {
    /// Whether copies into `path` are flushed by batch (the engine's own rule, restated).
    private func flushesByBatch(_ path: String) throws -> Bool {
        let directory = try FileDescriptor.currentWorkingDirectory.openDirectory(at: path)
        let type = try directory.descriptor.fileSystemType()
        let modern = try #require(KernelRelease.current) >= KernelRelease(major: 5, minor: 8)
        return modern && [FileSystemType.ext4, .xfs, .btrfs].contains(type)
    }

    @Test func durableRun_flushesEachBatchOnce_whereTheFileSystemAllowsIt() async throws {
        let fixture = try MirrorFixture()
        // 40 small files in one directory (batches of 32 and 8), one in a subdirectory, one large.
        for index in 0..<40 { try fixture.write("src/f\(index).txt", "file \(index)", mtime: sampleTime()) }
        try fixture.write("src/sub/g.txt", "g", mtime: sampleTime())
        try fixture.write("src/large.bin", [UInt8](repeating: 7, count: 2 << 20), mtime: sampleTime())
        try fixture.makeDirectory("dst")
        let byBatch = try flushesByBatch(fixture.destination)

        let report = await fixture.mirror()

        #expect(report.result == .success, "\(report.errors)")
        #expect(report.copied == 42)
        if byBatch {
            #expect(report.fileSystemFlushes == 4)
            #expect(report.fileFlushes == 0)
        } else {
            #expect(report.fileSystemFlushes == 0)
            #expect(report.fileFlushes == 42)
        }
        #expect(try fixture.temporaryFiles().isEmpty)
        #expect(try fixture.expectExactMirror() == 0)
    }

    /// A link cannot be opened and flushed: a durable run publishes links like copies, renamed
    /// over their final name only after the batch's `syncfs`, or, where there is no batch
    /// flush, after one flush of the batch's links. Replacing a link goes the same way.
    @Test func durableRun_flushesLinksBeforeRenamingThem() async throws {
        let fixture = try MirrorFixture()
        for index in 0..<3 { try fixture.link("src/l\(index)", to: "target-\(index)") }
        try fixture.write("src/f.txt", "f", mtime: sampleTime())
        try fixture.makeDirectory("dst")
        let byBatch = try flushesByBatch(fixture.destination)

        let report = await fixture.mirror()

        #expect(report.result == .success, "\(report.errors)")
        #expect(report.copied == 4)
        if byBatch {
            #expect(report.fileSystemFlushes == 1)
            #expect(report.fileFlushes == 0 && report.linkFlushes == 0)
        } else {
            #expect(report.fileSystemFlushes == 0)
            #expect(report.fileFlushes == 1 && report.linkFlushes == 1)
        }
        #expect(try fixture.temporaryFiles().isEmpty)
        #expect(try fixture.expectExactMirror() == 0)

        // A changed target replaces the link, flushed the same way.
        try FileManager.default.removeItem(atPath: fixture.source + "/l1")
        try fixture.link("src/l1", to: "elsewhere")
        let again = await fixture.mirror()
        #expect(again.result == .success, "\(again.errors)")
        #expect(again.updated == 1)
        #expect(again.fileSystemFlushes + again.linkFlushes == 1)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: fixture.destination + "/l1") == "elsewhere")
        #expect(try fixture.expectExactMirror() == 0)
    }

    /// When the flush before the renames fails (a write error of the file system), nothing of
    /// the batch appears: no copy, no link, no new version of either, and no temporary file.
    /// Where there is no batch flush (tmpfs, /dev/shm, and file systems other than ext4, XFS
    /// and Btrfs) the flush is that of the batch's links, made before the first rename: its
    /// failure withholds the batch's copies too, each reported, and the next run makes them.
    /// Run on /dev/shm (tmpfs: never a batch flush) and on the file systems of /tmp and
    /// /var/tmp (a batch flush where they are ext4, XFS or Btrfs).
    @Test(arguments: ["/dev/shm", "/tmp", "/var/tmp"])
    func failedBatchFlush_publishesNothingOfTheBatch(parent: String) async throws {
        guard FileManager.default.fileExists(atPath: parent) else { return }
        let fixture = try MirrorFixture(under: parent)
        try fixture.write("src/kept.txt", "old", mtime: sampleTime())
        try fixture.link("src/moved", to: "old-target")
        try fixture.makeDirectory("dst")
        #expect(await fixture.mirror().result == .success)
        // Then one new and one changed of each kind.
        try fixture.write("src/new.txt", "new", mtime: sampleTime(5))
        try fixture.write("src/kept.txt", "new content", mtime: sampleTime(5))
        try fixture.link("src/new-link", to: "somewhere")
        try FileManager.default.removeItem(atPath: fixture.source + "/moved")
        try fixture.link("src/moved", to: "new-target")
        let byBatch = try flushesByBatch(fixture.destination)
        if parent == "/dev/shm" { #expect(!byBatch, "a batch flush on /dev/shm") }
        var settings = fixture.settings()
        settings.flushFailure = .ioError

        let report = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()

        #expect(report.result != .success)
        #expect(report.copied + report.updated == 0, "by batch: \(byBatch)")
        #expect(report.fileSystemFlushes == 0 && report.fileFlushes == 0 && report.linkFlushes == 0)
        let failed = Set(report.errors.map(\.path))
        #expect(failed == ["new.txt", "kept.txt", "new-link", "moved"], "by batch: \(byBatch)")
        #expect(report.errors.allSatisfy { $0.reason.contains("syncfs") }, "\(report.errors)")
        #expect(fixture.status("dst/new-link") == nil)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: fixture.destination + "/moved") == "old-target")
        #expect(fixture.status("dst/new.txt") == nil)
        #expect(fixture.read("dst/kept.txt") == "old")
        #expect(try fixture.temporaryFiles().isEmpty)

        // The next run, whose flush succeeds, completes the mirror.
        #expect(await fixture.mirror().result == .success)
        #expect(try fixture.expectExactMirror() == 0)
    }

    @Test func nonDurableRun_flushesNothing() async throws {
        let fixture = try MirrorFixture()
        for index in 0..<10 { try fixture.write("src/f\(index).txt", "file \(index)", mtime: sampleTime()) }
        try fixture.link("src/link", to: "f1.txt")

        let report = await fixture.mirror(durable: false)

        #expect(report.result == .success, "\(report.errors)")
        #expect(report.copied == 11)
        #expect(report.fileSystemFlushes == 0 && report.fileFlushes == 0 && report.linkFlushes == 0)
        #expect(try fixture.expectExactMirror() == 0)
    }

    @Test func batchFlush_isOnlyForFileSystemsKnownToHonourSyncfs() throws {
        // tmpfs: nothing to flush, and not in the list; procfs even less.
        for path in ["/dev/shm", "/proc"] where FileManager.default.fileExists(atPath: path) {
            let directory = try FileDescriptor.currentWorkingDirectory.openDirectory(at: path)
            let flush = BatchFlush.begin(in: directory.descriptor)
            let isNil = flush == nil
            #expect(isNil, "\(path)")
        }
        let fixture = try MirrorFixture()
        let directory = try FileDescriptor.currentWorkingDirectory.openDirectory(at: fixture.root)
        let flush = BatchFlush.begin(in: directory.descriptor)
        let made = flush != nil
        #expect(made == (try flushesByBatch(fixture.root)))
        #expect(BatchFlush.completeFileSystems == [.ext4, .xfs, .btrfs])
    }

    @Test func durableRunIntoTmpfs_flushesEachFile() async throws {
        guard let shm = try? FileDescriptor.currentWorkingDirectory.openDirectory(at: "/dev/shm"),
            (try? shm.descriptor.fileSystemType()) == .tmpfs
        else { try Test.cancel("needs /dev/shm, a tmpfs") }
        let fixture = try MirrorFixture()
        for index in 0..<5 { try fixture.write("src/f\(index).txt", "file \(index)", mtime: sampleTime()) }
        try fixture.link("src/link", to: "f3.txt")
        let destination = try FileDescriptor.makeTemporaryDirectory(template: "/dev/shm/weavedi-mirror-test.XXXXXX")
        defer { try? FileManager.default.removeItem(atPath: destination) }
        let settings = MirrorSettings(source: fixture.source, destination: destination, workers: 2)

        let report = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()

        #expect(report.result == .success, "\(report.errors)")
        #expect(report.copied == 6)
        #expect(report.fileSystemFlushes == 0 && report.fileFlushes == 5 && report.linkFlushes == 1)
        #expect(FileManager.default.contents(atPath: destination + "/f3.txt") == Data("file 3".utf8))
        #expect(FileManager.default.contents(atPath: destination + "/link") == Data("file 3".utf8))
    }
}
