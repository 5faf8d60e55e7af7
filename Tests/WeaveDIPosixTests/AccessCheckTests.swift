import Foundation
import Glibc
import Testing
import WeaveDIPosix

/// Where the child process of the access test finds its fixture.
private let accessChildRootVariable = "WEAVEDI_POSIX_TEST_ACCESS_ROOT"

/// `FileDescriptor.checkAccess` (`faccessat(2)` with `AT_EACCESS`): what the kernel lets the
/// effective user do. Root may read and write anything the bits forbid, so what another user
/// may not do is asked in a child process as `nobody` (uid 65534, through `setpriv`): this test
/// binary, filtered to the `child…` test, enabled only there.
@Suite struct AccessCheckTests {
    /// The checks the child makes, one a line: `name: ok` or `name: <error>`.
    static let checks: [(name: String, path: String, check: AccessCheck)] = [
        ("readable file read", "open/readable.txt", .read),
        ("readable file write", "open/readable.txt", .write),
        ("unreadable file read", "open/secret.txt", .read),
        ("writable directory write and search", "open/writable", [.write, .execute]),
        ("read-only directory write", "open", .write),
        ("read-only directory read and search", "open", [.read, .execute]),
        ("file in unsearchable directory read", "closed/inside.txt", .read),
        ("unsearchable directory search", "closed", .execute),
        ("missing read", "open/missing", .read),
        ("missing below a file read", "open/readable.txt/below", .read),
    ]

    /// The fixture under `root`: `open` (0755) with a file anyone may read, one only root may,
    /// and a directory anyone may write in; `closed` (0700) with a file anyone could read.
    static func makeFixture(_ root: String) throws {
        for directory in ["open/writable", "closed", "out"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(directory)", withIntermediateDirectories: true)
        }
        #expect(FileManager.default.createFile(atPath: "\(root)/open/readable.txt", contents: Data("anyone\n".utf8)))
        #expect(FileManager.default.createFile(atPath: "\(root)/open/secret.txt", contents: Data("root only\n".utf8)))
        #expect(FileManager.default.createFile(atPath: "\(root)/closed/inside.txt", contents: Data("behind\n".utf8)))
        let modes: [(String, mode_t)] = [
            ("", 0o755), ("open", 0o755), ("open/readable.txt", 0o644), ("open/secret.txt", 0o600),
            ("open/writable", 0o777), ("closed", 0o700), ("closed/inside.txt", 0o644), ("out", 0o777),
        ]
        for (path, mode) in modes { #expect(chmod(path.isEmpty ? root : "\(root)/\(path)", mode) == 0) }
    }

    static func report(root: String) -> [String] {
        let directory = FileDescriptor.currentWorkingDirectory
        return checks.map { name, path, check in
            do {
                try directory.checkAccess(at: "\(root)/\(path)", check)
                return "\(name): ok"
            } catch {
                return "\(name): \(error)"
            }
        }
    }

    /// As `nobody`, the kernel's answer follows the bits: each refusal with its error. The
    /// effective user is the one asked about (`AT_EACCESS`), not the real one: a child whose
    /// real user is root and effective user `nobody` gets `nobody`'s answers. (Parameterized: a
    /// test case cancelled is reported passed, so the condition is a trait.)
    @Test(
        .enabled(
            if: getuid() == 0 && geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "needs root (to run the checks as nobody on files root owns) and setpriv"),
        arguments: [
        ["--reuid=65534", "--regid=65534"],
        ["--ruid=0", "--euid=65534", "--rgid=0", "--egid=65534"],
    ])
    func asAnotherUser_theChecksFollowThePermissions(identity: [String]) throws {
        let directory = try TemporaryDirectory()
        try Self.makeFixture(directory.path)
        let child = try Subprocess.run(
            "/usr/bin/setpriv",
            arguments: identity + ["--clear-groups", CommandLine.arguments[0],
                                   "--testing-library", "swift-testing", "--filter", "AccessCheckTests/childChecks_writeTheirReport"],
            environment: ["PATH": "/usr/bin:/bin", accessChildRootVariable: directory.path])
        #expect(child.status == .exited(0), "\(child.standardOutputText)\(child.standardErrorText)")
        let report = (try? String(contentsOfFile: directory.path + "/out/report.txt", encoding: .utf8)) ?? ""
        let denied = "Permission denied (EACCES)"
        #expect(report.split(separator: "\n").map(String.init) == [
            "effective uid 65534",
            "readable file read: ok",
            "readable file write: \(denied)",
            "unreadable file read: \(denied)",
            "writable directory write and search: ok",
            "read-only directory write: \(denied)",
            "read-only directory read and search: ok",
            "file in unsearchable directory read: \(denied)",
            "unsearchable directory search: \(denied)",
            "missing read: No such file or directory (ENOENT)",
            "missing below a file read: Not a directory (ENOTDIR)",
        ])
    }

    /// The child's half: runs the checks as whoever runs it and writes what the kernel said.
    @Test(.enabled(if: CurrentProcess.environmentValue(accessChildRootVariable) != nil))
    func childChecks_writeTheirReport() throws {
        let root = try #require(CurrentProcess.environmentValue(accessChildRootVariable))
        let lines = ["effective uid \(geteuid())"] + Self.report(root: root)
        #expect(FileManager.default.createFile(atPath: root + "/out/report.txt", contents: Data(lines.joined(separator: "\n").utf8)))
    }

    /// As root (the effective user, as `AT_EACCESS` asks), reading and writing pass whatever the
    /// bits say, but a path that is not there is still refused, and so is executing a file
    /// with no execute bit at all.
    @Test func asRoot_onlyWhatIsNotThereOrHasNoExecuteBit_isRefused() throws {
        guard geteuid() == 0 else {
            try Test.cancel("needs root")
        }
        let directory = try TemporaryDirectory()
        try Self.makeFixture(directory.path)
        let report = Self.report(root: directory.path)
        #expect(report == [
            "readable file read: ok",
            "readable file write: ok",
            "unreadable file read: ok",
            "writable directory write and search: ok",
            "read-only directory write: ok",
            "read-only directory read and search: ok",
            "file in unsearchable directory read: ok",
            "unsearchable directory search: ok",
            "missing read: No such file or directory (ENOENT)",
            "missing below a file read: Not a directory (ENOTDIR)",
        ])
        #expect(throws: Errno.permissionDenied) {
            try FileDescriptor.currentWorkingDirectory.checkAccess(at: directory.path + "/open/readable.txt", .execute)
        }
    }
}
