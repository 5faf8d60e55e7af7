import Glibc
import Testing
import WeaveDIPosix

@Suite struct FileDescriptorTests {
    @Test func atomicFile_replacesTheContent_unlessGivenUpJustBeforeTheRename() throws {
        let directory = try TemporaryDirectory()
        let path = directory.child("state.json")
        try AtomicFile.write(Array("old".utf8), to: path, permissions: 0o640)
        var asked = 0
        #expect(throws: Errno(rawValue: ECANCELED)) {
            try AtomicFile.write(Array("given up".utf8), to: path, permissions: 0o640) {
                asked += 1
                return false
            }
        }
        #expect(asked == 1)
        try AtomicFile.write(Array("new".utf8), to: path, permissions: 0o640) { true }
        let reader = try FileDescriptor.open(path, .readOnly)
        #expect(try reader.descriptor.readToEnd() == Array("new".utf8))
        #expect(try FileStatus(path: path, followSymlinks: false).permissions == 0o640)
        // Neither write left its temporary file behind.
        let opened = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        let names = try opened.descriptor.directoryEntries().map(\.name)
        #expect(names == ["state.json"])
    }

    /// The temporary file a write makes is one `isTemporaryFile` knows (a crash leaves it for
    /// the writer's next start to remove); names only like it are not.
    @Test func atomicFile_temporaryFileNames() throws {
        let directory = try TemporaryDirectory()
        let path = directory.child("jobs.json")
        var seen: [String] = []
        try AtomicFile.write(Array("{}".utf8), to: path) {
            seen = (try? FileDescriptor.currentWorkingDirectory.directoryEntries(at: directory.path).map(\.name)) ?? []
            return true
        }
        #expect(seen.count == 1)
        #expect(seen.allSatisfy { AtomicFile.isTemporaryFile($0, of: "jobs.json") }, "\(seen)")
        for name in [".jobs.json.tmp.0", ".jobs.json.tmp.4294967295"] { #expect(AtomicFile.isTemporaryFile(name, of: "jobs.json")) }
        for name in [
            "jobs.json", ".jobs.json.tmp.", ".jobs.json.tmp.x", ".jobs.json.tmp.+1", ".jobs.json.tmp.-1", ".jobs.json.tmp.01",
            ".jobs.json.tmp.4294967296", ".jobs.json.tmp.1 ", "jobs.json.tmp.1", ".other.json.tmp.1", ".jobs.json.tmp.1.tmp.2",
        ] {
            #expect(!AtomicFile.isTemporaryFile(name, of: "jobs.json"), "\(name)")
        }
    }

    @Test func atomicWrite_writeFsyncRename_readsBackContent() throws {
        let directory = try TemporaryDirectory()
        let parent = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        let content = Array("hello, weavedid\n".utf8) + [UInt8](repeating: 0x41, count: 100_000)

        let temporary = try parent.descriptor.open(
            at: ".config.json.tmp", .writeOnly, options: [.create, .exclusiveCreate, .noFollow],
            permissions: 0o600)
        try temporary.descriptor.writeAll(content)
        try temporary.descriptor.fsync()
        try temporary.descriptor.fdatasync()
        try temporary.close()
        try parent.descriptor.rename(at: ".config.json.tmp", to: "config.json")
        try parent.descriptor.fsync()

        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try parent.descriptor.status(at: ".config.json.tmp")
        }
        let reader = try FileDescriptor.open(directory.child("config.json"), .readOnly)
        #expect(try reader.descriptor.readToEnd() == content)
        var head = [UInt8](repeating: 0, count: 5)
        let count = try head.withUnsafeMutableBytes { try reader.descriptor.read(fromAbsoluteOffset: 7, into: $0) }
        #expect(count == 5)
        #expect(String(decoding: head, as: UTF8.self) == "weave")
        let status = try reader.descriptor.status()
        #expect(status.kind == .regular)
        #expect(status.size == Int64(content.count))
        #expect(status.permissions == 0o600)
        #expect(status.userID == getuid())
    }

    @Test func exclusiveCreate_onExistingFile_throwsEEXIST() throws {
        let directory = try TemporaryDirectory()
        let first = try FileDescriptor.open(directory.child("a"), .writeOnly, options: [.create])
        try first.close()
        #expect(throws: Errno.fileExists) {
            _ = try FileDescriptor.open(directory.child("a"), .writeOnly, options: [.create, .exclusiveCreate])
        }
    }

    @Test func open_setsCloseOnExecByDefault() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open(directory.child("f"), .writeOnly, options: [.create])
        #expect(try file.descriptor.isCloseOnExec())
        let inheritable = try FileDescriptor.open(directory.child("f"), .readOnly, closeOnExec: false)
        #expect(try !inheritable.descriptor.isCloseOnExec())
        let copy = try file.descriptor.duplicate()
        #expect(copy.rawValue != file.rawValue)
        #expect(try copy.descriptor.isCloseOnExec())
        #expect(try !file.descriptor.isNonBlocking())
        try file.descriptor.setNonBlocking()
        #expect(try file.descriptor.isNonBlocking())
    }

    @Test func ownedDescriptor_closesOnDeinit_andReleaseKeepsOpen() throws {
        let directory = try TemporaryDirectory()
        let path = directory.child("owned")
        var raw: Int32 = -1
        do {
            let owned = try FileDescriptor.open(path, .writeOnly, options: [.create])
            raw = owned.rawValue
            #expect(procTarget(of: raw) == path)
        }
        // The number may be reused by a parallel test, but never for this file again.
        #expect(procTarget(of: raw) != path)

        let owned = try FileDescriptor.open(path, .readOnly)
        let released = owned.release()
        #expect(procTarget(of: released.rawValue) == path)
        try released.close()
        #expect(procTarget(of: released.rawValue) != path)
    }

    @Test func status_reportsKindsOfDirectoryFileSymlinkSocketFifo() throws {
        let directory = try TemporaryDirectory()
        let parent = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        let dir = parent.descriptor
        try dir.makeDirectory(at: "sub")
        try dir.open(at: "file", .writeOnly, options: [.create]).close()
        try dir.createSymbolicLink(at: "link", pointingTo: "file")
        #expect(mkfifo(directory.child("fifo"), 0o600) == 0)
        let listener = try UnixSocket.listen(at: UnixSocketAddress(path: directory.child("sock")))

        #expect(try dir.status(at: "sub").kind == .directory)
        #expect(try dir.status(at: "file").kind == .regular)
        #expect(try dir.status(at: "link", followSymlinks: false).kind == .symbolicLink)
        #expect(try dir.status(at: "link", followSymlinks: false).size == 4)
        #expect(try dir.status(at: "link").kind == .regular)
        #expect(try FileStatus(path: directory.child("fifo")).kind == .fifo)
        #expect(try FileStatus(path: directory.child("sock")).kind == .socket)
        #expect(try FileStatus(path: "/dev/null").kind == .characterDevice)
        #expect(try FileStatus(path: directory.child("link"), followSymlinks: false).kind == .symbolicLink)
        #expect(try listener.descriptor.status().kind == .socket)
        #expect(try parent.descriptor.status().kind == .directory)
        #expect(try dir.status(at: "file").inode != dir.status(at: "sub").inode)
    }

    @Test func futimens_setsNanosecondModificationTime() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open(directory.child("t"), .readWrite, options: [.create])
        let access = TimeSpec(seconds: 1_600_000_000, nanoseconds: 111_222_333)
        let modification = TimeSpec(seconds: 1_700_000_000, nanoseconds: 123_456_789)
        try file.descriptor.setTimes(access: access, modification: modification)
        let status = try file.descriptor.status()
        #expect(status.modificationTime == modification)
        #expect(status.accessTime == access)

        // nil leaves a time alone (UTIME_OMIT).
        let later = TimeSpec(seconds: 1_700_000_100, nanoseconds: 5)
        try file.descriptor.setTimes(access: nil, modification: later)
        #expect(try file.descriptor.status().modificationTime == later)
        #expect(try file.descriptor.status().accessTime == access)
    }

    @Test func utimensat_noFollow_changesLinkNotTarget() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        try dir.descriptor.open(at: "target", .writeOnly, options: [.create]).close()
        try dir.descriptor.createSymbolicLink(at: "link", pointingTo: "target")
        let targetTime = TimeSpec(seconds: 1_500_000_000, nanoseconds: 1)
        let linkTime = TimeSpec(seconds: 1_400_000_000, nanoseconds: 999_999_999)
        try dir.descriptor.setTimes(at: "target", access: targetTime, modification: targetTime)
        try dir.descriptor.setTimes(at: "link", access: linkTime, modification: linkTime, followSymlinks: false)
        #expect(try dir.descriptor.status(at: "link", followSymlinks: false).modificationTime == linkTime)
        #expect(try dir.descriptor.status(at: "target").modificationTime == targetTime)
    }

    @Test func fchmod_changesPermissions() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open(directory.child("m"), .writeOnly, options: [.create], permissions: 0o600)
        try file.descriptor.setPermissions(0o640)
        #expect(try file.descriptor.status().permissions == 0o640)
        #expect(try file.descriptor.status().permissions.description == "0640")
    }

    @Test func copyRange_copiesInTheKernel_advancingBothPositions() throws {
        let directory = try TemporaryDirectory()
        let content = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let writer = try FileDescriptor.open(directory.child("in"), .writeOnly, options: [.create])
        try writer.descriptor.writeAll(content)
        try writer.close()

        let input = try FileDescriptor.open(directory.child("in"), .readOnly, options: [.noAccessTime])
        let output = try FileDescriptor.open(directory.child("out"), .writeOnly, options: [.create, .exclusiveCreate])
        var total = 0
        var calls = 0
        while true {
            let copied = try input.descriptor.copyRange(to: output.descriptor, count: 100_000)
            if copied == 0 { break }
            total += copied
            calls += 1
        }
        #expect(total == content.count)
        #expect(calls >= 3)
        #expect(try input.descriptor.seek(offset: 0, from: SEEK_CUR) == Int64(content.count))
        #expect(try output.descriptor.seek(offset: 0, from: SEEK_CUR) == Int64(content.count))
        try output.close()
        let copy = try FileDescriptor.open(directory.child("out"), .readOnly)
        #expect(try copy.descriptor.readToEnd() == content)
        // A descriptor that is not open for reading cannot be a source.
        let writeOnly = try FileDescriptor.open(directory.child("in"), .writeOnly)
        #expect(throws: Errno.badFileDescriptor) {
            _ = try writeOnly.descriptor.copyRange(to: input.descriptor, count: 10)
        }
    }

    @Test func startWriteback_worksOnFiles_andRefusesPipes() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open(directory.child("data"), .writeOnly, options: [.create])
        try file.descriptor.writeAll([UInt8](repeating: 7, count: 1 << 20))
        try file.descriptor.startWriteback()
        try file.descriptor.fsync()
        let pipe = try OwnedPipe.make()
        #expect(throws: Errno(rawValue: ESPIPE)) { try pipe.writeEnd.descriptor.startWriteback() }
    }
}
