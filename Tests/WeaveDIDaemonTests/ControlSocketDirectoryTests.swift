import Foundation
import Glibc
import Testing
import WeaveDIPosix

/// The directory the control socket goes in: one the daemon makes is 0750 and carries the
/// socket's group; one that exists (a shared `/tmp`, `/run`) keeps its mode and group, during
/// the run and after it, and a warning says when the socket's group cannot reach the socket
/// through it.
@Suite struct ControlSocketDirectoryTests {
    /// The socket's group: `nogroup` (65534) as root; as another user, who may give a file
    /// only a group of their own, their group.
    private let group: UInt32 = getegid() == 0 ? 65534 : getegid()

    /// Starts the real daemon with its socket in `directory` of `d` (group `group`), waits for
    /// it to be ready, then stops it; returns its log.
    private func runDaemon(socketIn directory: String, of d: TemporaryDirectory) throws -> String {
        let config = d.write("weavedid.json", """
            {"control": {"socket": "\(d.path)/\(directory)/control.sock", "socketGroup": \(group)}, "sync": {"jobs": []}}
            """)
        let daemon = try DaemonProcess(["--config", config], directory: d)
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        let socket = try FileStatus(path: "\(d.path)/\(directory)/control.sock", followSymlinks: false)
        #expect(socket.kind == .socket && socket.groupID == group, "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        return daemon.log
    }

    private func modeAndGroup(_ path: String) throws -> String {
        let status = try FileStatus(path: path, followSymlinks: false)
        return "\(String(status.permissions.rawValue & 0o7777, radix: 8)) \(status.groupID)"
    }

    @Test func aSharedDirectory_keepsItsModeAndGroup() throws {
        let d = TemporaryDirectory()
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: d.path + "/shared")
        #expect(chmod(d.path + "/shared", 0o1777) == 0)  // as /tmp is
        let before = try modeAndGroup(d.path + "/shared")
        let log = try runDaemon(socketIn: "shared", of: d)
        #expect(try modeAndGroup(d.path + "/shared") == before)
        #expect(before.hasPrefix("1777 "))
        #expect(!log.contains("cannot reach"), "\(log)")
        #expect(!log.contains("may replace the socket"), "sticky: others cannot replace it: \(log)")
    }

    /// A directory that exists and lets someone other than root and the daemon's user replace
    /// the socket (theirs, or writable by a group or by all without the sticky bit) is left as
    /// it is, and a warning says who and what to do.
    @Test func aDirectoryOthersMayWriteIn_isLeftAsItIs_andAWarningSaysWhoMayReplaceTheSocket() throws {
        var cases: [(mode: mode_t, owner: uid_t?, who: String)] = [
            (0o777, nil, "every user"), (0o770, nil, "the members of its group (gid \(getegid()))"),
        ]
        if geteuid() == 0 { cases.append((0o755, 65534, "its owner (uid 65534)")) }
        for (mode, owner, who) in cases {
            let d = TemporaryDirectory()
            chmod(d.path, 0o755)
            let directory = d.path + "/open"
            try FileDescriptor.currentWorkingDirectory.makeDirectory(at: directory)
            #expect(chmod(directory, mode) == 0)
            if let owner { #expect(chown(directory, owner, getegid()) == 0) }
            let before = try modeAndGroup(directory)
            let log = try runDaemon(socketIn: "open", of: d)
            #expect(try modeAndGroup(directory) == before)
            #expect(log.contains("warning control: \(who) may replace the socket \"\(directory)/control.sock\": its directory "
                + "\"\(directory)\" (mode \(FilePermissions(rawValue: mode)), owner \(owner ?? geteuid()), group \(getegid())) lets them"), "\(log)")
        }
    }

    @Test func aDirectoryThatExists_theGroupCannotSearch_isLeftAsItIs_andAWarningSaysSo() throws {
        let d = TemporaryDirectory()
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: d.path + "/closed")
        #expect(chmod(d.path + "/closed", 0o700) == 0)
        let before = try modeAndGroup(d.path + "/closed")
        let log = try runDaemon(socketIn: "closed", of: d)
        #expect(try modeAndGroup(d.path + "/closed") == before)
        #expect(log.contains("the socket's group (gid \(group)) cannot reach \"\(d.path)/closed/control.sock\": its directory "
            + "\"\(d.path)/closed\" (mode 0700, group \(getegid())) lets neither that group nor others search it"), "\(log)")
    }

    /// A reload that gives the socket a group which cannot pass through its directory (one
    /// that existed) warns as the start does, and changes the directory no more than it.
    /// Without `socketGroup`, a socket bound in a set-gid directory has the directory's group,
    /// and a reload that changes nothing leaves it so.
    @Test(.enabled(if: getegid() == 0, "needs root to give a directory another group"))
    func withoutASocketGroup_aReloadKeepsTheGroupTheSocketWasBoundWith() throws {
        let d = TemporaryDirectory()
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: d.path + "/shared")
        #expect(chown(d.path + "/shared", 0, 65534) == 0 && chmod(d.path + "/shared", 0o2750) == 0)
        let socket = "\(d.path)/shared/control.sock"
        let config = d.write("weavedid.json", #"{"control": {"socket": "\#(socket)"}, "sync": {"jobs": []}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: d)
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(try FileStatus(path: socket, followSymlinks: false).groupID == 65534)
        daemon.send(.hangup)
        #expect(daemon.waitForLog("configuration reloaded"), "\(daemon.log)")
        #expect(try FileStatus(path: socket, followSymlinks: false).groupID == 65534, "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func aReloadGivingAGroupThatCannotReachTheSocket_warns() throws {
        let d = TemporaryDirectory()
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: d.path + "/closed")
        #expect(chmod(d.path + "/closed", 0o700) == 0)
        let before = try modeAndGroup(d.path + "/closed")
        let socket = "\(d.path)/closed/control.sock"
        let config = d.write("weavedid.json", #"{"control": {"socket": "\#(socket)"}, "sync": {"jobs": []}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: d)
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(!daemon.log.contains("cannot reach"))
        _ = d.write("weavedid.json", #"{"control": {"socket": "\#(socket)", "socketGroup": \#(group)}, "sync": {"jobs": []}}"#)
        daemon.send(.hangup)
        #expect(daemon.waitForLog("configuration reloaded"), "\(daemon.log)")
        #expect(daemon.log.contains("the socket's group (gid \(group)) cannot reach \"\(socket)\""), "\(daemon.log)")
        #expect(try FileStatus(path: socket, followSymlinks: false).groupID == group)
        #expect(try modeAndGroup(d.path + "/closed") == before)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func aDirectoryTheDaemonMakes_is0750_withTheSocketsGroup() throws {
        let d = TemporaryDirectory()
        let log = try runDaemon(socketIn: "made/here", of: d)
        #expect(try modeAndGroup(d.path + "/made/here") == "750 \(group)")
        #expect(!log.contains("cannot reach"), "\(log)")
    }
}
