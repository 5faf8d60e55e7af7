import Glibc
import WeaveDI
import WeaveDIPosix

/// Creates the control socket safely: made owner-only by `bind` (the socket's mode set before
/// it), then given its group and mode, so that it is never open to more than they say, without
/// touching the process's umask; replacing a stale socket file (nobody listening) and refusing
/// a live one (another daemon runs). A directory for it that does not exist is made 0750 (and given the
/// socket's group); one that exists is left as it is, for it may be shared (`/tmp`, `/run`).
enum ControlSocketBinder {
    struct Refusal: Error, CustomStringConvertible {
        var description: String
        /// The error of the system call refused, where the start's exit status depends on it
        /// (the socket's directory not made: `exitStatus`).
        var errno: Int32? = nil
        /// Whether the configuration is at fault, as it stands on this machine (its socket path
        /// taken by a file that is no socket): a restart meets the same.
        var byConfiguration = false

        /// The daemon's exit status for a start this refusal ended: 78 (EX_CONFIG) when the
        /// configuration is at fault (`byConfiguration`), or when the socket's directory could
        /// not be made for want of permission (`EACCES`, `EPERM`) or on a read-only file system
        /// (`EROFS`), which a restart does not mend; else 1.
        var exitStatus: Int32 {
            byConfiguration || errno.map(FileOwnership.isPermanentRefusal) == true ? DaemonMain.exitConfigurationError : 1
        }
    }

    /// Binds and listens at `path` with `mode`; returns the non-blocking listener.
    /// `madeDirectory` says whether the socket's directory was made here (and carries its group).
    /// `file` is the configuration file that gives the socket's settings, named in their errors.
    /// `origin`, what put the socket there, is named when its directory cannot be made.
    static func bind(
        path: String, mode: UInt32, group: DaemonConfiguration.AccountReference?, origin: DaemonConfiguration.SocketOrigin,
        file: String, log: DaemonLog, madeDirectory: inout Bool
    ) throws(Refusal) -> OwnedDescriptor {
        let address: UnixSocketAddress
        do { address = try UnixSocketAddress(path: path) } catch {
            throw Refusal(description: "control socket \(path): \(error)")
        }
        // Resolved first: a group that does not exist must not cost the old socket file.
        let gid = try group.map { (group) throws(Refusal) in try groupID(group, file: file) }
        let directory = parent(of: path)
        madeDirectory = try makeDirectory(directory, origin: origin)
        if !madeDirectory { warnIfOthersCanReplace(path, log: log) }
        if let existing = try? FileStatus(path: path, followSymlinks: false) {
            guard existing.kind == .socket else {
                throw Refusal(
                    description: "\(JSONValue.quotedPathForMessage(path)) exists and is not a socket; remove it or choose another control.socket",
                    byConfiguration: true)
            }
            if let refusal = liveSocketRefusal(path) { throw refusal }
            do { try FileDescriptor.currentWorkingDirectory.unlink(at: path) } catch {
                throw Refusal(description: "cannot remove the stale socket \(JSONValue.quotedPathForMessage(path)): \(error)\(staleSocketDetail(path, existing, error))")
            }
            log.notice("control", "removed the stale socket \(JSONValue.quotedPathForMessage(path)) (nobody was listening)")
        }
        // The file `bind` makes takes the socket's own mode, less the umask (Linux): owner only
        // until the group and mode are set below. The umask is not touched: it is the whole
        // process's, and a file another thread made meanwhile (a rebind runs beside mirror
        // runs) would take it.
        let listener: OwnedDescriptor
        do {
            listener = try listenOwnerOnly(at: address, mode: mode)
        } catch {
            throw Refusal(description: "cannot listen on \(path): \(error)")
        }
        _ = try setAttributes(ofSocket: path, mode: FilePermissions(rawValue: mode), group: gid, inode: nil)
        if let gid {
            // The group reaches the socket through the directory: one made here carries it.
            if madeDirectory {
                do { try FileDescriptor.currentWorkingDirectory.changeOwner(at: directory, group: gid) } catch {
                    throw Refusal(description: "cannot give \(directory) the group \(gid): \(error)")
                }
            } else {
                warnIfGroupCannotReach(path, gid, log: log)
            }
        }
        return listener
    }

    /// A listening socket bound at `address`, whose file has only the owner's bits of `mode`
    /// (less the umask), whatever the umask: nobody else can connect before the group and mode
    /// are set.
    static func listenOwnerOnly(at address: UnixSocketAddress, mode: UInt32) throws(Errno) -> OwnedDescriptor {
        let socket = try UnixSocket.make(.stream, nonBlocking: true)
        try socket.descriptor.setPermissions(FilePermissions(rawValue: mode & 0o700))
        try socket.descriptor.bind(to: address)
        try socket.descriptor.listen(backlog: 128)
        return socket
    }

    /// Gives the socket file at `path` `mode` and, when given, the group `gid`, through a handle
    /// opened on it without following a link (`O_PATH|O_NOFOLLOW`): whatever was put in its
    /// place meanwhile (a link to another file, by someone who may write in its directory) is
    /// refused, never changed. `inode`, when given, is the socket's own. Changes nothing when
    /// it fails; returns the file's status before.
    static func setAttributes(
        ofSocket path: String, mode: FilePermissions, group gid: UInt32?, inode: UInt64?
    ) throws(Refusal) -> FileStatus {
        func fail(_ what: String, _ error: Errno) -> Refusal {
            Refusal(description: "cannot give the socket \(path) \(what): \(error)")
        }
        do {
            let handle = try FileDescriptor.currentWorkingDirectory.open(at: path, .pathOnly, options: [.noFollow])
            let status = try handle.descriptor.status()
            guard status.kind == .socket, inode == nil || status.inode == inode else {
                throw Refusal(description: "\(path) is no longer the socket this daemon listens on (\(status.kind) there now)")
            }
            if let gid {
                do { try handle.descriptor.setGroupOfPathHandle(gid) } catch { throw fail("the group \(gid)", error) }
            }
            do { try handle.descriptor.setPermissionsOfPathHandle(mode) } catch {
                try? handle.descriptor.setGroupOfPathHandle(status.groupID)
                throw fail("the mode \(mode)", error)
            }
            return status
        } catch let refusal as Refusal {
            throw refusal
        } catch {
            throw Refusal(description: "cannot open the socket \(path): \(error)")
        }
    }

    /// The refusal when another process listens on the socket at `path`; nil when nothing does
    /// (no socket there, or a stale one). Connects only: nothing is made or removed.
    static func liveSocketRefusal(_ path: String) -> Refusal? {
        guard let address = try? UnixSocketAddress(path: path),
            let existing = try? FileStatus(path: path, followSymlinks: false), existing.kind == .socket,
            isListenedOn(address)
        else { return nil }
        return Refusal(description: "another daemon is listening on \(JSONValue.quotedPathForMessage(path)); stop it first (or choose another control.socket)")
    }

    /// Whether a process listens on the socket at `address`: a connect that does not wait. A
    /// full listen queue (`EAGAIN`: a daemon stopped with SIGSTOP, or one too busy to accept)
    /// is someone listening, as is `EINPROGRESS` (which a Unix socket does not answer, but
    /// means a connection under way); a blocking connect would wait for a place in that queue
    /// for as long as the old daemon does not accept, holding the start. Any other failure
    /// (`ECONNREFUSED`: nobody listens) is not.
    static func isListenedOn(_ address: UnixSocketAddress) -> Bool {
        guard let socket = try? UnixSocket.make(.stream, nonBlocking: true) else { return false }
        do {
            try socket.descriptor.connect(to: address)
            return true
        } catch {
            return error == .wouldBlock || error == Errno(rawValue: EINPROGRESS)
        }
    }

    /// Why the stale socket at `path` (`socket`, its status) could not be removed (`error`),
    /// and what to do: another user's socket (a daemon run as root left it) in a sticky
    /// directory (`/tmp`), which only its owner, the directory's owner or root may remove, or
    /// a directory the daemon may not write in.
    static func staleSocketDetail(_ path: String, _ socket: FileStatus, _ error: Errno) -> String {
        guard error == .permissionDenied || error == .notPermitted else { return "" }
        let directory = parent(of: path)
        let remedy = "remove it as root or as its owner (rm \(path.shellWord.escapingControlCharacters)), or choose another control.socket"
        let owner = "the socket (\(FileOwnership.describe(socket)))"
        guard let status = try? FileStatus(path: directory, followSymlinks: true) else { return "; \(owner): \(remedy)" }
        let sticky = status.permissions.rawValue & 0o1000 != 0
        let why = sticky && socket.userID != CurrentProcess.effectiveUserID && status.userID != CurrentProcess.effectiveUserID
            ? "its directory \(JSONValue.quotedPathForMessage(directory)) (\(FileOwnership.describe(status))) has the sticky bit, so only "
                + "the socket's owner, the directory's owner or root may remove it, and the daemon runs as \(FileOwnership.currentUser)"
            : "the daemon (\(FileOwnership.currentUser)) may not remove entries of its directory \(JSONValue.quotedPathForMessage(directory)) "
                + "(\(FileOwnership.describe(status)))"
        return "; \(owner) is \(FileOwnership.userName(socket.userID))'s (a daemon run as that user left it), and \(why): \(remedy)"
    }

    /// Warns when the socket's group `gid` cannot pass through the directory of `path`, which
    /// the daemon did not make (and so left as it is).
    static func warnIfGroupCannotReach(_ path: String, _ gid: UInt32, log: DaemonLog) {
        let directory = parent(of: path)
        guard let status = try? FileStatus(path: directory, followSymlinks: true), !groupMaySearch(status, gid) else { return }
        log.warning("control", "the socket's group (gid \(gid)) cannot reach \(JSONValue.quotedPathForMessage(path)): its directory \(JSONValue.quotedPathForMessage(directory)) "
            + "(mode \(status.permissions), group \(status.groupID)) lets neither "
            + "that group nor others search it; give the directory that group, or remove it so that weavedid makes it")
    }

    /// Warns when someone other than root and the daemon's user may replace the socket at
    /// `path`: its directory, which the daemon did not make, is theirs, or writable by a group or
    /// by all without the sticky bit (as `/tmp` has). They could put a socket of their own
    /// there, and clients, administrators among them, would talk to it.
    static func warnIfOthersCanReplace(_ path: String, log: DaemonLog) {
        let directory = parent(of: path)
        guard let status = try? FileStatus(path: directory, followSymlinks: true) else { return }
        let mode = status.permissions.rawValue
        let who: String
        if status.userID != 0, status.userID != CurrentProcess.effectiveUserID {
            who = "its owner (uid \(status.userID))"
        } else if mode & 0o002 != 0, mode & 0o1000 == 0 {
            who = "every user"
        } else if mode & 0o020 != 0, mode & 0o1000 == 0 {
            who = "the members of its group (gid \(status.groupID))"
        } else {
            return
        }
        log.warning("control", "\(who) may replace the socket \(JSONValue.quotedPathForMessage(path)): its directory \(JSONValue.quotedPathForMessage(directory)) (mode "
            + "\(status.permissions), owner \(status.userID), group \(status.groupID)) lets them, and clients "
            + "would then talk to whatever they put there; give the directory to root or the daemon's user, not writable by "
            + "others (or sticky, as /tmp is), or remove it so that weavedid makes it")
    }

    /// Whether members of `gid` may search (pass through) the directory of `status`: its
    /// group's `x` when it is theirs, else the others' `x` (its owner aside).
    static func groupMaySearch(_ status: FileStatus, _ gid: UInt32) -> Bool {
        let mode = status.permissions.rawValue
        return status.groupID == gid ? mode & 0o010 != 0 : mode & 0o001 != 0
    }

    /// The id of the configured `control.socketGroup`; `weavedid --check-config` checks it too.
    /// `file` is the configuration file that names it, which the refusal names first, as any
    /// configuration error (`/etc/weavedi/weavedid.json: control.socketGroup: no group named
    /// …`). A group the user database does not know is told from a lookup that failed (an
    /// `nsswitch.conf` source that did not answer), whose error is said.
    static func groupID(_ group: DaemonConfiguration.AccountReference, file: String) throws(Refusal) -> UInt32 {
        switch group {
        case let .id(id): return id
        case let .name(name):
            let record: GroupRecord?
            do { record = try UserDatabase.group(named: name) } catch {
                // No errno: a failed lookup is no permanent refusal (an EACCES from a source
                // would make the start exit 78, which systemd does not restart).
                throw Refusal(
                    description: "\(file): control.socketGroup: cannot look up the group named \(JSONValue.quotedForMessage(name)) in the "
                        + "user database: \(error); see that its sources (nsswitch.conf) answer")
            }
            // A group the machine does not have is the configuration's fault, as `--check-config`
            // says (78): a restart would meet the same, until systemd's start limit hid why.
            guard let record else {
                throw Refusal(
                    description: "\(file): control.socketGroup: no group named \(JSONValue.quotedForMessage(name)) on this machine: create it (the package's weavedi "
                        + "group comes with systemd/sysusers.d/weavedi.conf), name another group, or remove the field",
                    byConfiguration: true)
            }
            return record.gid
        }
    }

    /// Creates `directory` 0750 (its missing parents 0755); returns whether it was made here.
    /// One that exists keeps its mode and group: it may be shared (`/tmp`, `/run`, `/`), and
    /// narrowing it would lock others out of it for good. A refusal says what put the socket
    /// there (`origin`): an `XDG_RUNTIME_DIR` inherited from a login session is no setting of
    /// the daemon's.
    static func makeDirectory(_ directory: String, origin: DaemonConfiguration.SocketOrigin) throws(Refusal) -> Bool {
        let which = "\(JSONValue.quotedPathForMessage(directory)), the control socket's directory (from \(origin))"
        let remedy = origin == .controlSocket ? "create it, or set control.socket to a path in a directory the daemon may write"
            : "create it, or set control.socket (or runtimeDirectory) to a place the daemon may write"
        let cwd = FileDescriptor.currentWorkingDirectory
        var made = false
        do {
            try cwd.makeDirectories(at: parent(of: directory), permissions: 0o755)
            try cwd.makeDirectory(at: directory, permissions: 0o750)
            made = true
        } catch .fileExists {
            // There already (or made meanwhile by someone else): left as it is.
        } catch {
            throw Refusal(description: "cannot create \(which): \(error); \(remedy)", errno: error.rawValue)
        }
        guard let status = try? FileStatus(path: directory, followSymlinks: true), status.kind == .directory else {
            throw Refusal(description: "\(which) is not a directory; \(remedy)")
        }
        if made { try? cwd.setPermissions(at: directory, 0o750) }  // exactly, whatever the umask
        return made
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
