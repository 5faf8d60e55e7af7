import Testing
import WeaveDIDaemon
import WeaveDIPosix

/// What a mirror copies, updates and removes, checked by comparing both trees entry by entry.
@Suite struct MirrorEngineCopyTests {
    /// A tree with most of what a mirror meets: modes, nanosecond mtimes, empty files and
    /// directories, a read-only directory, links (relative, absolute, dangling), a file of a few MB.
    private func makeSampleTree(_ fixture: MirrorFixture) throws {
        try fixture.write("src/a.txt", "alpha", mtime: sampleTime(1))
        try fixture.write("src/empty", "", mode: 0o600, mtime: sampleTime(2))
        try fixture.write("src/bin/tool", "#!/bin/sh\necho hi\n", mode: 0o755, mtime: sampleTime(3))
        try fixture.write("src/bin/suid", "x", mode: 0o4750, mtime: sampleTime(4))
        try fixture.write("src/docs/deep/er/note.md", "# note", mode: 0o640, mtime: sampleTime(5))
        try fixture.write("src/locked/inside.txt", "readonly dir", mode: 0o444, mtime: sampleTime(6))
        try fixture.write("src/big.bin", (0..<1_200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }, mtime: sampleTime(7))
        try fixture.makeDirectory("src/emptydir", mode: 0o710)
        try fixture.link("src/link-relative", to: "a.txt")
        try fixture.link("src/docs/link-absolute", to: "/etc/hostname")
        try fixture.link("src/dangling", to: "does/not/exist")
        try fixture.makeDirectory("src/locked", mode: 0o555)
        try FileDescriptor.currentWorkingDirectory.setTimes(
            at: fixture.source + "/docs/deep", access: nil, modification: sampleTime(8))
    }

    @Test func firstRun_mirrorsTheTreeExactly() async throws {
        let fixture = try MirrorFixture()
        try makeSampleTree(fixture)

        let report = await fixture.mirror()

        #expect(report.result == .success, "\(report.errors)")
        #expect(report.copied == 10)  // 7 files + 3 links
        #expect(report.updated == 0 && report.deleted == 0 && report.unchanged == 0 && report.errorCount == 0)
        #expect(report.bytes == 1_200_000 + 5 + 18 + 1 + 6 + 12)
        try fixture.expectExactMirror()
        #expect(try fixture.temporaryFiles().isEmpty)
        // The roots' own mode and mtime are mirrored too.
        #expect(fixture.status("dst")?.modificationTime == fixture.status("src")?.modificationTime)
    }

    @Test func secondRun_withNothingToDo_writesNothing() async throws {
        let fixture = try MirrorFixture()
        try makeSampleTree(fixture)
        #expect(await fixture.mirror().result == .success)
        let before = try statuses(fixture)

        let report = await fixture.mirror()

        #expect(report.result == .success)
        #expect(report.copied == 0 && report.updated == 0 && report.deleted == 0 && report.bytes == 0)
        #expect(report.unchanged == 10)
        // No entry of the destination was replaced or touched: same inodes, same ctimes.
        #expect(try statuses(fixture) == before)
    }

    @Test func changedFiles_areUpdated_andModeOnlyChangesKeepTheFile() async throws {
        let fixture = try MirrorFixture()
        try makeSampleTree(fixture)
        #expect(await fixture.mirror().result == .success)
        let unchangedInode = fixture.status("dst/empty")?.inode
        let modeOnlyInode = fixture.status("dst/bin/tool")?.inode

        try fixture.write("src/a.txt", "ALPHA", mtime: sampleTime(100))  // same size, new mtime
        try fixture.write("src/docs/deep/er/note.md", "# a longer note", mode: 0o640, mtime: sampleTime(5))  // new size
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: fixture.source + "/bin/tool", 0o700)
        try FileDescriptor.currentWorkingDirectory.removeDirectory(at: fixture.source + "/emptydir")
        try fixture.makeDirectory("src/emptydir", mode: 0o700)
        try fixture.link("src/new-link", to: "bin/tool")

        let report = await fixture.mirror()

        #expect(report.result == .success, "\(report.errors)")
        #expect(report.updated == 3)  // two contents, one mode
        #expect(report.copied == 1)   // the new link
        #expect(report.bytes == 5 + 15)
        try fixture.expectExactMirror()
        #expect(fixture.status("dst/empty")?.inode == unchangedInode)
        #expect(fixture.status("dst/bin/tool")?.inode == modeOnlyInode)
        #expect(fixture.read("dst/a.txt") == "ALPHA")
    }

    @Test func deletedEntries_areRemovedOnlyWithDelete() async throws {
        let fixture = try MirrorFixture()
        try makeSampleTree(fixture)
        #expect(await fixture.mirror().result == .success)
        let cwd = FileDescriptor.currentWorkingDirectory
        try cwd.unlink(at: fixture.source + "/a.txt")
        try cwd.unlink(at: fixture.source + "/link-relative")
        try cwd.unlink(at: fixture.source + "/docs/deep/er/note.md")
        try cwd.removeDirectory(at: fixture.source + "/docs/deep/er")
        try cwd.removeDirectory(at: fixture.source + "/docs/deep")

        let keeping = await fixture.mirror(delete: false)
        #expect(keeping.result == .success)
        #expect(keeping.deleted == 0)
        #expect(fixture.read("dst/a.txt") == "alpha")
        #expect(fixture.status("dst/link-relative")?.kind == .symbolicLink)
        #expect(fixture.read("dst/docs/deep/er/note.md") == "# note")

        let deleting = await fixture.mirror(delete: true)
        #expect(deleting.result == .success, "\(deleting.errors)")
        #expect(deleting.deleted == 5)  // a.txt, the link, note.md, er/, deep/
        try fixture.expectExactMirror()
    }

    @Test func renamedFile_appearsUnderItsNewName_andTheOldGoesWithDelete() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/old-name.txt", "content", mtime: sampleTime())
        #expect(await fixture.mirror().copied == 1)
        try FileDescriptor.currentWorkingDirectory.rename(
            at: fixture.source + "/old-name.txt", to: fixture.source + "/new-name.txt")

        let keeping = await fixture.mirror(delete: false)
        #expect(keeping.copied == 1)
        #expect(fixture.read("dst/old-name.txt") == "content" && fixture.read("dst/new-name.txt") == "content")

        let deleting = await fixture.mirror(delete: true)
        #expect(deleting.deleted == 1 && deleting.copied == 0)
        try fixture.expectExactMirror()
    }

    @Test func directoryReplacedByFile_andFileByDirectory() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/x/inside.txt", "in x", mtime: sampleTime())
        try fixture.write("src/y", "y was a file", mtime: sampleTime())
        try fixture.write("src/z/inside.txt", "in z", mtime: sampleTime())
        #expect(await fixture.mirror().result == .success)
        let cwd = FileDescriptor.currentWorkingDirectory
        try cwd.unlink(at: fixture.source + "/x/inside.txt")
        try cwd.removeDirectory(at: fixture.source + "/x")
        try fixture.write("src/x", "x is a file now", mtime: sampleTime(1))
        try cwd.unlink(at: fixture.source + "/y")
        try fixture.write("src/y/inside.txt", "y is a directory now", mtime: sampleTime(2))
        try cwd.unlink(at: fixture.source + "/z/inside.txt")
        try cwd.removeDirectory(at: fixture.source + "/z")
        try fixture.link("src/z", to: "x")

        // Without delete, a file goes where a file was, but a directory with content stays.
        let keeping = await fixture.mirror(delete: false)
        #expect(keeping.result == .partial)
        #expect(keeping.errors.map(\.path).sorted() == ["x", "z"])
        #expect(keeping.errors.first?.reason == "a directory is in the way and delete is off")
        #expect(fixture.read("dst/x/inside.txt") == "in x")
        #expect(fixture.read("dst/y/inside.txt") == "y is a directory now")

        let deleting = await fixture.mirror(delete: true)
        #expect(deleting.result == .success, "\(deleting.errors)")
        #expect(deleting.deleted == 4)  // x/ and z/ with one file each
        try fixture.expectExactMirror()
    }

    /// Inode, ctime and mtime of every destination entry.
    private func statuses(_ fixture: MirrorFixture) throws -> [String: [String]] {
        try fixture.snapshot("dst").keys.reduce(into: [:]) { result, name in
            let status = try #require(fixture.status("dst/" + name))
            result[name] = ["\(status.inode)", "\(status.changeTime)", "\(status.modificationTime)"]
        }
    }
}
