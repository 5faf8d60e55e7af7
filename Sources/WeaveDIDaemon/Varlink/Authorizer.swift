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

    /// Resolves the names of `control`'s admin users and groups to ids; a name this machine does
    /// not know is logged as a warning, with `source` (the configuration file) and its field
    /// path, and ignored (see `AdminAccounts`).
    init(_ control: DaemonConfiguration.Control, source: String, log: DaemonLog) {
        adminUsers = control.adminUsers
        adminGroups = control.adminGroups
        daemonUID = CurrentProcess.effectiveUserID
        let accounts = AdminAccounts(control)
        for warning in accounts.warnings { log.warning("control", "\(source): \(warning)") }
        adminUIDs = accounts.userIDs
        adminGIDs = accounts.groupIDs
    }

    /// Whether `peer` may call privileged methods; `groups` are its supplementary groups.
    func mayChange(_ credentials: PeerCredentials, groups: () -> [UInt32]) -> Bool {
        if credentials.uid == 0 || credentials.uid == daemonUID || adminUIDs.contains(credentials.uid) { return true }
        if adminGIDs.isEmpty { return false }
        if adminGIDs.contains(credentials.gid) { return true }
        return !adminGIDs.isDisjoint(with: groups())
    }
}
