import Foundation
import Glibc
import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// What the mirror opens to read (a source file to copy, a file to checksum) is opened without
/// waiting on what is no regular file: a fifo swapped in for a file after the listing is
/// refused at once, named, where opening it to read would wait for a writer, and the run with
/// it. Each call that could block runs on a thread of its own under a watchdog, so that a
/// regression fails the test instead of hanging it.
@Suite struct MirrorRegularFileOpeningTests {
    /// `body`'s result on a thread of its own, or nil, with an issue, when it has not returned
    /// within 10 s (blocked on `fifo`: a writer opened then lets it go).
    private func withoutBlocking<T: Sendable>(on fifo: String, _ body: @escaping @Sendable () -> T) throws -> T? {
        let result = Locked<T?>(nil)
        let returned = DispatchSemaphore(value: 0)
        try PosixThread.detach {
            let value = body()
            result.withLock { $0 = value }
            returned.signal()
        }
        guard returned.wait(timeout: .now() + 10) == .timedOut else { return result.withLock { $0 } }
        Issue.record("blocked on the fifo \(fifo) for 10 s")
        let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if writer >= 0 { close(writer) }
        _ = returned.wait(timeout: .now() + 10)
        return nil
    }

    /// A regular file is opened, its status read from the descriptor, and `O_NONBLOCK`, which
    /// the opening used, turned off for the reads; a fifo and a device are refused, named by
    /// what they are, without waiting on the fifo; a link is not followed.
    @Test func onlyARegularFile_isOpened_andItsReadsBlockAsUsual() throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/file.txt", "content")
        #expect(mkfifo(fixture.source + "/pipe", 0o644) == 0)
        try fixture.link("src/link", to: fixture.source + "/file.txt")
        let directory = try FileDescriptor.open(fixture.source, .readOnly, options: [.directory])
        let source = directory.descriptor

        for noAccessTime in [false, true] {
            let opened = try RegularFileOpening.open("file.txt", in: source, side: .source, noAccessTime: noAccessTime)
            #expect(opened.status.kind == .regular && opened.status.size == 7)
            #expect(try opened.file.descriptor.isNonBlocking() == false)
        }
        let pipe = try withoutBlocking(on: fixture.source + "/pipe") { () -> MirrorFailure? in
            do throws(MirrorFailure) {
                _ = try RegularFileOpening.open("pipe", in: source, side: .source, noAccessTime: false)
                return nil
            } catch {
                return error
            }
        }
        #expect(pipe == .replaced(.fifo))
        #expect(throws: MirrorFailure.replaced(.symbolicLink)) {
            _ = try RegularFileOpening.open("link", in: source, side: .source, noAccessTime: false)
        }
        let devices = try FileDescriptor.open("/dev", .readOnly, options: [.directory])
        #expect(throws: MirrorFailure.replaced(.characterDevice)) {
            _ = try RegularFileOpening.open("null", in: devices.descriptor, side: .source, noAccessTime: false)
        }
    }

    /// `FileHasher.hexDigest(ofFileAt:)` refuses a fifo at once (`EINVAL`) instead of waiting
    /// for a writer for ever, and a directory with `EISDIR`.
    @Test func hexDigest_refusesAFifoAtOnce_andADirectory() throws {
        let fixture = try MirrorFixture()
        let fifo = fixture.root + "/pipe"
        #expect(mkfifo(fifo, 0o644) == 0)
        let outcome = try withoutBlocking(on: fifo) { () -> Result<String, Errno> in
            Result { () throws(Errno) -> String in try FileHasher().hexDigest(ofFileAt: fifo) }
        }
        #expect(outcome == .failure(.invalidArgument))
        #expect(throws: Errno.isDirectory) { try FileHasher().hexDigest(ofFileAt: fixture.source) }
    }

    /// With `compare: checksum`, a source file replaced by a fifo after the listing (when the
    /// batch's workers are made, before it is read) is reported as such, the run going on;
    /// the destination's copy stays as it was.
    @Test func checksumRun_overAFileReplacedByAFifo_reportsIt() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "aaaa", mtime: sampleTime())
        try fixture.write("src/b.txt", "bbbb", mtime: sampleTime())
        #expect(await fixture.mirror().result == .success)
        try fixture.write("src/a.txt", "AAAA", mtime: sampleTime(1))
        let root = fixture.root
        let container = WeaveDI.Container.mirrorWorkers {
            try? FileDescriptor.currentWorkingDirectory.unlink(at: root + "/src/a.txt")
            mkfifo(root + "/src/a.txt", 0o644)
        }
        let report = await MirrorEngine(settings: fixture.settings(compare: .checksum, workers: 1), container: container).run()
        #expect(report.result == .partial)
        #expect(report.errors.map(\.description) == ["a.txt: replaced by a fifo while being mirrored"])
        #expect(report.unchanged == 1)
        #expect(fixture.read("dst/a.txt") == "aaaa")
    }
}
