import Foundation
import Glibc
import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// Whole files or none: temporary names, leftovers of a crash, sources that change under the
/// copy, files that vanish, and cancellation.
@Suite struct MirrorEngineAtomicityTests {
    @Test func leftoverTemporaryFiles_areRemoved_andTemporaryNamesInTheSourceAreSkipped() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a", mtime: sampleTime())
        try fixture.write("src/sub/b.txt", "b", mtime: sampleTime())
        try fixture.write("src/.weavedi-tmp.c.txt.aaaaaaaaaaaa", "another mirror's unfinished copy")
        try fixture.write("dst/.weavedi-tmp.a.txt.0123456789ab", "torn")
        try fixture.write("dst/sub/.weavedi-tmp.b.txt.ba9876543210", "torn too")
        try fixture.link("dst/.weavedi-tmp.link.cccccccccccc", to: "a.txt")

        let report = await fixture.mirror(delete: false)

        #expect(report.result == .success, "\(report.errors)")
        #expect(report.copied == 2)
        #expect(report.skipped == 1)
        #expect(report.warnings.map(\.path) == [".weavedi-tmp.c.txt.aaaaaaaaaaaa"])
        #expect(report.leftoversRemoved == 3)
        #expect(report.deleted == 0)
        #expect(try fixture.temporaryFiles().isEmpty)
        try fixture.expectExactMirror(ignoring: [".weavedi-tmp.c.txt.aaaaaaaaaaaa"])
    }

    @Test func namesThatOnlyStartLikeTemporaryNames_areOrdinaryFiles_mirroredAndKept() async throws {
        let fixture = try MirrorFixture()
        let lookalikes = [
            ".weavedi-tmp.notes",  // no random part
            ".weavedi-tmp.a.txt.0123456789AB",  // uppercase
            ".weavedi-tmp.a.txt-0123456789ab",  // no dot before the random part
            ".weavedi-tmp..0123456789ab",  // no name
            ".weavedi-tmp.a.txt.0123456789a",  // eleven letters
        ]
        for name in lookalikes { try fixture.write("src/" + name, "mine", mtime: sampleTime()) }
        try fixture.write("dst/.weavedi-tmp.keep.me", "the user's, not in the source")

        let report = await fixture.mirror(delete: false)

        #expect(report.result == .success, "\(report.errors)")
        #expect(report.copied == lookalikes.count)
        #expect(report.skipped == 0)
        #expect(fixture.read("dst/.weavedi-tmp.keep.me") == "the user's, not in the source")
        try fixture.expectExactMirror(ignoring: [".weavedi-tmp.keep.me"])
    }

    /// Names of 255 bytes (`NAME_MAX`) whose temporary names must be cut: by whole Characters,
    /// a name that is one grapheme of 255 bytes ("a" and 127 combining accents) kept nothing of
    /// it, and `.weavedi-tmp..<random>`, with no name, is not of the reserved shape: left by a
    /// crash, it stayed for ever.
    static let longNames = [
        "a" + String(repeating: "\u{301}", count: 127),  // one grapheme
        String(repeating: "\u{1F600}", count: 63) + "abc",  // four-byte scalars
        String(repeating: "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}", count: 14) + "abc",  // ZWJ families
        String(repeating: "\u{E9}", count: 127) + "x",  // two-byte scalars
        String(repeating: "n", count: 255),
    ]

    @Test(arguments: longNames)
    func temporaryNamesOfLongNames_keepPartOfTheName_withinNameMax(name: String) {
        #expect(name.utf8.count == 255)
        for _ in 0..<20 {
            let temporary = MirrorTemporaryName.make(for: name)
            #expect(temporary.utf8.count <= 255, "\(temporary.utf8.count) bytes")
            #expect(MirrorTemporaryName.isTemporary(temporary), "\(Array(temporary.utf8))")
            // The prefix, then a part of the name, cut between two scalars (valid UTF-8).
            let part = Array(temporary.utf8.dropFirst(MirrorTemporaryName.prefix.utf8.count).dropLast(13))
            #expect(!part.isEmpty && name.utf8.starts(with: part))
            #expect(String(validating: part, as: UTF8.self) != nil)
        }
        let short = MirrorTemporaryName.make(for: "a.txt")
        #expect(short.hasPrefix(".weavedi-tmp.a.txt.") && MirrorTemporaryName.isTemporary(short))
    }

    /// What a crash leaves of a copy of such a file is removed by the next run.
    @Test func leftoverCopiesOfFilesWithLongNames_areRemoved() async throws {
        let fixture = try MirrorFixture()
        for name in Self.longNames {
            try fixture.write("src/" + name, "whole", mtime: sampleTime())
            try fixture.write("dst/" + MirrorTemporaryName.make(for: name), "torn")
        }
        let report = await fixture.mirror(delete: false)
        #expect(report.result == .success, "\(report.errors)")
        #expect(report.copied == Self.longNames.count)
        #expect(report.leftoversRemoved == Self.longNames.count)
        #expect(try fixture.temporaryFiles().isEmpty)
        try fixture.expectExactMirror()
    }

    @Test func fileGrowingDuringTheCopy_isNotPublished_andThePreviousVersionStays() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/growing.log", [UInt8](repeating: 0x61, count: 64 << 20), mtime: sampleTime())
        try fixture.write("src/other.txt", "other", mtime: sampleTime())
        #expect(await fixture.mirror(durable: false).result == .success)
        let previous = try #require(fixture.status("dst/growing.log"))

        // A writer appends until the run is over: the file changes during its copy.
        let (stop, writer) = try appendingWriter(fixture.source + "/growing.log")
        while (fixture.status("src/growing.log")?.size ?? 0) == previous.size { usleep(1000) }
        try fixture.write("src/other.txt", "changed", mtime: sampleTime(1))

        let report = await fixture.mirror()
        stop.withLock { $0 = true }
        writer.join()

        // A source in use is no error (every run of a busy source would be partial, none a
        // success): a warning, the file skipped, and the next run copies it.
        #expect(report.result == .success)
        #expect(report.errors.isEmpty && report.errorCount == 0)
        #expect(report.skipped == 1)
        #expect(report.warnings == [MirrorIssue(
            path: "growing.log",
            reason: "changed while being copied; the previous version is kept (the source changed during the run; not an error)")])
        #expect(report.updated == 1)  // other.txt
        let kept = try #require(fixture.status("dst/growing.log"))
        #expect(kept.inode == previous.inode && kept.size == previous.size && kept.modificationTime == sampleTime())
        #expect(fixture.read("dst/other.txt") == "changed")
        #expect(try fixture.temporaryFiles().isEmpty)
    }

    /// A file the destination has no copy of yet (a first run), changing during its copy, is
    /// skipped as one that changed, but its warning does not say that a previous version is kept:
    /// the backup has none. The run's last progress counts it done and skipped, its bytes neither
    /// done nor to do, so that its bytes are those the report says were copied, not its 100 %.
    @Test func newFileChangingDuringItsFirstCopy_isSaidToHaveNoCopy_andItsBytesAreNotCountedDone() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/growing.log", [UInt8](repeating: 0x61, count: 64 << 20), mtime: sampleTime())
        try fixture.write("src/other.txt", "other", mtime: sampleTime())
        let size = try #require(fixture.status("src/growing.log")).size

        let (stop, writer) = try appendingWriter(fixture.source + "/growing.log")
        while (fixture.status("src/growing.log")?.size ?? 0) == size { usleep(1000) }

        let last = Locked(MirrorProgress())
        let report = await MirrorEngine(settings: fixture.settings(), container: .mirrorWorkers()).run { progress in
            last.withLock { $0 = progress }
        }
        stop.withLock { $0 = true }
        writer.join()

        #expect(report.result == .success && report.errorCount == 0, "\(report.errors)")
        #expect(report.skipped == 1 && report.copied == 1 && report.bytes == 5)
        #expect(report.warnings == [MirrorIssue(
            path: "growing.log",
            reason: "changed while being copied; the destination has no copy of it yet (the source changed during the run; not an error)")])
        #expect(report.changedWhileCopying == ["growing.log"] && report.changedWithNoCopy == ["growing.log"])
        #expect(fixture.status("dst/growing.log") == nil)
        #expect(fixture.read("dst/other.txt") == "other")
        #expect(try fixture.temporaryFiles().isEmpty)
        #expect(last.withLock { $0 } == MirrorProgress(filesDone: 2, filesSkipped: 1, filesTotal: 2, bytesDone: 5, bytesTotal: 5))
    }

    @Test func fileVanishingBetweenListingAndCopy_isAWarning_andTheRunGoesOn() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/doomed.txt", "here at listing time")
        try fixture.write("src/kept.txt", "kept")
        let doomed = fixture.source + "/doomed.txt"
        // The copier is made after the listing, in the task that copies both files.
        let container = WeaveDI.Container.mirrorWorkers { try? FileDescriptor.currentWorkingDirectory.unlink(at: doomed) }

        let report = await MirrorEngine(settings: fixture.settings(), container: container).run()

        #expect(report.result == .success)
        #expect(report.errors.isEmpty && report.errorCount == 0)
        #expect(report.skipped == 1)
        #expect(report.warnings == [MirrorIssue(
            path: "doomed.txt", reason: "vanished before it could be copied (the source changed during the run; not an error)")])
        #expect(report.copied == 1)
        #expect(fixture.read("dst/kept.txt") == "kept")
        #expect(fixture.status("dst/doomed.txt") == nil)
        #expect(try fixture.temporaryFiles().isEmpty)
    }

    /// Not so an entry of the destination that vanishes while the run works on it: something
    /// else is changing the backup, the source's entry is not in it, and the run says so (an
    /// error, the run partial), never blaming the source. A file whose mode is to be fixed, a
    /// link whose mtime is, and a file to checksum, each removed from the destination after the
    /// listing.
    @Test(arguments: [DaemonConfiguration.CompareMode.sizeAndModificationTime, .checksum])
    func destinationEntryVanishingDuringTheRun_isAnError_namingTheDestination(compare: DaemonConfiguration.CompareMode)
        async throws
    {
        let fixture = try MirrorFixture()
        // Same size and mtime, another mode: only the mode to fix (a checksum comparison reads
        // the destination's copy first).
        try fixture.write("src/mode.txt", "same", mode: 0o644, mtime: sampleTime())
        try fixture.write("dst/mode.txt", "same", mode: 0o600, mtime: sampleTime())
        // The same target, another mtime: only the link's mtime to fix.
        try fixture.link("src/link", to: "target")
        try fixture.link("dst/link", to: "target")
        let cwd = FileDescriptor.currentWorkingDirectory
        try cwd.setTimes(at: fixture.source + "/link", access: nil, modification: sampleTime(1), followSymlinks: false)
        try cwd.setTimes(at: fixture.destination + "/link", access: nil, modification: sampleTime(2), followSymlinks: false)
        try fixture.write("src/kept.txt", "kept")
        let destination = fixture.destination
        // The copier is made after the listing, in the task that works on the files.
        let container = WeaveDI.Container.mirrorWorkers {
            for name in ["mode.txt", "link"] { try? FileDescriptor.currentWorkingDirectory.unlink(at: destination + "/" + name) }
        }

        let report = await MirrorEngine(settings: fixture.settings(compare: compare), container: container).run()

        let reason = "vanished from the destination during the run (something else is changing the destination)"
        #expect(report.result == .partial)
        #expect(Set(report.errors) == [MirrorIssue(path: "mode.txt", reason: reason), MirrorIssue(path: "link", reason: reason)])
        #expect(report.errorCount == 2)
        #expect(report.warnings.isEmpty && report.skipped == 0)
        #expect(report.copied == 1)
        #expect(fixture.read("dst/kept.txt") == "kept")
        #expect(try fixture.temporaryFiles().isEmpty)
    }

    /// Entries replaced between the listing and their copy (or the opening of a directory)
    /// are named by what they are now, in words: a directory swapped for a link (which
    /// `O_NOFOLLOW` with `O_DIRECTORY` refuses with `ENOTDIR`, and was reported as "replaced
    /// by a regular"), a file swapped for a socket (`ENXIO`: "No such device or address"), a
    /// link, a fifo or a directory. Nothing outside the source is read; the next run skips
    /// what is no file in words too.
    @Test func entriesReplacedBetweenListingAndCopy_areNamedByWhatTheyAreNow() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("outside.txt", "not to be read")
        for name in ["to-link", "to-socket", "to-fifo", "to-directory"] { try fixture.write("src/" + name, name) }
        try fixture.write("src/sub/inside.txt", "inside")
        let root = fixture.root
        let socketPath = root + "/src/to-socket"
        let socketDescriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socketDescriptor) }
        // Made once, after the listing: the copier is made in the task that copies the files,
        // which goes before the subdirectory is opened (one worker).
        let container = WeaveDI.Container.mirrorWorkers {
            guard (try? FileStatus(path: root + "/src/sub", followSymlinks: false))?.kind == .directory else { return }
            let cwd = FileDescriptor.currentWorkingDirectory
            try? cwd.unlink(at: root + "/src/to-link")
            try? cwd.createSymbolicLink(at: root + "/src/to-link", pointingTo: root + "/outside.txt")
            try? cwd.unlink(at: root + "/src/to-fifo")
            mkfifo(root + "/src/to-fifo", 0o644)
            try? cwd.unlink(at: root + "/src/to-directory")
            try? cwd.makeDirectory(at: root + "/src/to-directory")
            rename(root + "/src/sub", root + "/sub.moved")
            try? cwd.createSymbolicLink(at: root + "/src/sub", pointingTo: root + "/sub.moved")
            try? cwd.unlink(at: socketPath)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { path in
                for (index, byte) in socketPath.utf8.enumerated() { path[index] = byte }
            }
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }

        let report = await MirrorEngine(settings: fixture.settings(workers: 1), container: container).run()

        #expect(report.result == .partial)
        #expect(report.errors.map(\.description).sorted() == [
            "sub: replaced by a symbolic link while being mirrored",
            "to-directory: replaced by a directory while being mirrored",
            "to-fifo: replaced by a fifo while being mirrored",
            "to-link: replaced by a symbolic link while being mirrored",
            "to-socket: replaced by a socket while being mirrored",
        ])
        #expect(try fixture.snapshot("dst").isEmpty)
        #expect(try fixture.temporaryFiles().isEmpty)
        let next = await fixture.mirror()
        #expect(next.warnings.map(\.description).sorted() == [
            "to-fifo: fifo skipped: only files, directories and links are mirrored",
            "to-socket: socket skipped: only files, directories and links are mirrored",
        ])
        #expect(fixture.status("dst/sub")?.kind == .symbolicLink && fixture.status("dst/to-link")?.kind == .symbolicLink)
    }

    @Test func cancellation_stopsBetweenFiles_leavingOnlyWholeFiles() async throws {
        let fixture = try MirrorFixture()
        for directory in 0..<40 {
            for file in 0..<10 {
                try fixture.write("src/d\(directory)/f\(file)", "file \(file) of directory \(directory)", mtime: sampleTime())
            }
        }
        try fixture.write("src/big.bin", [UInt8](repeating: 0x42, count: 20 << 20), mtime: sampleTime())
        let task = Locked<Task<MirrorReport, Never>?>(nil)
        let made = Locked(0)
        let container = WeaveDI.Container.mirrorWorkers {
            guard made.withLock({ $0 += 1; return $0 }) == 5 else { return }
            while task.withLock({ $0 }) == nil { usleep(1000) }
            task.withLock { $0 }?.cancel()
        }
        let engine = MirrorEngine(settings: fixture.settings(durable: false), container: container)
        let running = Task { await engine.run() }
        task.withLock { $0 = running }

        let report = await running.value

        #expect(report.result == .cancelled)
        #expect(report.copied > 0 && report.copied < 401)
        #expect(made.withLock { $0 } < 20)  // no new tasks after the cancellation
        #expect(try fixture.temporaryFiles().isEmpty)
        // Whatever has a final name is whole and exact.
        let source = try fixture.snapshot("src")
        for (name, entry) in try fixture.snapshot("dst") where entry.kind == .regular {
            #expect(entry == source[name], "\(name)")
        }
        // The next run completes the mirror.
        #expect(await fixture.mirror().result == .success)
        try fixture.expectExactMirror()
    }

    /// A thread appending 64 KiB to `path` every 250 µs until `stop` is set (then `join` it);
    /// once the file is `cap` bytes long, it writes over it from its start again, so that it
    /// goes on changing without growing: a copy that starts late (a slow machine, a sanitizer)
    /// met a file of tens of gigabytes, and filled the disk.
    func appendingWriter(_ path: String, cap: Int64 = 256 << 20) throws -> (stop: Locked<Bool>, writer: PosixThread) {
        let stop = Locked(false)
        let writer = try PosixThread {
            guard let file = try? FileDescriptor.open(path, .writeOnly) else { return }
            let chunk = [UInt8](repeating: 0x62, count: 64 << 10)
            guard var offset = try? file.descriptor.seek(offset: 0, from: SEEK_END) else { return }
            while !stop.withLock({ $0 }) {
                if offset >= cap { offset = 0 }
                guard (try? file.descriptor.seek(offset: offset)) != nil else { return }
                try? file.descriptor.writeAll(chunk)
                offset += Int64(chunk.count)
                usleep(250)
            }
        }
        return (stop, writer)
    }
}
