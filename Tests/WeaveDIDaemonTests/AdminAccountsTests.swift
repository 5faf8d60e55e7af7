import Testing
@testable import WeaveDIDaemon
import WeaveDIPosix

/// `control.adminUsers` and `control.adminGroups` resolved to ids, with a warning naming the
/// field of each name this machine does not know (`AdminAccounts`).
@Suite struct AdminAccountsTests {
    private func control(users: [DaemonConfiguration.AccountReference], groups: [DaemonConfiguration.AccountReference]) -> DaemonConfiguration.Control {
        var control = DaemonConfiguration.Control(socket: "/run/weavedi/control.sock")
        control.adminUsers = users
        control.adminGroups = groups
        return control
    }

    @Test func knownNamesAndIds_becomeIds_unknownNamesWarnings() {
        let accounts = AdminAccounts(
            control(users: [.name("alice"), .name("ghost"), .id(7)], groups: [.name("ops"), .id(0), .name("gone")]),
            user: { name throws(Errno) in name == "alice" ? 1001 : nil },
            group: { name throws(Errno) in name == "ops" ? 2001 : nil })
        #expect(accounts.userIDs == [1001, 7])
        #expect(accounts.groupIDs == [2001, 0])
        #expect(accounts.warnings == [
            "control.adminUsers[1]: no user named \"ghost\" on this machine; ignored, it gives nobody administrator rights",
            "control.adminGroups[2]: no group named \"gone\" on this machine; ignored, it gives nobody administrator rights",
        ])
    }

    @Test func aLookupThatFails_isAWarningToo() {
        let accounts = AdminAccounts(
            control(users: [.name("alice")], groups: []),
            user: { _ throws(Errno) in throw Errno.ioError }, group: { _ throws(Errno) in nil })
        #expect(accounts.userIDs.isEmpty)
        #expect(accounts.warnings == [
            "control.adminUsers[0]: cannot look up the user \"alice\": \(Errno.ioError); ignored, it gives nobody administrator rights",
        ])
    }

    @Test func theSystemsDatabases_knowRoot() {
        let accounts = AdminAccounts(control(users: [.name("root")], groups: [.name("root")]))
        #expect(accounts.userIDs == [0] && accounts.groupIDs == [0] && accounts.warnings.isEmpty)
    }
}
