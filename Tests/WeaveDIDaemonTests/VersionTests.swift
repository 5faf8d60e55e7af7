import Testing
import WeaveDIDaemon

@Suite struct VersionTests {
    @Test func versionIsSemantic() { #expect(DaemonVersion.current.split(separator: ".").count == 3) }
}
