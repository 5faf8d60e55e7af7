import WeaveDIPosix

/// Decides who may call methods that change something: uid 0, the daemon's own uid, or a
/// configured admin user or group (the peer's primary and supplementary groups count).
struct Authorizer: Sendable {
    /// The configured lists it was made from.
    let adminUsers: [DaemonConfiguration.AccountReference]
    let adminGroups: [DaemonConfiguration.AccountReference]
    let daemonUID: UInt32
    let adminUIDs: Set<UInt32>
    let adminGIDs: Set<UInt32>

    /// Resolves names to ids; unknown names are reported, not fatal.
    init(adminUsers: [DaemonConfiguration.AccountReference], adminGroups: [DaemonConfiguration.AccountReference], log: DaemonLog) {
        self.adminUsers = adminUsers
        self.adminGroups = adminGroups
        daemonUID = CurrentProcess.effectiveUserID
        var uids: Set<UInt32> = []
        for user in adminUsers {
            switch user {
            case let .id(id): uids.insert(id)
            case let .name(name):
                if let record = try? UserDatabase.user(named: name) { uids.insert(record.uid) } else {
                    log.warning("control", "admin user '\(name)' does not exist; ignored")
                }
            }
        }
        var gids: Set<UInt32> = []
        for group in adminGroups {
            switch group {
            case let .id(id): gids.insert(id)
            case let .name(name):
                if let record = try? UserDatabase.group(named: name) { gids.insert(record.gid) } else {
                    log.warning("control", "admin group '\(name)' does not exist; ignored")
                }
            }
        }
        adminUIDs = uids
        adminGIDs = gids
    }

    /// Whether `peer` may call privileged methods; `groups` are its supplementary groups.
    func mayChange(_ credentials: PeerCredentials, groups: () -> [UInt32]) -> Bool {
        if credentials.uid == 0 || credentials.uid == daemonUID || adminUIDs.contains(credentials.uid) { return true }
        if adminGIDs.isEmpty { return false }
        if adminGIDs.contains(credentials.gid) { return true }
        return !adminGIDs.isDisjoint(with: groups())
    }
}
