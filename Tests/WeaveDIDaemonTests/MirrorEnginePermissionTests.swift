import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIDaemon
import WeaveDIPosix

/// Where the child process of the permission test finds its fixture.
private let mirrorChildRootVariable = "WEAVEDI_MIRROR_TEST_CHILD_ROOT"

/// Permission errors. The tests run as root, which permission bits do not stop, so the engine
/// runs in a child process as `nobody` (uid 65534, through `setpriv`): the child is this test
/// binary, filtered to `childRun_asNobody_writesItsReport`, which is enabled only there.
@Suite struct MirrorEnginePermissionTests {
    @Test func unreadableFilesAndDirectories_areReported_andTheRunGoesOn() throws {
        guard CurrentProcess.effectiveUserID == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            print("SKIPPED unreadableFilesAndDirectories_areReported_andTheRunGoesOn: needs root and setpriv")
            return
        }
        let fixture = try MirrorFixture()
        let cwd = FileDescriptor.currentWorkingDirectory
        try cwd.setPermissions(at: fixture.root, 0o755)
        try fixture.write("src/readable.txt", "anyone may read this")
        try fixture.write("src/secret.txt", "root only", mode: 0o600)
        try fixture.write("src/sub/also-readable.txt", "fine")
        try fixture.write("src/closed/inside.txt", "behind a closed directory")
        try fixture.makeDirectory("src/closed", mode: 0o700)
        for directory in ["dst", "out"] {
            try fixture.makeDirectory(directory)
            #expect(chown(fixture.root + "/" + directory, 65534, 65534) == 0)
        }

        let child = try Subprocess.run(
            "/usr/bin/setpriv",
            arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", CommandLine.arguments[0],
                        "--testing-library", "swift-testing", "--filter", "MirrorEnginePermissionTests/childRun"],
            environment: ["PATH": "/usr/bin:/bin", mirrorChildRootVariable: fixture.root])
        #expect(child.status == .exited(0), "\(child.standardOutputText)\(child.standardErrorText)")

        let lines = (fixture.read("out/report.txt") ?? "").split(separator: "\n").map(String.init)
        #expect(lines == [
            "uid 65534",
            "result partial copied 2",
            "error closed: open: Permission denied (EACCES)",
            "error secret.txt: open: Permission denied (EACCES)",
            "root result failed",
            "root error \(fixture.root)/src/closed: the source cannot be opened: Permission denied (EACCES)",
        ])
        #expect(fixture.read("dst/readable.txt") == "anyone may read this")
        #expect(fixture.read("dst/sub/also-readable.txt") == "fine")
        #expect(fixture.status("dst/secret.txt") == nil)
        #expect(fixture.status("dst/closed") == nil)
        #expect(try fixture.temporaryFiles().isEmpty)
    }

    /// The child's half: mirrors the parent's fixture as whoever runs it and writes what happened.
    @Test(.enabled(if: CurrentProcess.environmentValue(mirrorChildRootVariable) != nil))
    func childRun_asNobody_writesItsReport() async throws {
        let root = try #require(CurrentProcess.environmentValue(mirrorChildRootVariable))
        let tree = await MirrorEngine(
            settings: MirrorSettings(source: root + "/src", destination: root + "/dst"), container: .mirrorWorkers()
        ).run()
        let closedRoot = await MirrorEngine(
            settings: MirrorSettings(source: root + "/src/closed", destination: root + "/out/copy"),
            container: .mirrorWorkers()
        ).run()
        let lines = ["uid \(getuid())", "result \(tree.result) copied \(tree.copied)"]
            + tree.errors.map { "error \($0)" }.sorted()
            + ["root result \(closedRoot.result)"] + closedRoot.errors.map { "root error \($0)" }
        let written = FileManager.default.createFile(
            atPath: root + "/out/report.txt", contents: Data(lines.joined(separator: "\n").utf8))
        #expect(written)
    }
}
