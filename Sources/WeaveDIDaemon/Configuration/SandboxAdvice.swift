/// What the systemd unit's sandbox does to a job's paths, said after a warning or a run's
/// failure when the daemon runs under systemd (`DaemonContext.runsUnderSystemd`): the unit
/// sets `ProtectSystem=strict`, `ProtectHome=yes` and `PrivateTmp=yes`, so a path the operator
/// sees may be read-only, hidden or another directory for the service.
enum SandboxAdvice {
    /// After an `EROFS` on a destination: the sandbox shows it read-only.
    static let readOnly =
        "under systemd, the unit's ProtectSystem=strict makes it read-only unless a drop-in (systemctl edit weavedid) lists it in ReadWritePaths="

    /// After a failure on `path` under `/home`, `/root` or `/run/user`: `ProtectHome=yes` hides
    /// them; nil for another path.
    static func homeHidden(_ path: String) -> String? {
        guard let top = ["/home", "/root", "/run/user"].first(where: { isUnder(path, $0) }) else { return nil }
        return "under systemd, the unit's ProtectHome=yes hides \(top) from the service (see ProtectHome= in the unit's comments)"
    }

    /// For a path under `/tmp` or `/var/tmp`: `PrivateTmp=yes` gives the service its own; nil
    /// for another path.
    static func privateTmp(_ path: String) -> String? {
        guard let top = ["/tmp", "/var/tmp"].first(where: { isUnder(path, $0) }) else { return nil }
        return "it lies in \(top), which under systemd is the service's own (the unit's PrivateTmp=yes), not the host's, and is "
            + "thrown away as the service stops: use a directory outside /tmp and /var/tmp"
    }

    /// Whether `path` (absolute) is `directory` or below it, by its normalized components.
    static func isUnder(_ path: String, _ directory: String) -> Bool {
        let components = ConfigurationDirectories.normalizedComponents(path)
        let prefix = ConfigurationDirectories.normalizedComponents(directory)
        return components.count >= prefix.count && Array(components.prefix(prefix.count)) == prefix
    }
}
