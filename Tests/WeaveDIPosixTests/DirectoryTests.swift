import Glibc
import Testing
import WeaveDIPosix

@Suite struct DirectoryTests {
    @Test func directoryEntries_askWhetherToGoOn_everyInterval() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        for n in 0..<2_500 { try dir.descriptor.makeDirectory(at: "d\(n)") }
        var heard: [Int] = []
        let entries = try dir.descriptor.directoryEntries(every: 1_024) { heard.append($0); return true }
        #expect(entries?.count == 2_500)
        #expect(heard == [1_024, 2_048])
    }

    /// A listing told to stop stops there (nil), before reading the rest; the descriptor stays
    /// usable and a listing after it is whole.
    @Test func directoryEntries_stopWhenTold() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        for n in 0..<500 { try dir.descriptor.makeDirectory(at: "d\(n)") }
        var heard: [Int] = []
        let stopped = try dir.descriptor.directoryEntries(every: 64) { heard.append($0); return $0 < 192 }
        #expect(stopped == nil)
        #expect(heard == [64, 128, 192])
        #expect(try dir.descriptor.directoryEntries().count == 500)
    }

    /// `hasEntry` says whether a directory has an entry (that matches), reading no further.
    @Test func hasEntry_saysWhetherADirectoryHasOne() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        #expect(try !dir.descriptor.hasEntry())
        try dir.descriptor.makeDirectory(at: ".tmp-1")
        #expect(try dir.descriptor.hasEntry())
        #expect(try !dir.descriptor.hasEntry { !$0.name.hasPrefix(".tmp-") })
        for n in 0..<100 { try dir.descriptor.makeDirectory(at: "d\(n)") }
        var seen = 0
        #expect(try dir.descriptor.hasEntry { _ in seen += 1; return true })
        #expect(seen == 1)
        #expect(try dir.descriptor.hasEntry { $0.name == "d57" })
    }

    /// A listing of a million names holds a million entries: 32 bytes each (the name's bytes
    /// inline up to 15), not the 40 of a one-byte field between the name and the inode.
    @Test func directoryEntry_takes32Bytes() {
        #expect(MemoryLayout<DirectoryEntry>.stride == 32)
    }

    @Test func directoryEntries_listNamesAndTypes() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        try dir.descriptor.makeDirectory(at: "sub")
        try dir.descriptor.open(at: "file.txt", .writeOnly, options: [.create]).close()
        try dir.descriptor.createSymbolicLink(at: "link", pointingTo: "file.txt")

        let entries = try dir.descriptor.directoryEntries()
        let byName = Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0) })
        #expect(Set(byName.keys) == ["sub", "file.txt", "link"])
        // tmpfs and ext4 fill d_type; accept DT_UNKNOWN only as a documented fallback.
        for (name, kind) in [("sub", FileKind.directory), ("file.txt", .regular), ("link", .symbolicLink)] {
            let reported = try #require(byName[name]).kind
            #expect(reported == kind || reported == .unknown, "\(name): \(reported)")
            #expect(try byName[name]?.inode == dir.descriptor.status(at: name, followSymlinks: false).inode)
        }
        // Listing twice works (rewinddir on a shared offset) and leaves the descriptor usable.
        #expect(try dir.descriptor.directoryEntries().count == 3)
        #expect(try dir.descriptor.status().kind == .directory)
        #expect(try FileDescriptor.currentWorkingDirectory.directoryEntries(at: directory.path).count == 3)
    }

    /// `/proc` is a file system of its own, mounted at its root; a directory made in a
    /// temporary one is not the root of a mount.
    @Test func isMountRoot_saysWhetherAMountStartsThere() throws {
        let proc = try FileDescriptor.currentWorkingDirectory.openDirectory(at: "/proc")
        #expect(try proc.descriptor.isMountRoot())
        let scratch = try FileDescriptor.makeTemporaryDirectory(template: "/tmp/weavedi-mount-root.XXXXXX")
        defer { try? FileDescriptor.currentWorkingDirectory.removeDirectory(at: scratch) }
        let plain = try FileDescriptor.currentWorkingDirectory.openDirectory(at: scratch)
        #expect(try !plain.descriptor.isMountRoot())
        // Said, on a kernel that says (5.8 and later): a path-only handle (`O_PATH`) too.
        let handle = try FileDescriptor.currentWorkingDirectory.open(at: "/proc", .pathOnly, options: [.directory])
        #expect(try handle.descriptor.mountRoot() == true)
        #expect(try plain.descriptor.mountRoot() == false)
    }

    /// A path-only handle (`O_PATH`) on a directory whose mode denies everything: it opens,
    /// tells the directory's status, has its mode changed through `/proc/self/fd` (where
    /// `fchmod` fails), and then opens the directory itself for listing; a link is not followed.
    @Test func aPathOnlyHandle_opensWithoutPermission_andChangesTheMode() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        try dir.descriptor.makeDirectory(at: "closed")
        try dir.descriptor.open(at: "closed/inside.txt", .writeOnly, options: [.create]).close()
        try dir.descriptor.setPermissions(at: "closed", 0o000)
        let handle = try dir.descriptor.open(at: "closed", .pathOnly, options: [.directory, .noFollow])
        #expect(try handle.descriptor.status().permissions.rawValue == 0o000)
        #expect(throws: Errno.badFileDescriptor) { try handle.descriptor.setPermissions(0o700) }
        try handle.descriptor.setPermissionsOfPathHandle(0o750)
        #expect(try dir.descriptor.status(at: "closed", followSymlinks: false).permissions.rawValue == 0o750)
        let opened = try handle.descriptor.openDirectory(at: ".", noFollow: true)
        #expect(try opened.descriptor.directoryEntries().map(\.name) == ["inside.txt"])
        try dir.descriptor.createSymbolicLink(at: "link", pointingTo: "closed")
        #expect(throws: Errno.self) { _ = try dir.descriptor.open(at: "link", .pathOnly, options: [.directory, .noFollow]) }
    }

    /// A path-only handle on a file: its times are set through `/proc/self/fd` (where
    /// `futimens` fails), and it opens again as the file it is on, not what its name leads to
    /// now; a handle opened with `noFollow` on a link is the link's own.
    @Test func aPathOnlyHandleOnAFile_setsItsTimes_andOpensAgain() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        let file = try dir.descriptor.open(at: "f", .writeOnly, options: [.create, .exclusiveCreate], permissions: 0o644)
        try file.descriptor.writeAll(Array("first".utf8))
        let handle = try dir.descriptor.open(at: "f", .pathOnly, options: [.noFollow])
        #expect(throws: Errno.badFileDescriptor) { try handle.descriptor.setTimes(access: nil, modification: TimeSpec(seconds: 1)) }
        let time = TimeSpec(seconds: 1_600_000_000, nanoseconds: 123_456_789)
        try handle.descriptor.setTimesOfPathHandle(access: nil, modification: time)
        #expect(try dir.descriptor.status(at: "f").modificationTime == time)
        // Its name now leads to another file: the handle still opens its own.
        try dir.descriptor.rename(at: "f", to: "moved")
        try dir.descriptor.open(at: "f", .writeOnly, options: [.create, .exclusiveCreate]).close()
        let again = try handle.descriptor.reopenPathHandle(.readOnly)
        #expect(try again.descriptor.readToEnd() == Array("first".utf8))
        try dir.descriptor.createSymbolicLink(at: "link", pointingTo: "moved")
        let link = try dir.descriptor.open(at: "link", .pathOnly, options: [.noFollow])
        #expect(try link.descriptor.status().kind == .symbolicLink)
    }

    @Test func makeDirectories_createsMissingParents_andLeavesExistingOnes() throws {
        let directory = try TemporaryDirectory()
        let root = FileDescriptor.currentWorkingDirectory
        try root.makeDirectory(at: directory.path + "/a", permissions: 0o700)
        try root.makeDirectories(at: directory.path + "/a/b/c", permissions: 0o750)
        #expect(try FileStatus(path: directory.path + "/a/b/c", followSymlinks: false).kind == .directory)
        #expect(try FileStatus(path: directory.path + "/a/b", followSymlinks: false).permissions.rawValue & 0o777 == 0o750)
        #expect(try FileStatus(path: directory.path + "/a", followSymlinks: false).permissions.rawValue & 0o777 == 0o700)
        try root.makeDirectories(at: directory.path + "/a/b/c")  // all there: nothing to do, no error
        try root.open(at: directory.path + "/file", .writeOnly, options: [.create]).close()
        #expect(throws: Errno.notDirectory) { try root.makeDirectories(at: directory.path + "/file/x") }
    }

    @Test func emptyDirectory_listsNothing_andRemoveDirectoryWorks() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        try dir.descriptor.makeDirectory(at: "empty")
        #expect(try dir.descriptor.directoryEntries(at: "empty").isEmpty)
        try dir.descriptor.open(at: "empty/x", .writeOnly, options: [.create]).close()
        #expect(throws: Errno.directoryNotEmpty) { try dir.descriptor.removeDirectory(at: "empty") }
        try dir.descriptor.unlink(at: "empty/x")
        try dir.descriptor.removeDirectory(at: "empty")
        #expect(throws: Errno.noSuchFileOrDirectory) { _ = try dir.descriptor.status(at: "empty") }
    }

    @Test func readSymbolicLink_returnsTarget() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        let longTarget = String(repeating: "d/", count: 300) + "target"
        try dir.descriptor.createSymbolicLink(at: "short", pointingTo: "../somewhere/else")
        try dir.descriptor.createSymbolicLink(at: "long", pointingTo: longTarget)
        #expect(try dir.descriptor.readSymbolicLink(at: "short") == "../somewhere/else")
        #expect(try dir.descriptor.readSymbolicLink(at: "long") == longTarget)
        #expect(try FileDescriptor.currentWorkingDirectory.readSymbolicLink(at: directory.child("short"))
            == "../somewhere/else")
        try dir.descriptor.open(at: "plain", .writeOnly, options: [.create]).close()
        #expect(throws: Errno.invalidArgument) { _ = try dir.descriptor.readSymbolicLink(at: "plain") }
    }

    @Test func openNoFollow_onSymlink_throwsELOOP() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        try dir.descriptor.open(at: "real", .writeOnly, options: [.create]).close()
        try dir.descriptor.createSymbolicLink(at: "link", pointingTo: "real")
        #expect(throws: Errno.tooManySymbolicLinkLevels) {
            _ = try dir.descriptor.open(at: "link", .readOnly, options: [.noFollow])
        }
        // Without O_NOFOLLOW the same link opens fine, and O_NOFOLLOW on a real file is fine.
        try dir.descriptor.open(at: "link", .readOnly).close()
        try dir.descriptor.open(at: "real", .readOnly, options: [.noFollow]).close()
        #expect(throws: Errno.notDirectory) {
            _ = try dir.descriptor.openDirectory(at: "real")
        }
    }

    @Test func renameAcrossDirectories_andUnlink() throws {
        let directory = try TemporaryDirectory()
        let root = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        try root.descriptor.makeDirectory(at: "a")
        try root.descriptor.makeDirectory(at: "b")
        let a = try root.descriptor.openDirectory(at: "a")
        let b = try root.descriptor.openDirectory(at: "b")
        let file = try a.descriptor.open(at: "x", .writeOnly, options: [.create])
        try file.descriptor.writeAll("payload".utf8)
        try file.close()
        try a.descriptor.rename(at: "x", to: "y", in: b.descriptor)
        #expect(try a.descriptor.directoryEntries().isEmpty)
        #expect(try b.descriptor.directoryEntries().map(\.name) == ["y"])
        try b.descriptor.unlink(at: "y")
        #expect(throws: Errno.noSuchFileOrDirectory) { try b.descriptor.unlink(at: "y") }
    }

    @Test func directoryEntries_flagNamesThatAreNotUTF8() throws {
        let directory = try TemporaryDirectory()
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        let raw: [CChar] = [0x62, -1, 0x2e, 0x74, 0]  // "b\xff.t"
        let made = openat(dir.descriptor.rawValue, raw, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        #expect(made >= 0)
        close(made)
        try dir.descriptor.open(at: "plain", .writeOnly, options: [.create]).close()

        let entries = Dictionary(uniqueKeysWithValues: try dir.descriptor.directoryEntries().map { ($0.name, $0) })
        #expect(entries["plain"]?.nameIsExact == true)
        // Shown with its byte escaped, as messages show it.
        let repaired = try #require(entries[#"b\xFF.t"#], "\(entries.keys)")
        #expect(!repaired.nameIsExact)
        // The repaired name names no file: using it would miss (or hit another file).
        #expect(throws: Errno.noSuchFileOrDirectory) { _ = try dir.descriptor.status(at: repaired.name) }
    }

    @Test func nameDisplay_escapesTheBytesThatAreNoUTF8_andBackslashes() {
        #expect(NameDisplay.escaping(Array("bad".utf8) + [0xFF] + Array("name".utf8)) == #"bad\xFFname"#)
        #expect(NameDisplay.escaping(Array("é\\".utf8) + [0xC3]) == #"é\\\xC3"#)
        #expect(NameDisplay.escaping([0xED, 0xA0, 0x80, 0x41]) == #"\xED\xA0\x80A"#)  // a surrogate is no UTF-8
        #expect(NameDisplay.escaping(Array("ok ✓".utf8)) == "ok ✓")
    }

    @Test func realPath_resolvesLinksDotsAndDotDots_andFailsForMissing() throws {
        let directory = try TemporaryDirectory()
        let root = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        try root.descriptor.makeDirectory(at: "real")
        try root.descriptor.makeDirectory(at: "real/inner")
        try root.descriptor.createSymbolicLink(at: "link", pointingTo: "real/inner")
        let canonical = try FileDescriptor.realPath(directory.path)
        #expect(try FileDescriptor.realPath(directory.child("link")) == canonical + "/real/inner")
        #expect(try FileDescriptor.realPath(directory.child("link/../.")) == canonical + "/real")
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try FileDescriptor.realPath(directory.child("real/missing"))
        }
    }

    @Test func realPath_refusesACanonicalFormThatIsNotUTF8() throws {
        let directory = try TemporaryDirectory()
        let root = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        let raw: [CChar] = [0x62, -1, 0]  // "b\xff"
        #expect(mkdirat(root.descriptor.rawValue, raw, 0o755) == 0)
        let made = symlinkat(raw, root.descriptor.rawValue, "link")
        #expect(made == 0)
        // Repaired, it would be ".../b\u{FFFD}": another name.
        #expect(throws: Errno.illegalByteSequence) { _ = try FileDescriptor.realPath(directory.child("link")) }
    }
}
