import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// `control.adminUsers` and `control.adminGroups` as ids on this machine.
///
/// Names are looked up when the daemon starts, at a reload that changes the lists, and by
/// `weavedid --check-config`. A name this machine does not know is a warning with its
/// field path, not an error: it can only give someone rights, never take them, so leaving it
/// out grants nothing, while refusing to start would stop the daemon (and its sync jobs) at
/// the next reboot because an administrator's account was deleted. `control.socketGroup` is
/// different: the daemon could not give its socket the group asked for, so a missing group
/// stops the start.
struct AdminAccounts: Equatable {
    /// The uids of `adminUsers`.
    var userIDs: Set<UInt32> = []
    /// The gids of `adminGroups`.
    var groupIDs: Set<UInt32> = []
    /// One line per name not resolved, led by its field path, such as
    /// `control.adminUsers[1]: no user named "ghost" on this machine; ignored, it gives nobody administrator rights`.
    var warnings: [String] = []

    /// A user's or group's id, nil when there is no such account.
    typealias Lookup = (String) throws(Errno) -> UInt32?

    /// Resolves `control`'s admin users and groups with `user` and `group` (the system's
    /// databases unless tests substitute them).
    init(
        _ control: DaemonConfiguration.Control,
        user: Lookup = { name throws(Errno) in try UserDatabase.user(named: name)?.uid },
        group: Lookup = { name throws(Errno) in try UserDatabase.group(named: name)?.gid }
    ) {
        userIDs = resolve(control.adminUsers, field: "control.adminUsers", kind: "user", with: user)
        groupIDs = resolve(control.adminGroups, field: "control.adminGroups", kind: "group", with: group)
    }

    private mutating func resolve(
        _ accounts: [DaemonConfiguration.AccountReference], field: String, kind: String, with lookup: Lookup
    ) -> Set<UInt32> {
        var ids: Set<UInt32> = []
        for (index, account) in accounts.enumerated() {
            switch account {
            case let .id(id): ids.insert(id)
            case let .name(name):
                let quoted = JSONValue.quotedForMessage(name)
                let problem: String
                do {
                    if let id = try lookup(name) {
                        ids.insert(id)
                        continue
                    }
                    problem = "no \(kind) named \(quoted) on this machine"
                } catch {
                    problem = "cannot look up the \(kind) \(quoted): \(error)"
                }
                warnings.append("\(field)[\(index)]: \(problem); ignored, it gives nobody administrator rights")
            }
        }
        return ids
    }
}
