import Foundation
import Testing
@testable import WeaveDIDaemon
import WeaveDIPosix

/// A configuration file the daemon's user may not read (`0600`, root's: the unit suggests
/// `root:weavedi 0640`, so this is an easy mistake) is refused naming the error, the user, the
/// file's owner, group and mode, and what to change; a directory on its way that user may not
/// search is named instead. Run as `nobody` (permission bits do not stop root).
@Suite(.enabled(if: dropToNobody != nil, "needs root and setpriv or runuser to run as nobody"))
struct ConfigurationReadPermissionTests {
    static func checkAsNobody(_ config: String) throws -> SubprocessResult {
        try Subprocess.run(dropToNobody![0], arguments: Array(dropToNobody!.dropFirst()) + [DaemonProcess.binary, "--check-config", "--config", config],
            environment: ["PATH": "/usr/bin:/bin"])
    }

    static let nobodyGroup = FileOwnershipName.group(65534)

    @Test func aFileOnlyRootMayRead_isRefused_namingTheUserTheOwnerAndTheMode() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        chmod(d, 0o755)
        // Its state and socket directories where nobody may make them: the fixed file passes.
        try FileManager.default.createDirectory(atPath: d + "/open", withIntermediateDirectories: true)
        chmod(d + "/open", 0o777)
        let config = directory.write("secret.json", #"{"stateDirectory": "\#(d)/open/state", "control": {"socket": "\#(d)/open/c.sock"}}"#)
        chmod(config, 0o600)
        let check = try Self.checkAsNobody(config)
        #expect(check.status == .exited(78), "\(check.standardErrorText)")
        #expect(check.standardErrorText == "weavedid: \(config): cannot read: Permission denied (EACCES); the user reading it (uid 65534 (nobody)) "
            + "may not read the file (mode 0600, owner root, group root): give it the group \(Self.nobodyGroup), readable by the group and not by others "
            + "if it holds anything secret (chgrp \(Self.nobodyGroup) \(config); chmod 0640 \(config))\n")
        // As it says: the group's read permission is enough.
        chown(config, 0, 65534)
        chmod(config, 0o640)
        let fixed = try Self.checkAsNobody(config)
        #expect(fixed.status == .exited(0), "\(fixed.standardErrorText)")
    }

    @Test func aDirectoryOnTheWayTheUserMayNotSearch_isNamedInstead() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        chmod(d, 0o755)
        let config = directory.write("etc/weavedid.json", "{}")
        chmod(d + "/etc", 0o700)
        let check = try Self.checkAsNobody(config)
        #expect(check.status == .exited(78), "\(check.standardErrorText)")
        #expect(check.standardErrorText == "weavedid: \(config): cannot read: Permission denied (EACCES); the user reading it (uid 65534 (nobody)) "
            + "may not search the directory \"\(d)/etc\" (mode 0700, owner root, group root) on its way: let the group \(Self.nobodyGroup) pass "
            + "(chgrp \(Self.nobodyGroup) \(d)/etc; chmod g+x \(d)/etc), or keep the file where it may\n")
    }
}

/// The group a configuration file's advice names: the service's (`weavedi`) where the machine
/// has it, never the reader's own (someone running `weavedictl --offline` would otherwise be
/// told to give the file a group that shuts the daemon out), with how to join it when the reader
/// is not in it. Run as root: in `root`, not in `daemon`.
@Suite struct ConfigurationReadAdviceTests {
    @Test(.enabled(if: getuid() == 0 && ((try? UserDatabase.group(named: "daemon")) ?? nil) != nil, "needs root and a daemon group"))
    func theServicesGroup_isNamed_withHowToJoinIt() throws {
        let notIn = DaemonConfiguration.serviceGroupAdvice(named: "daemon")
        #expect(notIn.group == "daemon")
        #expect(notIn.joining == "; and add root to the group daemon (usermod -aG daemon root)")
        let member = DaemonConfiguration.serviceGroupAdvice(named: "root")
        #expect(member.group == "root" && member.joining == "")
        // No such group on this machine: the reader's own, nothing to join.
        let none = DaemonConfiguration.serviceGroupAdvice(named: "no-such-group-here")
        #expect(none.group == FileOwnershipName.group(getegid()) && none.joining == "")
    }
}

/// The name the group database gives `gid`, as messages show it.
enum FileOwnershipName {
    static func group(_ gid: UInt32) -> String {
        (try? UserDatabase.group(id: gid))?.map(\.name) ?? "gid \(gid)"
    }
}
