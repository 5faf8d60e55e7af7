import Glibc
import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// What a mirror must never do: write outside the destination, follow links, modify the source,
/// or run with overlapping roots.
@Suite struct MirrorEngineSafetyTests {
    private func run(_ fixture: MirrorFixture, source: String, destination: String) async -> MirrorReport {
        await MirrorEngine(
            settings: MirrorSettings(source: source, destination: destination, delete: true),
            container: .mirrorWorkers()
        ).run()
    }

    /// A destination file hard-linked (by someone else) to a file outside the destination,
    /// with the source's size and mtime but another mode: the run gives the destination a copy
    /// of its own, and the outside file keeps its mode; the same when contents are compared.
    @Test(arguments: [DaemonConfiguration.CompareMode.sizeAndModificationTime, .checksum])
    func aDestinationFileWithAnotherHardLink_isReplaced_neverChangedInPlace(compare: DaemonConfiguration.CompareMode) async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/h.txt", "same", mode: 0o644, mtime: sampleTime())
        try fixture.write("outside/h.txt", "same", mode: 0o600, mtime: sampleTime())
        try fixture.makeDirectory("dst")
        #expect(link(fixture.root + "/outside/h.txt", fixture.root + "/dst/h.txt") == 0)
        let report = await fixture.mirror(compare: compare)
        #expect(report.result == .success && report.updated == 1, "\(report.errors)")
        #expect(fixture.status("outside/h.txt")?.permissions.rawValue == 0o600)
        #expect(fixture.status("outside/h.txt")?.linkCount == 1)
        #expect(fixture.status("dst/h.txt")?.permissions.rawValue == 0o644)
        #expect(fixture.read("dst/h.txt") == "same")
    }

    /// Owner and group are not mirrored, so a copy keeps set-user-ID only when it has the
    /// source's owner, and set-group-ID only when it has its group: a root run would otherwise
    /// make a user's `chmod 6755` file a set-user-ID-root program, made by whoever may write the
    /// source. The rule is also the one runs compare with (a second run has nothing to do), and
    /// a copy an earlier run left set-user-ID is fixed in place. Directories keep their bits.
    @Test func setIDBits_areKeptOnlyByACopyWithTheSourcesOwnerOrGroup() async throws {
        guard CurrentProcess.effectiveUserID == 0 else {
            try Test.cancel("needs root")
        }
        let fixture = try MirrorFixture()
        try fixture.write("src/theirs", "a user's program", mode: 0o6755, mtime: sampleTime())
        try fixture.write("src/their-group", "root's, in a user's group", mode: 0o6755, mtime: sampleTime())
        try fixture.write("src/mine", "root's own", mode: 0o6755, mtime: sampleTime())
        try fixture.makeDirectory("src/shared", mode: 0o2775)
        #expect(chown(fixture.source + "/theirs", 65534, 65534) == 0)
        #expect(chown(fixture.source + "/their-group", 0, 65534) == 0)
        #expect(chown(fixture.source + "/shared", 65534, 65534) == 0)
        // chown clears the bits: set them again.
        for name in ["theirs", "their-group", "mine"] { #expect(chmod(fixture.source + "/" + name, 0o6755) == 0) }
        #expect(chmod(fixture.source + "/shared", 0o2775) == 0)

        let first = await fixture.mirror()
        #expect(first.result == .success && first.copied == 3, "\(first.errors)")
        func mode(_ path: String) -> String? {
            fixture.status(path).map { String($0.permissions.rawValue, radix: 8) }
        }
        #expect(fixture.status("dst/theirs")?.userID == 0)
        #expect(mode("dst/theirs") == "755")
        #expect(mode("dst/their-group") == "4755")
        #expect(mode("dst/mine") == "6755")
        #expect(mode("dst/shared") == "2775")
        #expect(fixture.read("dst/theirs") == "a user's program")

        let second = await fixture.mirror()
        #expect(second.result == .success && second.unchanged == 3 && second.updated == 0 && second.copied == 0,
                "\(second.errors)")
        #expect(mode("dst/theirs") == "755")

        // A copy an earlier run made set-user-ID root is fixed by the next run, in place.
        for compare in [DaemonConfiguration.CompareMode.sizeAndModificationTime, .checksum] {
            #expect(chmod(fixture.destination + "/theirs", 0o6755) == 0)
            let fixed = await fixture.mirror(compare: compare)
            #expect(fixed.result == .success && fixed.updated == 1 && fixed.copied == 0, "\(fixed.errors)")
            #expect(mode("dst/theirs") == "755")
            #expect(mode("dst/mine") == "6755")
        }
    }

    @Test func destinationInsideSource_isRefused_andNothingIsCreated() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        let report = await run(fixture, source: fixture.source, destination: fixture.source + "/backup/today")
        #expect(report.result == .failed)
        #expect(report.errors.first?.reason.contains("is inside the source") == true, "\(report.errors)")
        #expect(fixture.status("src/backup") == nil)
    }

    @Test func destinationInsideSource_behindACombiningMark_isRefused() async throws {
        // "/" followed by U+0301 is one Swift Character, so a String prefix test said the
        // destination ".../src/\u{301}data" was not inside ".../src".
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        try fixture.write("src/\u{301}data/important.txt", "precious")
        try fixture.link("alias", to: "src/\u{301}data")
        let report = await run(fixture, source: fixture.source, destination: fixture.root + "/alias")
        #expect(report.result == .failed)
        #expect(report.errors.first?.reason.contains("is inside the source") == true, "\(report.errors)")
        #expect(fixture.read("src/\u{301}data/important.txt") == "precious")
        #expect(fixture.status("src/\u{301}data/a.txt") == nil)
    }

    @Test func canonicallyEquivalentNames_areDistinctFiles() async throws {
        // "é" precomposed (U+00E9) and "e" + U+0301 are equal Swift Strings but two names on Linux.
        let composed = "caf\u{E9}.txt"
        let decomposed = "cafe\u{301}.txt"
        let fixture = try MirrorFixture()
        try fixture.write("src/" + composed, "composed")
        try fixture.write("dst/" + decomposed, "an extra file of the destination")
        let first = await fixture.mirror(delete: true)
        #expect(first.result == .success, "\(first.errors)")
        #expect(fixture.read("dst/" + composed) == "composed")
        #expect(fixture.status("dst/" + decomposed) == nil, "the extra file was kept")

        try fixture.write("src/" + decomposed, "decomposed")
        let second = await fixture.mirror(delete: true)
        #expect(second.result == .success, "\(second.errors)")
        #expect(fixture.read("dst/" + composed) == "composed")
        #expect(fixture.read("dst/" + decomposed) == "decomposed")
    }

    @Test func linkWithATargetThatIsNotUTF8_isReportedAndNotRewritten() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        try fixture.link("src/bad-link", toBytes: Array("target".utf8) + [0xFF, 0xFE])
        let report = await fixture.mirror()
        #expect(report.result == .partial)
        #expect(report.errors.map(\.path) == ["bad-link"])
        #expect(report.errors.first?.reason == "the link's target is not valid UTF-8; left alone")
        #expect(fixture.status("dst/bad-link") == nil, "a link to a repaired (other) target was made")
        #expect(fixture.read("dst/a.txt") == "a")
    }

    /// An entry that fails while the source is scanned is not done: the run's last progress
    /// counts the file copied, not the link that could not be mirrored, which counts failed.
    @Test func anEntryThatFailsInTheScan_isNotCountedDone() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        try fixture.link("src/bad-link", toBytes: Array("target".utf8) + [0xFF, 0xFE])
        let last = Locked(MirrorProgress())
        let report = await MirrorEngine(settings: fixture.settings(), container: .mirrorWorkers()).run { progress in
            last.withLock { $0 = progress }
        }
        #expect(report.result == .partial && report.copied == 1 && report.errorCount == 1)
        #expect(last.withLock { $0 } == MirrorProgress(filesDone: 1, filesFailed: 1, filesTotal: 2, bytesDone: 1, bytesTotal: 1))
    }

    /// The same for a source entry whose name is not UTF-8 (found, failed, not done).
    @Test func anEntryWhoseNameIsNotUTF8_isNotCountedDone() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        let badName: [CChar] = Array(fixture.source.utf8CString.dropLast()) + [0x2F, 0x78, -1, 0]  // SOURCE/x\xFF
        let made = open(badName, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        try #require(made >= 0)
        close(made)
        let last = Locked(MirrorProgress())
        let report = await MirrorEngine(settings: fixture.settings(), container: .mirrorWorkers()).run { progress in
            last.withLock { $0 = progress }
        }
        #expect(report.result == .partial && report.copied == 1 && report.errorCount == 1, "\(report.errors)")
        #expect(last.withLock { $0 } == MirrorProgress(filesDone: 1, filesFailed: 1, filesTotal: 2, bytesDone: 1, bytesTotal: 1))
    }

    /// With `delete`, a source name that is not UTF-8 (`x\xFF`, the byte) keeps the
    /// destination's entry of the same bytes (left alone, reported once, with the source's), but
    /// not a valid destination name whose text reads like its shown form (`x\xFF`, four
    /// characters): that is another file, which the source does not have.
    @Test func aNameThatIsNotUTF8_shieldsNoValidNameThatReadsTheSame() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        try fixture.write(#"dst/x\xFF"#, "extra")
        for root in [fixture.source, fixture.destination] {
            let badName: [CChar] = Array(root.utf8CString.dropLast()) + [0x2F, 0x78, -1, 0]  // ROOT/x\xFF
            let made = open(badName, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
            try #require(made >= 0)
            close(made)
        }
        let report = await fixture.mirror(delete: true)
        #expect(report.result == .partial && report.copied == 1 && report.deleted == 1, "\(report.errors)")
        #expect(report.errors.map(\.reason) == ["the name is not valid UTF-8; left alone"], "\(report.errors)")
        #expect(fixture.status(#"dst/x\xFF"#) == nil)
        let badInDestination: [CChar] = Array(fixture.destination.utf8CString.dropLast()) + [0x2F, 0x78, -1, 0]
        #expect(access(badInDestination, F_OK) == 0)
    }

    /// A file changed while being copied in too many runs in a row is an error of the run even
    /// when the run's warnings were full (1000 other skips recorded before it): its own warning
    /// was not kept, but its skip was.
    @Test func aFileChangedTooOften_isAnError_pastAFullListOfWarnings() {
        var report = MirrorReport()
        report.result = .success
        for index in 0..<MirrorReport.issueLimit { report.fail("gone-\(index)", .vanished) }
        report.fail("grow", .changedWhileCopying(copyKept: true))
        #expect(report.changedWhileCopying == ["grow"] && report.skipped == MirrorReport.issueLimit + 1)
        report.changedTooOften("grow", "changed in each of the last 3 runs")
        #expect(report.errorCount == 1 && report.errors.map(\.path) == ["grow"], "\(report.errors)")
        #expect(report.skipped == MirrorReport.issueLimit && report.result == .partial)
    }

    @Test func linkThatCannotBeMirrored_leavesTheDirectoryInItsWay() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("dst/bad-link/kept.txt", "kept")
        try fixture.link("src/bad-link", toBytes: Array("target".utf8) + [0xFF])
        let report = await fixture.mirror(delete: true)
        #expect(report.errors.map(\.reason) == ["the link's target is not valid UTF-8; left alone"])
        #expect(fixture.read("dst/bad-link/kept.txt") == "kept")
    }

    @Test func emptySourceWithDelete_isRefused_andTheDestinationKept() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("dst/keep.txt", "precious")
        _ = try? FileDescriptor.currentWorkingDirectory.makeDirectory(at: fixture.source, permissions: 0o755)
        let report = await run(fixture, source: fixture.source, destination: fixture.destination)
        #expect(report.result == .failed)
        #expect(report.errors.first?.reason.hasPrefix("the source is empty and delete is on") == true, "\(report.errors)")
        #expect(fixture.status("dst/keep.txt") != nil)
    }

    @Test func sourceInsideDestination_isRefused() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("dst/data/a.txt", "a")
        let report = await run(fixture, source: fixture.destination + "/data", destination: fixture.destination)
        #expect(report.result == .failed)
        // Paths quoted, as in the configuration's refusals.
        #expect(report.errors.first?.reason.hasSuffix(#"is inside the destination "\#(fixture.destination)" (real paths)"#) == true,
            "\(report.errors)")
        #expect(fixture.read("dst/data/a.txt") == "a")
    }

    @Test func overlapThroughASymlinkedPath_isRefused() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        try fixture.link("alias", to: "src")
        let inside = await run(fixture, source: fixture.source, destination: fixture.root + "/alias/copy")
        #expect(inside.result == .failed)
        #expect(inside.errors.first?.reason.contains("inside the source") == true, "\(inside.errors)")
        let same = await run(fixture, source: fixture.source, destination: fixture.root + "/alias")
        #expect(same.result == .failed)
        #expect(same.errors.first?.reason.contains("is the source") == true, "\(same.errors)")
        #expect(try fixture.snapshot("src").keys.sorted() == ["a.txt"])
    }

    @Test func anotherJobsTreeReachedThroughALinkMadeLater_isRefused() async throws {
        // Job "a" mirrors a-src into a-dst. Since the configuration was read, a link has made
        // this job's destination (alias) a-dst, or its source a part of a-dst: a deleting run
        // would empty a's tree.
        let fixture = try MirrorFixture()
        try fixture.write("src/b.txt", "b")
        try fixture.write("a-src/a.txt", "a")
        try fixture.write("a-dst/a.txt", "a")
        try fixture.link("alias", to: "a-dst")
        let a = MirrorSettings.OtherJob(name: "a", source: fixture.root + "/a-src", destination: fixture.root + "/a-dst")
        var settings = MirrorSettings(source: fixture.source, destination: fixture.root + "/alias", delete: true)
        settings.otherJobs = [a]
        let same = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()
        #expect(same.result == .failed)
        #expect(same.errors.map(\.path) == [fixture.root + "/alias"])
        #expect(same.errors.first?.reason == "the destination \"\(fixture.root)/a-dst\" is the destination \"\(fixture.root)/a-dst\" of job \"a\" (real paths; configured as \"\(fixture.root)/a-dst\"): the jobs would overwrite or delete each other's files")
        #expect(try fixture.snapshot("a-dst").keys.sorted() == ["a.txt"])

        settings = MirrorSettings(source: fixture.root + "/alias/sub", destination: fixture.destination, delete: true)
        try fixture.write("a-dst/sub/c.txt", "c")
        try fixture.makeDirectory("dst")
        settings.otherJobs = [a]
        let inside = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()
        #expect(inside.result == .failed)
        #expect(inside.errors.map(\.path) == [fixture.root + "/alias/sub"])
        #expect(inside.errors.first?.reason.hasPrefix("the source \"\(fixture.root)/a-dst/sub\" is inside the destination \"\(fixture.root)/a-dst\" of job \"a\"") == true, "\(inside.errors)")
        #expect(try fixture.snapshot("dst").isEmpty)

        // Another job's destination that does not exist yet: a link to where it will be leads there.
        try fixture.link("c-dst", to: "dst/c")
        settings = MirrorSettings(source: fixture.source, destination: fixture.destination, delete: true)
        settings.otherJobs = [MirrorSettings.OtherJob(name: "c", source: fixture.root + "/a-src", destination: fixture.root + "/c-dst")]
        let notYet = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()
        #expect(notYet.result == .failed)
        #expect(notYet.errors.first?.reason.hasPrefix("the destination \"\(fixture.root)/dst\" contains the destination \"\(fixture.root)/dst/c\" of job \"c\" (real paths; configured as \"\(fixture.root)/c-dst\")") == true, "\(notYet.errors)")
        #expect(try fixture.snapshot("dst").isEmpty)

        // Apart, through links or not, the run goes on.
        try fixture.link("a-src-alias", to: "a-src")
        settings = MirrorSettings(source: fixture.source, destination: fixture.destination, delete: true)
        settings.otherJobs = [MirrorSettings.OtherJob(name: "a", source: fixture.root + "/a-src-alias", destination: fixture.root + "/alias")]
        let apart = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()
        #expect(apart.result == .success, "\(apart.errors)")
        #expect(fixture.read("dst/b.txt") == "b")
    }

    /// A root's path swapped for a link after the run resolved and checked it (between the
    /// two, the other jobs' roots are resolved, seconds on a slow mount): the run opens the
    /// real path it checked, component by component without following a link, and fails
    /// naming it, instead of reading and deleting in the tree the link leads to.
    @Test(arguments: ["source", "destination", "destination's parent"])
    func aRootSwappedForALinkAfterItWasResolved_isNotFollowed(swapped: String) throws {
        let fixture = try MirrorFixture()
        try fixture.write("home/alice/docs/a.txt", "a")
        try fixture.write("secret/key", "key")
        try fixture.write("elsewhere/precious", "precious")
        try fixture.makeDirectory("backup/docs")
        var settings = MirrorSettings(
            source: fixture.root + "/home/alice/docs",
            destination: fixture.root + (swapped == "destination's parent" ? "/backup/new/docs" : "/backup/docs"), delete: true)
        settings.createsDestination = true
        let own = try MirrorRoots.resolve(settings) { _ throws(MirrorRoots.Failure) in }
        let (moved, target) = switch swapped {
        case "source": ("home/alice/docs", "secret")
        case "destination": ("backup/docs", "elsewhere")
        default: ("backup", "elsewhere")
        }
        #expect(rename(fixture.root + "/" + moved, fixture.root + "/" + moved + ".old") == 0)
        try fixture.link(moved, to: fixture.root + "/" + target)

        let realPath = swapped == "source" ? own.source : own.existing
        do {
            _ = try MirrorRoots.open(settings, own, unchecked: []) { _ throws(MirrorRoots.Failure) in }
            Issue.record("the roots were opened through the link to \(target)")
        } catch {
            #expect(error.path == (swapped == "source" ? settings.source : settings.destination))
            #expect(error.reason.hasPrefix(
                "the \(swapped == "source" ? "source" : "destination") cannot be opened: a part of its real path \"\(realPath)\" "
                    + "was replaced by a symbolic link or by something that is not a directory since the run resolved it (ENOTDIR)"),
                "\(error)")
        }
        #expect(try fixture.snapshot("elsewhere").keys.sorted() == ["precious"])
        #expect(try fixture.snapshot("secret").keys.sorted() == ["key"])
    }

    @Test func missingOrUnusableSourceRoot_failsTheRun() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("file", "not a directory")
        let missing = await run(fixture, source: fixture.root + "/nowhere", destination: fixture.destination)
        #expect(missing.result == .failed)
        #expect(missing.errors.first?.path == fixture.root + "/nowhere")
        #expect(missing.errors.first?.reason.contains("ENOENT") == true, "\(missing.errors)")
        // A root that is a file is a mistake in the configuration, said so, not a replacement
        // since the run resolved it (which a link there, or a part of it no directory, is).
        let directories = "not a directory; a mirror's source and destination are directories: "
            + "name the directory to mirror, or the one to mirror into"
        let notDirectory = await run(fixture, source: fixture.root + "/file", destination: fixture.destination)
        #expect(notDirectory.result == .failed)
        #expect(notDirectory.errors.first?.reason == "the source cannot be opened: \"\(fixture.root)/file\" is a regular file, \(directories)")
        #expect(fixture.status("dst") == nil)
        try fixture.write("src/a.txt", "a")
        let fileDestination = await run(fixture, source: fixture.source, destination: fixture.root + "/file")
        #expect(fileDestination.result == .failed)
        #expect(fileDestination.errors.first?.reason == "the destination cannot be opened: \"\(fixture.root)/file\" is a regular file, \(directories)")
        let belowAFile = await run(fixture, source: fixture.source, destination: fixture.root + "/file/out")
        #expect(belowAFile.result == .failed)
        #expect(belowAFile.errors.first?.path == fixture.root + "/file/out")
        #expect(belowAFile.errors.first?.reason == "the destination cannot be resolved: \"\(fixture.root)/file\" is a regular file, \(directories)")
        #expect(mkfifo(fixture.root + "/pipe", 0o600) == 0)
        let pipe = await run(fixture, source: fixture.root + "/pipe", destination: fixture.destination)
        #expect(pipe.errors.first?.reason == "the source cannot be opened: \"\(fixture.root)/pipe\" is a named pipe, \(directories)")
        #expect(fixture.read("file") == "not a directory")
        #expect(fixture.status("dst") == nil)
    }

    @Test func rootsWhoseRealPathIsNotUTF8_failTheRun_andNothingIsWritten() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        // A directory "d\xff" and a link "dlink" to it, both spelled in bytes.
        let name: [CChar] = [0x64, -1, 0]
        #expect(mkdir(Array((fixture.root + "/").utf8CString.dropLast()) + name, 0o755) == 0)
        #expect(symlink(name, fixture.root + "/dlink") == 0)
        let destination = await run(fixture, source: fixture.source, destination: fixture.root + "/dlink/out")
        #expect(destination.result == .failed)
        #expect(destination.errors.first?.path == fixture.root + "/dlink/out")
        #expect(destination.errors.first?.reason.contains("EILSEQ") == true, "\(destination.errors)")
        let source = await run(fixture, source: fixture.root + "/dlink", destination: fixture.destination)
        #expect(source.result == .failed)
        #expect(source.errors.first?.reason.contains("EILSEQ") == true, "\(source.errors)")
        #expect(fixture.status("dst") == nil)
    }

    @Test func missingDestinationRoot_isCreatedWithParents_unlessTurnedOff() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a", mtime: sampleTime())
        var settings = MirrorSettings(source: fixture.source, destination: fixture.destination + "/deeper/copy")
        settings.createsDestination = false
        let refused = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()
        #expect(refused.result == .failed)
        #expect(refused.errors.first?.reason.hasPrefix("the destination does not exist") == true)
        #expect(fixture.status("dst") == nil)

        settings.createsDestination = true
        let created = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()
        #expect(created.result == .success, "\(created.errors)")
        #expect(fixture.read("dst/deeper/copy/a.txt") == "a")
    }

    @Test func symlinkPlantedInTheDestination_isNeverFollowed() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/sub/a.txt", "a", mtime: sampleTime())
        try fixture.write("src/b.txt", "b", mtime: sampleTime())
        try fixture.write("outside/keep.txt", "keep", mtime: sampleTime())
        try fixture.write("outside/b.txt", "victim", mtime: sampleTime())
        try fixture.makeDirectory("dst")
        try fixture.link("dst/sub", to: fixture.root + "/outside")            // where a directory goes
        try fixture.link("dst/b.txt", to: fixture.root + "/outside/b.txt")    // where a file goes
        let outsideBefore = try fixture.snapshot("outside")

        let report = await fixture.mirror(delete: true)

        #expect(report.result == .success, "\(report.errors)")
        #expect(try fixture.snapshot("outside") == outsideBefore)
        #expect(fixture.status("dst/sub")?.kind == .directory)
        #expect(fixture.status("dst/b.txt")?.kind == .regular)
        try fixture.expectExactMirror()
    }

    @Test func linkPointingOutOfTheTree_isCopiedAsALink_andItsTargetIsNotRead() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("secret/key", "do not copy me")
        try fixture.write("secret/dir/inner", "nor me")
        // An old access time: a read would move it (relatime updates atimes older than a day).
        let old = TimeSpec(seconds: 1_000_000_000)
        try FileDescriptor.currentWorkingDirectory.setTimes(at: fixture.root + "/secret/key", access: old, modification: old)
        try fixture.link("src/escape-file", to: fixture.root + "/secret/key")
        try fixture.link("src/escape-dir", to: "../secret/dir")
        try fixture.write("src/plain", "plain")

        let report = await fixture.mirror()

        #expect(report.result == .success)
        #expect(report.copied == 3 && report.bytes == 5)
        #expect(fixture.status("dst/escape-file")?.kind == .symbolicLink)
        #expect(fixture.status("dst/escape-dir")?.kind == .symbolicLink)
        #expect(try fixture.snapshot("dst").keys.sorted() == ["escape-dir", "escape-file", "plain"])
        #expect(fixture.status("secret/key")?.accessTime == old)
        try fixture.expectExactMirror()
    }

    @Test func theSourceIsNeverModified() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a", mode: 0o400, mtime: sampleTime())
        try fixture.write("src/d/b.txt", "b", mtime: sampleTime())
        try fixture.makeDirectory("src/d", mode: 0o500)
        try fixture.link("src/l", to: "a.txt")
        try fixture.write("dst/extra", "to be deleted")
        let before = try fixture.snapshot("src")
        let changeTimes = before.keys.map { fixture.status("src/" + $0)?.changeTime }

        #expect(await fixture.mirror(delete: true).result == .success)
        #expect(await fixture.mirror(compare: .checksum, delete: true).result == .success)

        #expect(try fixture.snapshot("src") == before)
        #expect(before.keys.map { fixture.status("src/" + $0)?.changeTime } == changeTimes)
    }

    @Test func specialFiles_areSkippedWithAWarning() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        #expect(mkfifo(fixture.source + "/pipe", 0o644) == 0)
        let socket = try UnixSocket.listen(at: UnixSocketAddress(path: fixture.source + "/sock"))
        defer { _ = socket }

        let report = await fixture.mirror()

        #expect(report.result == .success)
        #expect(report.skipped == 2 && report.copied == 1)
        #expect(report.warnings.map(\.path).sorted() == ["pipe", "sock"])
        #expect(report.warnings.first { $0.path == "pipe" }?.reason.hasPrefix("fifo skipped") == true)
        #expect(try fixture.snapshot("dst").keys.sorted() == ["a.txt"])
    }

    /// A file and a directory of the source replaced by fifos: skipped, with a warning, as
    /// special files are; with `delete`, what the destination has under their names goes (the
    /// source has no file or directory there any more: it stayed for ever), and stays without.
    @Test func entriesReplacedBySpecialFiles_goWithDelete_andStayWithout() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        try fixture.write("src/was-file", "a file")
        try fixture.write("src/was-dir/inner.txt", "in a directory")
        #expect(await fixture.mirror().copied == 3)
        let cwd = FileDescriptor.currentWorkingDirectory
        try cwd.unlink(at: fixture.source + "/was-file")
        try cwd.unlink(at: fixture.source + "/was-dir/inner.txt")
        try cwd.removeDirectory(at: fixture.source + "/was-dir")
        #expect(mkfifo(fixture.source + "/was-file", 0o644) == 0)
        #expect(mkfifo(fixture.source + "/was-dir", 0o644) == 0)

        let keeping = await fixture.mirror()
        #expect(keeping.result == .success && keeping.skipped == 2 && keeping.deleted == 0, "\(keeping.errors)")
        #expect(fixture.read("dst/was-file") == "a file")
        #expect(fixture.read("dst/was-dir/inner.txt") == "in a directory")

        let deleting = await fixture.mirror(delete: true)
        #expect(deleting.result == .success, "\(deleting.errors)")
        #expect(deleting.skipped == 2 && deleting.deleted == 3)  // was-file, was-dir/ and inner.txt
        #expect(deleting.warnings.map(\.path).sorted() == ["was-dir", "was-file"])
        #expect(try fixture.snapshot("dst").keys.sorted() == ["a.txt"])

        let again = await fixture.mirror(delete: true)
        #expect(again.result == .success && again.skipped == 2 && again.deleted == 0 && again.unchanged == 1, "\(again.errors)")
    }

    @Test func bindMountsOfTheOtherRoot_areNeverEntered() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        try fixture.makeDirectory("src/inner")
        try fixture.makeDirectory("dst/extra")
        let environment = ["PATH": "/usr/bin:/bin"]
        guard CurrentProcess.effectiveUserID == 0,
            (try? Subprocess.run("/bin/mount", arguments: ["--bind", fixture.destination, fixture.source + "/inner"],
                                 environment: environment))?.status == .exited(0)
        else {
            try Test.cancel("needs root and bind mounts")
        }
        defer { _ = try? Subprocess.run("/bin/umount", arguments: [fixture.source + "/inner"], environment: environment) }
        let mounted = try Subprocess.run(
            "/bin/mount", arguments: ["--bind", fixture.source, fixture.destination + "/extra"], environment: environment)
        try #require(mounted.status == .exited(0))
        defer { _ = try? Subprocess.run("/bin/umount", arguments: [fixture.destination + "/extra"], environment: environment) }

        // The source holds the destination (src/inner) and the destination the source (dst/extra,
        // which delete would empty): the run does not start.
        let refused = await fixture.mirror(delete: true)
        #expect(refused.result == .failed)
        #expect(refused.errors.map(\.description) == [
            "\(fixture.destination): the destination \"\(fixture.destination)\" is inside the source \"\(fixture.source)\" through a mount: "
                + "\"\(fixture.destination)\" and \"\(fixture.source)/inner\" are the same directory (same device and inode)",
        ])
        #expect(fixture.read("dst/a.txt") == nil)

        // Nor would the walk enter either, were the mounts made once the run started.
        var settings = fixture.settings(delete: true)
        settings.checksOwnRootsThroughMounts = false
        let report = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()

        #expect(report.result == .partial)
        #expect(report.errors.map(\.description).sorted() == [
            "extra: is the other root of the mirror (a bind mount?); not descended",
            "inner: is the other root of the mirror (a bind mount?); not descended",
        ])
        #expect(fixture.read("src/a.txt") == "a" && fixture.read("dst/a.txt") == "a")
    }
}
