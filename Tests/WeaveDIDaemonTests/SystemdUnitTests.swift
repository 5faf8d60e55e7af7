import Foundation
import Testing
import WeaveDIDaemon
import WeaveDIPosix

/// `systemd-analyze verify` prints nothing and `systemd-analyze security` rates the service 2.0
/// or lower, and the shipped sysusers.d and tmpfiles.d files make the service's runtime and state
/// directories as its RuntimeDirectory= and StateDirectory= do (systemd/check-units.sh does all
/// three, offline, in a throw-away root).
@Suite struct SystemdUnitTests {
    static var packageRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    @Test func unitsVerify_andAreHardened() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            try Test.cancel("systemd-analyze is not installed (apt-get install systemd)")
        }
        let result = try Subprocess.run(
            "/bin/sh", arguments: [SystemdUnitTests.packageRoot + "/systemd/check-units.sh"],
            environment: ["PATH": "/usr/bin:/bin"])
        #expect(result.status == .exited(0), "\(result.standardOutputText)\(result.standardErrorText)")
        #expect(result.standardOutputText.contains("verify: OK (exit 0, no output)"))
        #expect(result.standardOutputText.contains("security: OK (exposure"))
        // As root (the directories' owners): /run/weavedi and /var/lib/weavedi made before the
        // first start, so that `--check-config` run as weavedi finds its state directory.
        if CurrentProcess.effectiveUserID == 0 {
            #expect(result.standardOutputText.contains("tmpfiles: /var/lib/weavedi as StateDirectory= makes it"))
            #expect(result.standardOutputText.contains("tmpfiles: OK"))
        }
    }

    /// A start that a restart cannot mend (a bad configuration, a command line weavedid does not
    /// take) is not restarted: the unit's result is then the exit status that says why, not
    /// `start-limit-hit` after 5 tries.
    @Test func theServiceIsNotRestarted_onStatusesARestartCannotMend() throws {
        let unit = try String(contentsOfFile: SystemdUnitTests.packageRoot + "/systemd/weavedid.service", encoding: .utf8)
        let statuses = unit.split(separator: "\n").filter { $0.hasPrefix("RestartPreventExitStatus=") }
            .flatMap { $0.dropFirst("RestartPreventExitStatus=".count).split(separator: " ") }.compactMap { Int32($0) }
        #expect(Set(statuses) == [DaemonMain.exitUsage, DaemonMain.exitConfigurationError], "\(statuses)")
        #expect(unit.contains("\nRestart=on-failure\n"))
    }
}
