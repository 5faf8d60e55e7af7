import Foundation
import Testing
import WeaveDIPosix

/// `systemd-analyze verify` prints nothing and `systemd-analyze security` rates the service 2.0
/// or lower (systemd/check-units.sh does both, offline).
@Suite struct SystemdUnitTests {
    static var packageRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    @Test func unitsVerify_andAreHardened() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            print("SKIPPED unitsVerify_andAreHardened: systemd-analyze is not installed (apt-get install systemd)")
            return
        }
        let result = try Subprocess.run(
            "/bin/sh", arguments: [SystemdUnitTests.packageRoot + "/systemd/check-units.sh"],
            environment: ["PATH": "/usr/bin:/bin"])
        #expect(result.status == .exited(0), "\(result.standardOutputText)\(result.standardErrorText)")
        #expect(result.standardOutputText.contains("verify: OK (exit 0, no output)"))
        #expect(result.standardOutputText.contains("security: OK (exposure"))
    }
}
