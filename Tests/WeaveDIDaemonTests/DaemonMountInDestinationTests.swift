import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Mounts inside a mirror's destination: a bind mount there may hold any tree, the source's
/// among them, or any file. The real daemon, in a mount namespace of its own, neither enters
/// nor deletes in such a directory, nor changes such a file in place; the run says where.
@Suite struct DaemonMountInDestinationTests {
    /// Starts the daemon on a deleting mirror of `src` into `dst` with `binds` (`(source,
    /// target)`, relative to `d`) mounted in its namespace; runs the job once and returns its
    /// run; where there are no mount namespaces, cancels the test (skipped).
    private func runOnce(in directory: TemporaryDirectory, binds: [(String, String)]) throws -> (DaemonProcess, JSONValue?) {
        let d = directory.path
        let wrapper = try MountNamespace.requiredWrapper(binding: binds.map { (d + "/" + $0.0, d + "/" + $0.1) })
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "m", "source": "\(d)/src", "destination": "\(d)/dst", "delete": true, "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], directory: directory, wrapper: wrapper)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let run = try daemon.sendCall("RunJob", #"{"name": "m"}"#).varlinkReply(timeout: .seconds(30))?.parameter("run")
        return (daemon, run)
    }

    @Test func aSourceDirectoryMountedInTheDestination_isNeitherWrittenNorDeletedIn() throws {
        let directory = TemporaryDirectory()
        directory.write("src/data/precious.txt", "precious")
        directory.write("src/x/a.txt", "from x")
        try FileManager.default.createDirectory(atPath: directory.path + "/dst/x", withIntermediateDirectories: true)
        // dst/x is src/data: copying x into it would write into the source, deleting its extras
        // would delete the source's files.
        let (daemon, run) = try runOnce(in: directory, binds: [("src/data", "dst/x")])
        #expect(run?[member: "result"]?.stringValue == "partial", "\(String(describing: run))\n\(daemon.log)")
        #expect(run?[member: "errors"]?.intValue == 1, "\(String(describing: run))")
        #expect(directory.read("src/data/precious.txt") == "precious")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/src/data/a.txt"))
        // The data directory itself is mirrored as it should be, next to the mount.
        #expect(directory.read("dst/data/precious.txt") == "precious")
        #expect(daemon.log.contains(#""x": is a mount point inside the destination"#), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aDirectoryMountedInTheDestination_thatTheSourceNoLongerHas_isNotEmptied() throws {
        let directory = TemporaryDirectory()
        directory.write("src/kept.txt", "kept")
        directory.write("outside/yours.txt", "not the mirror's")
        try FileManager.default.createDirectory(atPath: directory.path + "/dst/mnt", withIntermediateDirectories: true)
        let (daemon, run) = try runOnce(in: directory, binds: [("outside", "dst/mnt")])
        #expect(run?[member: "result"]?.stringValue == "partial", "\(String(describing: run))\n\(daemon.log)")
        #expect(directory.read("outside/yours.txt") == "not the mirror's")
        #expect(daemon.log.contains(#""mnt": is a mount point inside the destination"#), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aFileMountedInTheDestination_isNotChangedInPlace() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("src/f.txt", "same")
        directory.write("outside/victim.txt", "same")
        directory.write("dst/f.txt", "")
        // Same size and mtime, another mode: the run would fix the mode in place.
        #expect(chmod(d + "/src/f.txt", 0o644) == 0 && chmod(d + "/outside/victim.txt", 0o600) == 0)
        let time = try FileStatus(path: d + "/src/f.txt", followSymlinks: false).modificationTime
        try FileDescriptor.currentWorkingDirectory.setTimes(at: d + "/outside/victim.txt", access: nil, modification: time, followSymlinks: false)
        let (daemon, run) = try runOnce(in: directory, binds: [("outside/victim.txt", "dst/f.txt")])
        #expect(run?[member: "result"]?.stringValue == "partial", "\(String(describing: run))\n\(daemon.log)")
        #expect(try FileStatus(path: d + "/outside/victim.txt", followSymlinks: false).permissions.rawValue & 0o777 == 0o600)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }
}
