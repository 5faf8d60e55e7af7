import Foundation
import Glibc
import Testing
import WeaveDIPosix

@Suite struct ProcessIdentityTests {
    @Test func ids_matchKernelAndFoundation() throws {
        #expect(CurrentProcess.id == ProcessInfo.processInfo.processIdentifier)
        #expect(CurrentProcess.userID == getuid())
        #expect(CurrentProcess.groupID == getgid())
        #expect(CurrentProcess.effectiveUserID == geteuid())
        let uid = try Subprocess.run("id", arguments: ["-u"], environment: testEnvironment)
        #expect(uid.standardOutputText == "\(CurrentProcess.effectiveUserID)\n")
    }

    @Test func supplementaryGroups_matchIdCommand() throws {
        let groups = try CurrentProcess.supplementaryGroups()
        let expected = try Subprocess.run("id", arguments: ["-G"], environment: testEnvironment)
        let fromID = Set(expected.standardOutputText.split(whereSeparator: \.isWhitespace).compactMap { UInt32($0) })
        // `id -G` adds the effective gid, which getgroups may omit.
        #expect(Set(groups).union([CurrentProcess.effectiveGroupID]) == fromID)
        #expect(try CurrentProcess.isMember(ofGroup: CurrentProcess.effectiveGroupID))
    }

    @Test func userAndGroupLookups_useReentrantDatabase() throws {
        let root = try #require(try UserDatabase.user(named: "root"))
        #expect(root.uid == 0)
        #expect(root.gid == 0)
        #expect(root.homeDirectory == "/root")
        #expect(try UserDatabase.user(id: 0)?.name == "root")
        #expect(try UserDatabase.group(named: "root")?.gid == 0)
        #expect(try UserDatabase.group(id: 0)?.name == "root")
        #expect(try UserDatabase.user(named: "weavedi-no-such-user") == nil)
        #expect(try UserDatabase.group(named: "weavedi-no-such-group") == nil)
    }

    @Test func environment_readsProcessEnvironment() throws {
        let environment = CurrentProcess.environment()
        #expect(environment["PATH"] == ProcessInfo.processInfo.environment["PATH"])
        #expect(CurrentProcess.environmentValue("PATH") == environment["PATH"])
        #expect(CurrentProcess.environmentValue("WEAVEDI_SURELY_UNSET") == nil)
    }

    @Test func removeEnvironmentValue_rejectsInvalidNames() throws {
        // setenv/unsetenv race with getenv in parallel tests, so only non-mutating cases run here.
        #expect(throws: Errno.invalidArgument) { try CurrentProcess.removeEnvironmentValue("A=B") }
        #expect(throws: Errno.invalidArgument) { try CurrentProcess.removeEnvironmentValue("") }
        try CurrentProcess.removeEnvironmentValue("WEAVEDI_POSIX_SURELY_UNSET")
    }

    @Test func isMember_isFalseForUnusedGroup() throws {
        let groups = try CurrentProcess.supplementaryGroups()
        let unused: UInt32 = 4_000_000_000
        #expect(!groups.contains(unused))
        #expect(try !CurrentProcess.isMember(ofGroup: unused))
    }
}
