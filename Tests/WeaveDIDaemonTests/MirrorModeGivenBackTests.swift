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
        guard ChildAsNobody.canRun(), let filter = try filter(in: tools) else { return }
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

    /// A destination root whose mode cannot be given back at all is a failure in the run's
    /// report, naming the root and the mode to give it by hand; it was swallowed. (An `O_PATH`
    /// handle, on which `fchmod` fails with `EBADF`, stands for a file system refusing it.)
    @Test func aDestinationRootModeThatCannotBeGivenBack_isReported() throws {
        let fixture = try MirrorFixture()
        try fixture.makeDirectory("dst", mode: 0o355)
        let found = try FileStatus(path: fixture.destination, followSymlinks: false)
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: fixture.destination, 0o755)
        let handle = try FileDescriptor.open(fixture.destination, .pathOnly, options: [.directory, .noFollow])
        var report = MirrorReport()
        MirrorRoots.giveBack(found, to: handle.descriptor, "/backup/docs", into: &report)
        #expect(report.errors.map(\.description) == [
            "/backup/docs: the destination root's mode, 0355, could not be given back after the run opened it as its owner "
                + "may (its owner's rwx added): Bad file descriptor (EBADF); give it back by hand: chmod 0355 /backup/docs"
        ])
        #expect(report.setIDBitsNotKept == 0)
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
        guard ChildAsNobody.canRun() else { return }
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
