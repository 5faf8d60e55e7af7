import WeaveDIPosix

/// Creates the control socket safely: inside a 0750 directory, with the umask set before
/// `bind` so the socket is never open to all, replacing a stale socket file (nobody
/// listening) and refusing a live one (another daemon runs).
enum ControlSocketBinder {
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    /// Binds and listens at `path` with `mode`; returns the non-blocking listener.
    static func bind(
        path: String, mode: UInt32, group: DaemonConfiguration.AccountReference?, log: DaemonLog
    ) throws(Refusal) -> OwnedDescriptor {
        let address: UnixSocketAddress
        do { address = try UnixSocketAddress(path: path) } catch {
            throw Refusal(description: "control socket \(path): \(error)")
        }
        // Resolved first: a group that does not exist must not cost the old socket file.
        let gid = try group.map { (group) throws(Refusal) in try groupID(group) }
        try makeDirectory(parent(of: path))
        if let existing = try? FileStatus(path: path, followSymlinks: false) {
            guard existing.kind == .socket else {
                throw Refusal(description: "\(path) exists and is not a socket; remove it or choose another control.socket")
            }
            if (try? UnixSocket.connect(to: address)) != nil {
                throw Refusal(description: "another daemon is listening on \(path); stop it first (or choose another control.socket)")
            }
            do { try FileDescriptor.currentWorkingDirectory.unlink(at: path) } catch {
                throw Refusal(description: "cannot remove the stale socket \(path): \(error)")
            }
            log.notice("control", "removed the stale socket \(path) (nobody was listening)")
        }
        let previous = CurrentProcess.setUmask(~mode & 0o777)
        defer { CurrentProcess.setUmask(previous) }
        do {
            let listener = try UnixSocket.listen(at: address, backlog: 128, nonBlocking: true)
            try FileDescriptor.currentWorkingDirectory.setPermissions(at: path, FilePermissions(rawValue: mode))
            if let gid {
                // The group reaches the socket through the 0750 directory, so both carry it.
                try FileDescriptor.currentWorkingDirectory.changeOwner(at: path, group: gid)
                let directory = parent(of: path)
                if (try? FileStatus(path: directory, followSymlinks: true))?.userID == CurrentProcess.effectiveUserID {
                    try FileDescriptor.currentWorkingDirectory.changeOwner(at: directory, group: gid)
                }
            }
            return listener
        } catch {
            throw Refusal(description: "cannot listen on \(path): \(error)")
        }
    }

    /// The id of the configured `control.socketGroup`; `weavedid --check-config` checks it too.
    static func groupID(_ group: DaemonConfiguration.AccountReference) throws(Refusal) -> UInt32 {
        switch group {
        case let .id(id): return id
        case let .name(name):
            guard let record = try? UserDatabase.group(named: name) else {
                throw Refusal(description: "control.socketGroup: no group named '\(name)'")
            }
            return record.gid
        }
    }

    /// Creates `directory` (and missing parents, 0755) and makes it 0750 if it is ours.
    static func makeDirectory(_ directory: String) throws(Refusal) {
        do { try FileDescriptor.currentWorkingDirectory.makeDirectories(at: directory, permissions: 0o755) } catch {
            throw Refusal(description: "cannot create \(directory): \(error)")
        }
        guard let status = try? FileStatus(path: directory, followSymlinks: true), status.kind == .directory else {
            throw Refusal(description: "\(directory) is not a directory")
        }
        if status.userID == CurrentProcess.effectiveUserID {
            try? FileDescriptor.currentWorkingDirectory.setPermissions(at: directory, 0o750)
        }
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
