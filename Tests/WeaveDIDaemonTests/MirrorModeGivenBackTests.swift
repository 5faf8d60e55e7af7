import Foundation
import Glibc
import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// Where the child process of the refused-start test finds its fixture.
private let refusedStartChildRootVariable = "WEAVEDI_MIRROR_TEST_REFUSED_START_ROOT"
/// Where the child process of the cancelled-run test finds its fixture.
private let cancelledRunChildRootVariable = "WEAVEDI_MIRROR_TEST_CANCELLED_RUN_ROOT"

/// Where the child process of the failed owner opening test finds its fixture.
private let failedOwnerOpeningChildRootVariable = "WEAVEDI_MIRROR_TEST_FAILED_OWNER_OPENING_ROOT"
/// Where the child process of the stopped-removal test finds its fixture.
private let stoppedRemovalChildRootVariable = "WEAVEDI_MIRROR_TEST_STOPPED_REMOVAL_ROOT"

/// Destination directories a run made writable (a root or a subdirectory whose mode denies its
/// owner `r`, opened as its owner may) get their mode back when the run does not finish them,
/// as far as this process may set it: under a filter like systemd's `RestrictSUIDSGID=yes`
/// (`MirrorSetIDBitsTests.filterWrapper`), without their set-ID bits, which the run reports.
/// Modes stop the run's user only when it is not root, so the engine runs in a child process as
/// `nobody` (uid 65534, through `setpriv`), the filter in between: the child is this test
/// binary, filtered to one of the `child…` tests, each enabled only there.
@Suite struct MirrorModeGivenBackTests {
    private func asNobody(_ name: String, _ variable: String, root: String, filter: String?) throws -> SubprocessResult {
        try ChildAsNobody.run("MirrorModeGivenBackTests", name, variable, root: root, wrapper: filter)
    }

    /// The set-ID filter, built in `directory` (which `nobody` may enter); nil, saying why for
    /// `test`, where there is no C compiler or no seccomp.
    private func filter(in directory: TemporaryDirectory, for test: String = #function) throws -> String? {
        #expect(chmod(directory.path, 0o755) == 0)
        switch try MirrorSetIDBitsTests.filterWrapper(in: directory) {
        case let .success(program): return program
        case let .failure(reason):
            print("\(test): without the set-ID filter: \(reason)")
            return nil
        }
    }

    /// A program that installs a seccomp filter making `chmod`, `fchmodat` and `fchmodat2` (the
    /// calls that change a mode by path, as through `/proc/self/fd`: not `fchmod`) to exactly
    /// `mode` fail with `EIO`, as a file system that stopped taking changes would, then runs its
    /// arguments; built in `directory` (which `nobody` may enter). Where there is no C compiler
    /// or no seccomp, cancels the test (skipped).
    private func failingChmod(to mode: String, in directory: TemporaryDirectory) throws -> String {
        #expect(chmod(directory.path, 0o755) == 0)
        if case let .failure(reason) = try MirrorSetIDBitsTests.filterWrapper(in: directory) {
            try Test.cancel("needs a C compiler and seccomp: \(reason)")
        }
        let source = directory.write("eio.c", MirrorSetIDBitsTests.seccompWrapper("eio", macros: #"""
            #define REFUSE(NR_, A) \
              BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K, NR_, 0, 4), \
              BPF_STMT(BPF_LD|BPF_W|BPF_ABS, ARG(A)), \
              BPF_STMT(BPF_ALU|BPF_AND|BPF_K, 07777), \
              BPF_JUMP(BPF_JMP|BPF_JEQ|BPF_K, MODE, 0, 1), \
              BPF_STMT(BPF_RET|BPF_K, SECCOMP_RET_ERRNO|EIO), \
              BPF_STMT(BPF_LD|BPF_W|BPF_ABS, NR)
            """#, rules: #"""
                REFUSE(__NR_fchmodat, 2), REFUSE(__NR_fchmodat2, 2),
            #ifdef __NR_chmod
                REFUSE(__NR_chmod, 1),
            #endif
            """#))
        let program = directory.path + "/eio"
        let build = try Subprocess.run(
            "/usr/bin/cc", arguments: ["-O", "-DMODE=0" + mode, "-o", program, source], environment: ["PATH": "/usr/bin:/bin"])
        try #require(build.status == .exited(0), "\(build.standardErrorText)")
        return program
    }

    /// The child's report to its parent: `lines` in `out/report.txt` under `root`.
    private static func writeReport(_ lines: [String], root: String) {
        let written = FileManager.default.createFile(
            atPath: root + "/out/report.txt", contents: Data(lines.joined(separator: "\n").utf8))
        #expect(written)
    }

    /// The mode of `path`, as messages show it.
    private static func mode(_ path: String) throws -> String {
        try FileStatus(path: path, followSymlinks: false).permissions.description
    }

    /// A destination root whose mode denies its owner `r` and has set-group-ID (mode 2355),
    /// opened as its owner may (its owner's `rwx` added: 0755, the bit refused), then refused
    /// (an empty source over it, with delete): it gets its mode back less the bit, and the run
    /// says so. It was left 0755, its owner's `rwx` added, the refusal of the bit swallowed.
    @Test func aRefusedStart_givesTheDestinationRootItsModeBack_lessTheSetIDBitsItMayNotSet() throws {
        let tools = TemporaryDirectory()
        try ChildAsNobody.requirePossible()
        guard let filter = try filter(in: tools) else { try Test.cancel("needs the set-ID filter: a C compiler and seccomp") }
        let fixture = try MirrorFixture()
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: fixture.root, 0o755)
        try fixture.makeDirectory("empty")
        try fixture.write("kept/file.txt", "kept")
        try fixture.makeDirectory("out")
        for path in ["kept", "kept/file.txt", "out"] {
            #expect(chown(fixture.root + "/" + path, 65534, 65534) == 0)
        }
        try fixture.makeDirectory("kept", mode: 0o2355)
        let child = try asNobody(
            "childRun_refusedOverASetGroupIDRoot", refusedStartChildRootVariable, root: fixture.root, filter: filter)
        #expect(child.status == .exited(0), "\(child.standardOutputText)\(child.standardErrorText)")
        #expect(fixture.read("out/report.txt") == """
            uid 65534
            failed; set-ID bits not kept on 1 (first: .)
            error \(fixture.root)/empty: the source is empty and delete is on: refusing to delete everything in the \
            destination (is the source's disk mounted?); put a file in the source, or empty the destination by hand
            kept mode 0355
            """, "\(child.standardOutputText)\(child.standardErrorText)")
        #expect(fixture.read("kept/file.txt") == "kept")
    }

    /// The report of a destination root configured as `destination`, mode 0355, opened as its
    /// owner may (0755 now), whose mode cannot be given back: an `O_PATH` handle, on which
    /// `fchmod` fails with `EBADF`, stands for a file system refusing it.
    private func rootModeNotGivenBack(configuredAs destination: String) throws -> MirrorReport {
        let fixture = try MirrorFixture()
        try fixture.makeDirectory("dst", mode: 0o355)
        let found = try FileStatus(path: fixture.destination, followSymlinks: false)
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: fixture.destination, 0o755)
        let handle = try FileDescriptor.open(fixture.destination, .pathOnly, options: [.directory, .noFollow])
        var report = MirrorReport()
        MirrorRoots.giveBack(found, to: handle.descriptor, destination, into: &report)
        return report
    }

    /// A destination root whose mode cannot be given back at all is a failure in the run's
    /// report, naming the root and the mode to give it by hand; it was swallowed. (An `O_PATH`
    /// handle, on which `fchmod` fails with `EBADF`, stands for a file system refusing it.)
    @Test func aDestinationRootModeThatCannotBeGivenBack_isReported() throws {
        let report = try rootModeNotGivenBack(configuredAs: "/backup/docs")
        #expect(report.errors.map(\.description) == [
            "/backup/docs: the destination root's mode, 0355, could not be given back after the run opened it as its owner "
                + "may (its owner's rwx added): Bad file descriptor (EBADF); give it back by hand: chmod 0355 /backup/docs"
        ])
        #expect(report.setIDBitsNotKept == 0)
    }

    /// The `chmod` given to do by hand names the path as one shell word: one with a space, a
    /// `;`, a `$(…)` or a quote, pasted, neither breaks the command nor runs anything. It was
    /// written bare (`chmod 0355 /backup/my docs; $(…)`).
    @Test func theChmodToGiveAModeBackByHand_quotesThePath() throws {
        let report = try rootModeNotGivenBack(configuredAs: "/backup/it's my docs; $(touch x)")
        let reason = try #require(report.errors.first?.reason)
        #expect(reason.hasSuffix(#"give it back by hand: chmod 0355 '/backup/it'\''s my docs; $(touch x)'"#), "\(reason)")
    }

    /// A destination directory gone by the time it is opened as its owner may is said to have
    /// vanished from the destination (an error of the run), not from the source (a warning).
    @Test func anOwnerOpeningOfADirectoryGoneMeanwhile_saysItVanishedFromTheDestination() throws {
        let fixture = try MirrorFixture()
        try fixture.makeDirectory("dst")
        let parent = try FileDescriptor.currentWorkingDirectory.openDirectory(at: fixture.destination)
        let sourceRoot = FileIdentity(try FileStatus(path: fixture.source, followSymlinks: false))
        var found: FileStatus?
        var report = MirrorReport()
        #expect(throws: MirrorFailure.vanishedFromDestination) {
            _ = try OwnerOpening.open(
                "gone", in: parent.descriptor, refusing: sourceRoot, found: &found, report: &report, at: "gone",
                fullPath: fixture.destination + "/gone")
        }
        #expect(found == nil && report.errors.isEmpty)
    }

    /// A directory whose mode denies its owner `r` (0355), opened as its owner may (its
    /// owner's `rwx` added), whose opening then fails (no descriptor left: `EMFILE`), and whose
    /// mode cannot be given back (`EIO`, from a filter): a failure in the run's report, naming
    /// the directory and the `chmod` that gives it back. It was swallowed, the directory left
    /// 0755 unsaid.
    @Test func anOwnerOpeningThatFailsAfterTheChmod_reportsAModeItCannotGiveBack() throws {
        let tools = TemporaryDirectory()
        try ChildAsNobody.requirePossible()
        let filter = try failingChmod(to: "355", in: tools)
        let fixture = try MirrorFixture()
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: fixture.root, 0o755)
        try fixture.makeDirectory("locked")
        try fixture.makeDirectory("out")
        for path in ["locked", "out"] {
            #expect(chown(fixture.root + "/" + path, 65534, 65534) == 0)
        }
        try fixture.makeDirectory("locked", mode: 0o355)
        let child = try asNobody(
            "childOpen_failingAfterTheChmod", failedOwnerOpeningChildRootVariable, root: fixture.root, filter: filter)
        #expect(child.status == .exited(0), "\(child.standardOutputText)\(child.standardErrorText)")
        #expect(fixture.read("out/report.txt") == """
            uid 65534
            thrown EMFILE
            error locked: its mode, 0355, could not be given back after the run added its owner's rwx to open it: \
            Input/output error (EIO); give it back by hand: chmod 0355 \(fixture.root)/locked
            """, "\(child.standardOutputText)\(child.standardErrorText)")
        #expect(try Self.mode(fixture.root + "/locked") == "0755")
    }

    /// The child's half: the opening with one descriptor left (the handle's), then what it
    /// threw and reported.
    @Test(.enabled(if: CurrentProcess.environmentValue(failedOwnerOpeningChildRootVariable) != nil))
    func childOpen_failingAfterTheChmod() throws {
        let root = try #require(CurrentProcess.environmentValue(failedOwnerOpeningChildRootVariable))
        let parent = try FileDescriptor.currentWorkingDirectory.openDirectory(at: root)
        let identity = FileIdentity(try parent.descriptor.status())
        var limit = rlimit()
        #expect(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        var lowered = limit
        lowered.rlim_cur = min(limit.rlim_cur, 256)
        #expect(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &lowered) == 0)
        // Every descriptor taken but one.
        var fillers: [Int32] = []
        while case let filler = dup(parent.descriptor.rawValue), filler >= 0 { fillers.append(filler) }
        close(fillers.removeLast())
        var found: FileStatus?
        var report = MirrorReport()
        var thrown = "nothing"
        do {
            _ = try OwnerOpening.open(
                "locked", in: parent.descriptor, refusing: identity, found: &found, report: &report, at: "locked",
                fullPath: root + "/locked")
        } catch .system("open", .tooManyOpenFiles) {
            thrown = "EMFILE"
        } catch {
            thrown = "\(error)"
        }
        for filler in fillers { close(filler) }
        #expect(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        Self.writeReport(["uid \(getuid())", "thrown \(thrown)"] + report.errors.map { "error \($0)" }, root: root)
    }

    /// How deep the tree of the stopped-removal test is: deeper than the directories a removal
    /// keeps open (`DestinationRemover.openLevels`), so that the shallowest are closed when it stops.
    private static let stoppedRemovalDepth = DestinationRemover.openLevels + 8

    /// The modes of the stopped-removal test's tree: 0555 (made writable to be emptied) and
    /// 0355 (opened as its owner may) in turn.
    private static func stoppedRemovalMode(depth: Int) -> UInt32 {
        depth % 2 == 0 ? 0o555 : 0o355
    }

    /// A removal (`delete`) that stops part way, deep down a tree of read-only directories
    /// (modes 0555 and 0355 in turn, each made writable, or opened as its owner may, to be
    /// emptied), on a directory of root's it may not empty: the directories left get their
    /// modes back, the shallowest of them (closed by then, the tree being deeper than the
    /// directories a removal keeps open) opened again through `..`. They kept their owner's
    /// `rwx` for good: each run stops there again.
    @Test func aRemovalThatStopsPartWay_givesTheDirectoriesItMadeWritableTheirModesBack() throws {
        try ChildAsNobody.requirePossible()
        let fixture = try MirrorFixture()
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: fixture.root, 0o755)
        try fixture.write("src/keep.txt", "kept")
        let levels = (1...Self.stoppedRemovalDepth).map { "dst" + String(repeating: "/d", count: $0) }
        try fixture.write(levels[levels.count - 1] + "/roots/file.txt", "root's")
        try fixture.makeDirectory("out")
        for path in ["dst", "out"] + levels {
            #expect(chown(fixture.root + "/" + path, 65534, 65534) == 0)
        }
        for (depth, path) in levels.enumerated().reversed() {
            try FileDescriptor.currentWorkingDirectory.setPermissions(
                at: fixture.root + "/" + path, FilePermissions(rawValue: Self.stoppedRemovalMode(depth: depth)))
        }
        let child = try asNobody("childRun_stoppedRemoval", stoppedRemovalChildRootVariable, root: fixture.root, filter: nil)
        #expect(child.status == .exited(0), "\(child.standardOutputText)\(child.standardErrorText)")
        #expect(fixture.read("out/report.txt") == """
            uid 65534
            partial deleted 0 errors ["d: unlink: Permission denied (EACCES)"]
            """, "\(child.standardOutputText)\(child.standardErrorText)")
        let changed = try levels.enumerated().compactMap { depth, path in
            let mode = try FileStatus(path: fixture.root + "/" + path, followSymlinks: false).permissions
            return mode.rawValue == Self.stoppedRemovalMode(depth: depth) ? nil : "\(depth + 1): \(mode)"
        }
        #expect(changed == [])
        #expect(fixture.read(levels[levels.count - 1] + "/roots/file.txt") == "root's")
    }

    /// The child's half: the run, then what it reported.
    @Test(.enabled(if: CurrentProcess.environmentValue(stoppedRemovalChildRootVariable) != nil))
    func childRun_stoppedRemoval() async throws {
        let root = try #require(CurrentProcess.environmentValue(stoppedRemovalChildRootVariable))
        let report = await MirrorEngine(
            settings: MirrorSettings(source: root + "/src", destination: root + "/dst", delete: true, workers: 1),
            container: .mirrorWorkers()
        ).run()
        Self.writeReport(
            ["uid \(getuid())", "\(report.result) deleted \(report.deleted) errors \(report.errors.map(\.description))"], root: root)
    }

    /// Roots opened for a run that had stopped waiting for them (cancelled, or a step that did
    /// not answer), which nobody takes, give the destination root its mode back when freed; a
    /// mode that cannot be given back then is reported by the next run into that destination,
    /// once. It went nowhere. (An `O_PATH` handle, on which `fchmod` fails with `EBADF`, stands
    /// for a file system refusing it.)
    @Test func aRootModeNotGivenBackAfterTheRunStoppedWaiting_isReportedByTheNextRun() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        try keepALateGiveBack(fixture, as: fixture.destination, job: nil)
        let next = await MirrorEngine(settings: fixture.settings(), container: .mirrorWorkers()).run()
        #expect(next.result == .partial)
        #expect(next.copied == 1)
        #expect(next.errors.map(\.description) == [
            "\(fixture.destination): the destination root's mode, 0355, could not be given back after an earlier run that had "
                + "stopped waiting for its start (cancelled, or a step that did not answer) opened it as its owner may (its "
                + "owner's rwx added): Bad file descriptor (EBADF); give it back by hand: chmod 0355 \(fixture.destination)"
        ])
        let after = await MirrorEngine(settings: fixture.settings(), container: .mirrorWorkers()).run()
        #expect(after.result == .success)
        #expect(after.errors == [])
    }

    /// Has the destination root of `fixture` (mode 0355) opened as its owner may by a run that
    /// stopped waiting for its start, configured as `destination`, for the job `job`, whose
    /// mode cannot be given back (an `O_PATH` handle, on which `fchmod` fails with `EBADF`):
    /// kept for a later run to report (`MirrorLateGiveBacks`).
    private func keepALateGiveBack(_ fixture: MirrorFixture, as destination: String, job: String?) throws {
        try fixture.makeDirectory("dst", mode: 0o355)
        let found = try FileStatus(path: fixture.destination, followSymlinks: false)
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: fixture.destination, 0o755)
        let source = try FileDescriptor.currentWorkingDirectory.openDirectory(at: fixture.source)
        let sourceStatus = try source.descriptor.status()
        let roots = MirrorRoots(
            source: source,
            destination: try FileDescriptor.open(fixture.destination, .pathOnly, options: [.directory, .noFollow]),
            sourceStatus: sourceStatus, destinationStatus: found, destinationMadeWritable: true,
            sourceIdentity: FileIdentity(sourceStatus), destinationIdentity: FileIdentity(found), unchecked: [])
        _ = OpenedRoots(roots, destination: destination, job: job)
    }

    /// What was kept for a destination configured with a trailing `/` (or `//`, `/./`) is
    /// reported by the next run into it configured without: it was kept by the string as
    /// configured, and never found.
    @Test func aLateGiveBack_isFoundByTheDestinationWrittenAnotherWay() async throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/a.txt", "a")
        try keepALateGiveBack(fixture, as: fixture.root + "//./dst/", job: nil)
        let next = await MirrorEngine(settings: fixture.settings(), container: .mirrorWorkers()).run()
        #expect(next.result == .partial)
        #expect(next.errors.map(\.reason) == [
            "the destination root's mode, 0355, could not be given back after an earlier run that had stopped waiting for its "
                + "start (cancelled, or a step that did not answer) opened it as its owner may (its owner's rwx added): Bad file "
                + "descriptor (EBADF); give it back by hand: chmod 0355 \(fixture.root)//./dst/"
        ])
    }

    /// What was kept for a job that a reload removed (or whose destination it changed), into a
    /// destination no job has now, is reported by the next run of another job, naming that job,
    /// once; one kept for a job configured still, into its destination, is left for it. The
    /// removed job's waited for good, for a run that never came.
    @Test func aLateGiveBackOfAJobNoLongerConfigured_isReportedByAnotherJobsRun() async throws {
        let removed = try MirrorFixture()
        try keepALateGiveBack(removed, as: removed.destination, job: "removed")
        let kept = try MirrorFixture()
        try keepALateGiveBack(kept, as: kept.destination, job: "kept")
        let other = try MirrorFixture()
        try other.write("src/a.txt", "a")
        var settings = other.settings()
        settings.jobName = "other"
        settings.otherJobs = [MirrorSettings.OtherJob(name: "kept", source: kept.source, destination: kept.destination + "/")]
        let next = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()
        #expect(next.result == .partial)
        #expect(next.copied == 1)
        #expect(next.errors.map(\.description) == [
            "\(removed.destination): (kept for a run of the job \"removed\" into a destination no job has now) the destination "
                + "root's mode, 0355, could not be given back after an earlier run that had stopped waiting for its start "
                + "(cancelled, or a step that did not answer) opened it as its owner may (its owner's rwx added): Bad file "
                + "descriptor (EBADF); give it back by hand: chmod 0355 \(removed.destination)"
        ])
        #expect(next.modesNotGivenBack == next.errors)
        let after = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()
        #expect(after.result == .success && after.errors == [], "\(after.errors)")
        var ofKept = kept.settings()
        ofKept.jobName = "kept"
        let keptsOwn = await MirrorEngine(settings: ofKept, container: .mirrorWorkers()).run()
        #expect(keptsOwn.errors.map(\.path) == [kept.destination], "\(keptsOwn.errors)")
    }

    /// A mode not given back reaches the operator whatever else the run says: a job's run that
    /// fails (its source missing) and reports a root's mode an earlier run could not give back
    /// logs it as a warning line of its own, lists it first in its errors and says it in its
    /// message. Only the run's first error (the missing source) reached the log and the
    /// message, and the mode, reported once, was lost.
    @Test func aModeNotGivenBack_reachesTheLogAndTheRunsMessage_whateverElseFailed() async throws {
        let fixture = try MirrorFixture()
        try keepALateGiveBack(fixture, as: fixture.destination, job: nil)
        let logged = TemporaryDirectory()
        let output = try FileDescriptor.open(logged.path + "/log.txt", .writeOnly, options: [.create, .append]).release()
        defer { try? output.close() }
        let log = DaemonLog(filter: LogFilter(defaultLevel: .info, overrides: [:]), journald: true, output: output)
        let container = WeaveDI.Container.mirrorWorkers()
        let job = MirrorJob(
            name: "docs", settings: MirrorSettings(source: fixture.root + "/gone", destination: fixture.destination),
            container: container)
        let context = SyncRunContext(
            runID: "docs-1", job: "docs", session: container.openSession(id: "job-docs-1"), log: log) { _ in }
        let outcome = await job.run(context)
        let mode = "\(fixture.destination): the destination root's mode, 0355, could not be given back after an earlier run "
            + "that had stopped waiting for its start (cancelled, or a step that did not answer) opened it as its owner may "
            + "(its owner's rwx added): Bad file descriptor (EBADF); give it back by hand: chmod 0355 \(fixture.destination)"
        #expect(outcome.result == .failed)
        #expect(outcome.errorCount == 2)
        #expect(outcome.errors.first.map { "\($0.path): \($0.reason)" } == mode)
        #expect(outcome.message?.hasSuffix("; mode not given back: \"\(fixture.destination)\"" + mode.dropFirst(fixture.destination.count)) == true, "\(outcome.message ?? "-")")
        let lines = logged.read("log.txt") ?? ""
        #expect(lines.split(separator: "\n").contains("<4>sync: docs: \"\(fixture.destination)\"" + mode.dropFirst(fixture.destination.count)), "\(lines)")
    }

    /// A directory the run made writable (its owner's `rwx` added) and does not finish (the run
    /// cancelled, its listing failed) whose mode cannot be given back is an error with the
    /// `chmod` that gives it back by hand, its whole path named, as a removal's and a refused
    /// start's are: a subdirectory's said only `fchmod (giving back its mode 0555, made writable
    /// by the run): …`. (An `O_PATH` handle, on which `fchmod` fails with `EBADF`, stands for a
    /// file system refusing it.)
    @Test func anUnfinishedDirectorysModeThatCannotBeGivenBack_isReportedWithItsChmod() throws {
        let fixture = try MirrorFixture()
        try fixture.makeDirectory("dst/ro", mode: 0o555)
        try fixture.makeDirectory("dst", mode: 0o355)
        let found = (root: try FileStatus(path: fixture.destination, followSymlinks: false),
                     ro: try FileStatus(path: fixture.destination + "/ro", followSymlinks: false))
        for path in [fixture.destination, fixture.destination + "/ro"] {
            try FileDescriptor.currentWorkingDirectory.setPermissions(at: path, 0o755)  // as the run made them
        }
        func opened(_ name: String, _ destination: String, _ status: FileStatus, parent: MirrorDirectory?) throws -> MirrorDirectory {
            let source = try FileDescriptor.currentWorkingDirectory.openDirectory(at: fixture.source)
            let sourceStatus = try source.descriptor.status()
            return MirrorDirectory(
                name: name, source: source, sourceStatus: sourceStatus,
                destination: try FileDescriptor.open(destination, .pathOnly, options: [.directory, .noFollow]),
                destinationStatus: status, madeWritable: true, isPrivileged: false, parent: parent)
        }
        let root = try opened("", fixture.destination, found.root, parent: nil)
        let ro = try opened("ro", fixture.destination + "/ro", found.ro, parent: root)
        var report = MirrorReport()
        for directory in [ro, root] { directory.undoMakeWritable(report: &report, settings: fixture.settings()) }
        #expect(report.errors.map(\.description) == [
            "ro: its mode, 0555, could not be given back after the run added its owner's rwx to work in it: Bad file "
                + "descriptor (EBADF); give it back by hand: chmod 0555 \(fixture.destination)/ro",
            ".: the destination root's mode, 0355, could not be given back after the run added its owner's rwx to work "
                + "in it: Bad file descriptor (EBADF); give it back by hand: chmod 0355 \(fixture.destination)",
        ])
    }

    /// The child's half: the refused run, then what it reported and the root's mode.
    @Test(.enabled(if: CurrentProcess.environmentValue(refusedStartChildRootVariable) != nil))
    func childRun_refusedOverASetGroupIDRoot() async throws {
        let root = try #require(CurrentProcess.environmentValue(refusedStartChildRootVariable))
        let report = await MirrorEngine(
            settings: MirrorSettings(source: root + "/empty", destination: root + "/kept", delete: true), container: .mirrorWorkers()
        ).run()
        Self.writeReport(
            ["uid \(getuid())",
             "\(report.result); set-ID bits not kept on \(report.setIDBitsNotKept) (first: \(report.firstSetIDBitsNotKept ?? "-"))"]
                + report.errors.map { "error \($0)" } + ["kept mode \(try Self.mode(root + "/kept"))"],
            root: root)
    }

    /// A run cancelled while it fills a read-only destination directory (mode 0555, made 0755
    /// to be written in), below a destination root opened as its owner may (mode 2355, made
    /// 0755, the bit refused): both get their modes back as the run stops, the root's without
    /// the bit, which the run reports. Both were left 0755 until the next whole run. (Without
    /// the filter, where it cannot be built, the root gets its bit back too.)
    @Test func aCancelledRun_givesTheDirectoriesItMadeWritableTheirModesBack() throws {
        let tools = TemporaryDirectory()
        try ChildAsNobody.requirePossible()
        let filter = try filter(in: tools)
        let fixture = try MirrorFixture()
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: fixture.root, 0o755)
        try fixture.write("src/ro/new1.txt", "one")
        try fixture.write("src/ro/new2.txt", "two")
        try fixture.makeDirectory("src/ro", mode: 0o555)
        try fixture.makeDirectory("dst/ro")
        try fixture.makeDirectory("out")
        for path in ["dst", "dst/ro", "out"] {
            #expect(chown(fixture.root + "/" + path, 65534, 65534) == 0)
        }
        try fixture.makeDirectory("dst/ro", mode: 0o555)
        try fixture.makeDirectory("dst", mode: 0o2355)
        let child = try asNobody("childRun_cancelledWhileCopying", cancelledRunChildRootVariable, root: fixture.root, filter: filter)
        #expect(child.status == .exited(0), "\(child.standardOutputText)\(child.standardErrorText)")
        let root = filter == nil ? (notKept: "0 (first: -)", mode: "2355") : (notKept: "1 (first: .)", mode: "0355")
        #expect(fixture.read("out/report.txt") == """
            uid 65534
            cancelled copied 0 errors []; set-ID bits not kept on \(root.notKept)
            dst mode \(root.mode), dst/ro mode 0555
            """, "\(child.standardOutputText)\(child.standardErrorText)")
    }

    /// The child's half: one worker, cancelled as it makes the copier for `ro`'s files (the
    /// directory made writable by then), then what the run reported and the modes.
    @Test(.enabled(if: CurrentProcess.environmentValue(cancelledRunChildRootVariable) != nil))
    func childRun_cancelledWhileCopying() async throws {
        let root = try #require(CurrentProcess.environmentValue(cancelledRunChildRootVariable))
        let task = Locked<Task<MirrorReport, Never>?>(nil)
        let container = WeaveDI.Container.mirrorWorkers {
            while task.withLock({ $0 }) == nil { usleep(1000) }
            task.withLock { $0 }?.cancel()
        }
        let engine = MirrorEngine(
            settings: MirrorSettings(source: root + "/src", destination: root + "/dst", workers: 1), container: container)
        let running = Task { await engine.run() }
        task.withLock { $0 = running }
        let report = await running.value
        Self.writeReport(
            ["uid \(getuid())",
             "\(report.result) copied \(report.copied) errors \(report.errors.map(\.description)); set-ID bits not kept on "
                + "\(report.setIDBitsNotKept) (first: \(report.firstSetIDBitsNotKept ?? "-"))",
             "dst mode \(try Self.mode(root + "/dst")), dst/ro mode \(try Self.mode(root + "/dst/ro"))"],
            root: root)
    }
}
