import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIDaemon
import WeaveDIPosix

/// Where the child process of the mount point order test finds its fixture.
private let mountPointOrderChildRootVariable = "WEAVEDI_MIRROR_TEST_MOUNT_POINT_ORDER_ROOT"

/// `destinationMountPoint` with a destination root whose mode denies its owner, the run's user,
/// `r` (opened as its owner may, `OwnerOpening`, with a `chmod`). The engine runs as `nobody`
/// (`ChildAsNobody`), in a mount namespace of its own where the parent mounted a tmpfs first.
@Suite struct MirrorMountPointOrderTests {
    /// Unmounted, such a root is told not a mount point before it is opened: the directory
    /// underneath is not `chmod`ed (its change time stays), nothing is written. Mounted, it is
    /// the destination root, not a mount inside the destination: the run copies, and gives the
    /// root its mode back.
    @Test func aRootItsOwnerMayNotRead_isToldAMountPoint_beforeItIsOpened() throws {
        try ChildAsNobody.requirePossible()
        guard MountNamespace.wrapper() != nil, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else {
            try Test.cancel("\(MountNamespace.unsupportedReason ?? "needs unshare")")
        }
        let fixture = try MirrorFixture()
        let root = fixture.root
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: root, 0o755)
        // The source root as a run reads it as "others", whose copy denies its owner `r`.
        try fixture.write("src/a.txt", "a")
        try fixture.makeDirectory("src", mode: 0o355)
        try fixture.makeDirectory("unmounted", mode: 0o355)
        try fixture.makeDirectory("mounted")
        try fixture.makeDirectory("out")
        for path in ["unmounted", "out"] {
            #expect(chown(root + "/" + path, 65534, 65534) == 0)
        }
        func changed(_ path: String) -> timespec {
            var found = stat()
            #expect(stat(root + "/" + path, &found) == 0)
            return found.st_ctim
        }
        let before = changed("unmounted")
        let script = "mount -t tmpfs -o mode=0355,uid=65534,gid=65534 tmpfs \"$1\" && shift && exec \"$@\""
        let child = try Subprocess.run(
            "/usr/bin/unshare",
            arguments: ["-m", "/bin/sh", "-c", script, "sh", root + "/mounted",
                "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", CommandLine.arguments[0],
                "--testing-library", "swift-testing", "--filter", "MirrorMountPointOrderTests/childRuns_intoMountPoints"],
            environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin", mountPointOrderChildRootVariable: root])
        #expect(child.status == .exited(0), "\(child.standardOutputText)\(child.standardErrorText)")
        let report = (try? String(contentsOfFile: root + "/out/report.txt", encoding: .utf8)) ?? ""
        #expect(report == """
            uid 65534
            unmounted: failed errors ["\(root)/unmounted: the destination root is not a mount point (destinationMountPoint): \
            is its file system mounted? Mount it there; a run would write into the file system underneath"]
            unmounted: mode 355
            mounted: success copied 1 errors []
            mounted: mode 355
            """, "\(child.standardOutputText)\(child.standardErrorText)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: root + "/unmounted")) == [])
        let after = changed("unmounted")
        #expect(after.tv_sec == before.tv_sec && after.tv_nsec == before.tv_nsec, "the directory underneath was changed")
    }

    /// The child's half: a run into each root, as `nobody`.
    @Test(.enabled(if: CurrentProcess.environmentValue(mountPointOrderChildRootVariable) != nil))
    func childRuns_intoMountPoints() async throws {
        let root = try #require(CurrentProcess.environmentValue(mountPointOrderChildRootVariable))
        var lines = ["uid \(getuid())"]
        for name in ["unmounted", "mounted"] {
            var settings = MirrorSettings(source: root + "/src", destination: root + "/" + name, createsDestination: false)
            settings.destinationMountPoint = true
            let report = await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()
            let counts = report.result == .success ? " copied \(report.copied)" : ""
            lines.append("\(name): \(report.result)\(counts) errors \(report.errors.map(\.description))")
            let mode = try FileStatus(path: root + "/" + name, followSymlinks: false).permissions.rawValue
            lines.append("\(name): mode \(String(mode, radix: 8))")
        }
        let written = FileManager.default.createFile(
            atPath: root + "/out/report.txt", contents: Data(lines.joined(separator: "\n").utf8))
        #expect(written)
    }
}
