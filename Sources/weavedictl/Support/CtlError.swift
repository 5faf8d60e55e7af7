import WeaveDI
import WeaveDIControl
import WeaveDIDaemon
import WeaveDIPosix

/// The exit statuses of weavedictl (sysexits.h where one fits).
enum ExitStatus {
    /// Everything as asked, and healthy.
    static let ok: Int32 = 0
    /// Not healthy, issues or cycles found, a fix or run that failed, or an error reply.
    static let failure: Int32 = 1
    /// A command-line mistake (EX_USAGE).
    static let usage: Int32 = 64
    /// The daemon cannot be reached (EX_UNAVAILABLE).
    static let unavailable: Int32 = 69
    /// Done, but the daemon could not save it, and a restart would undo it (EX_TEMPFAIL).
    static let notSaved: Int32 = 75
    /// Not allowed (EX_NOPERM).
    static let noPermission: Int32 = 77
    /// Standard output could not be written (EX_IOERR).
    static let output: Int32 = 74
    /// A bad configuration file, for the offline diagnostics (EX_CONFIG).
    static let configuration: Int32 = 78
}

/// A command-line mistake: what is wrong, and the subcommand whose usage to show.
struct UsageError: Error, Equatable {
    /// What is wrong.
    var message: String
    /// The subcommand concerned, or nil for the root.
    var command: CommandConfiguration?
}

/// Why a subcommand could not do its work; each case has its exit status and message.
enum CtlError: Error {
    /// A command-line mistake.
    case usage(UsageError)
    /// Nothing answers at the socket.
    case unreachable(SocketLocation, reason: String)
    /// The path names something other than a socket, or (`kind` `.socket`) a socket of
    /// another type than weavedid's stream socket (connect said `reason`).
    case notASocket(SocketLocation, kind: FileKind, reason: String)
    /// `connect` said ENOENT (`reason`) because a symbolic link on the socket's path, or the
    /// socket's own, points to nothing.
    case danglingLink(SocketLocation, SocketPathCheck.DanglingLink, reason: String)
    /// The socket's path does not fit in a Unix socket address (107 bytes).
    case socketPathTooLong(SocketLocation)
    /// The socket exists but this user may not connect to it. `groupMayNotWrite`: the socket's
    /// status when its mode gives its group no write permission, which `connect` needs (and the
    /// user is not its owner); `inGroup`: whether the user is in that group.
    case socketNotPermitted(SocketLocation, reason: String, groupMayNotWrite: FileStatus? = nil, inGroup: Bool = false)
    /// A directory on the socket's path may not be searched by this user (connect said
    /// `reason`, `EACCES`): the socket's own mode is not the cause.
    case directoryNotSearchable(SocketLocation, SocketPathCheck.UnsearchableDirectory, reason: String)
    /// The connection broke during a call.
    case broken(SocketLocation, reason: String)
    /// The reply to `method` is not a varlink reply (`reason` says why).
    case malformedReply(SocketLocation, method: String, reason: String)
    /// The reply to `method` is a varlink reply, but its parameters are not those of one
    /// (`reason` says which member is wrong): what answers is no weavedid, or a broken one; or,
    /// with `weavedid` (the version it says it is), a weavedid of another version than
    /// weavedictl's, which sent a value weavedictl does not know. `continues`: the reply said
    /// more would follow, so the call goes on without weavedictl (a run of `run-job --wait`).
    case invalidReply(SocketLocation, method: String, reason: String, continues: Bool = false, weavedid: String? = nil)
    /// No reply to `method` came within `wait` (`--timeout`).
    case timedOut(SocketLocation, method: String, wait: Duration)
    /// `io.weavedi.Daemon.PermissionDenied`: the method needs administrator rights.
    case permissionDenied(method: String, uid: Int?)
    /// Any other varlink error reply (exit 1; 69 for a connection refused for want of a place).
    case failure(VarlinkFailure, method: String)
    /// `error`, then `note` on a line of its own (what goes on after weavedictl leaves).
    indirect case noted(CtlError, note: String)
    /// The configuration for the offline diagnostics is invalid.
    case configuration(ConfigurationError)
    /// The daemon's modules could not be bootstrapped offline.
    case offline(String)

    /// The exit status.
    var status: Int32 {
        switch self {
        case .usage: ExitStatus.usage
        // Wherever the path comes from (an option, a variable, the working directory), only
        // another path, given with --socket, can reach the socket.
        case .socketPathTooLong: ExitStatus.usage
        case .unreachable, .notASocket, .danglingLink, .broken, .malformedReply, .invalidReply, .timedOut: ExitStatus.unavailable
        case .socketNotPermitted, .directoryNotSearchable, .permissionDenied: ExitStatus.noPermission
        case let .failure(failure, _): FailureHint.refusesConnection(failure) ? ExitStatus.unavailable : ExitStatus.failure
        case .offline: ExitStatus.failure
        case .configuration: ExitStatus.configuration
        case let .noted(error, _): error.status
        }
    }

    /// The message for standard error, without the usage text of a usage error. What it
    /// quotes (arguments, paths, the environment, the daemon's replies) has its control
    /// characters escaped, so that no input can start a line of its own or reach the terminal.
    var message: String {
        switch self {
        case let .usage(error):
            return "weavedictl\(error.command.map { " " + $0.name } ?? ""): \(error.message.escapingControlCharacters)"
        case let .unreachable(socket, reason):
            return "weavedictl: cannot connect to \(socket.shownPath): \(reason.escapingControlCharacters)\n" + socket.searchNote
                + "Is weavedid running? Start it with `systemctl start weavedid` (or `swift run weavedid` in its source tree), or pass --socket PATH."
        case let .notASocket(socket, kind, reason):
            let advice = switch socket.origin {
            case .option: "Pass the path of weavedid's control socket with --socket PATH (control.socket in its configuration)."
            case .environment:
                "Set WEAVEDI_SOCKET to the path of weavedid's control socket (control.socket in its configuration), or unset it."
            case .discovered:
                "It stands where weavedid puts its control socket: remove it if nothing needs it, or pass the socket's path with --socket PATH."
            }
            let what = kind == .socket
                ? "it is a socket of another type (datagram or sequenced-packet), not a stream socket as weavedid's is "
                : "it is \(Self.describe(kind)), not a socket "
            return "weavedictl: cannot connect to \(socket.shownPath): " + what
                + "(connect: \(reason.escapingControlCharacters))\n" + (socket.origin == .discovered ? "" : socket.searchNote) + advice
        case let .danglingLink(socket, link, reason):
            let target = link.target.map { "'\($0.escapingControlCharacters)'" } ?? "a target that cannot be read"
            let what = link.path == socket.path
                ? "it is a symbolic link to \(target), which does not exist"
                : "\(link.path.escapingControlCharacters) on its path is a symbolic link to \(target), which does not exist"
            return "weavedictl: cannot connect to \(socket.shownPath): \(what) (connect: \(reason.escapingControlCharacters))\n"
                + socket.searchNote
                + "Is weavedid running? It removes its socket when it stops; start it (`systemctl start weavedid`), "
                + "point the link at its control socket, or pass the socket's path with --socket PATH."
        case let .socketPathTooLong(socket):
            let maximum = UnixSocketAddress.maximumPathLength
            let origin = switch socket.origin {
            case .option: " (given with --socket)"
            case .environment: " (from WEAVEDI_SOCKET)"
            case .discovered: " (found as \(socket.source ?? "a place weavedictl looks"))"
            }
            return "weavedictl: the socket path \(socket.shownPath)\(origin) is \(socket.path.utf8.count) bytes long, "
                + "but a Unix socket path may have at most \(maximum) bytes (sun_path); "
                + "give a shorter path to the same socket\(socket.origin == .option ? "" : " with --socket PATH"), "
                + "e.g. through a symbolic link to its directory."
        case let .socketNotPermitted(socket, reason, status?, false):
            return "weavedictl: cannot connect to \(socket.shownPath): \(reason.escapingControlCharacters)\n"
                + "The socket\(Self.describe(status)) gives its group no write permission, which connecting needs, so joining "
                + "its group would not do either: run as root, or set control.socketMode to \"0660\" in the daemon's "
                + "configuration (and control.socketGroup to a group of yours) and reload it (`systemctl reload weavedid`; "
                + "SocketMode=0660 and SocketGroup= in weavedid.socket when systemd makes the socket)."
        case let .socketNotPermitted(socket, reason, status?, true):
            return "weavedictl: cannot connect to \(socket.shownPath): \(reason.escapingControlCharacters)\n"
                + "You are in the socket's group already (uid \(CurrentProcess.effectiveUserID)), but the socket\(Self.describe(status)) "
                + "gives its group no write permission, which connecting needs: set control.socketMode to \"0660\" in the "
                + "daemon's configuration and reload it (`systemctl reload weavedid`; SocketMode=0660 in weavedid.socket "
                + "when systemd makes the socket)."
        case let .socketNotPermitted(socket, reason, nil, _):
            return "weavedictl: cannot connect to \(socket.shownPath): \(reason.escapingControlCharacters)\n"
                + "The control socket is open to its owner and group only: run as root, or join the group the socket "
                + "belongs to (control.socketGroup in the daemon's configuration; SocketGroup= in weavedid.socket)."
        case let .directoryNotSearchable(socket, directory, reason):
            let shown = directory.path.escapingControlCharacters
            return "weavedictl: cannot connect to \(socket.shownPath): \(reason.escapingControlCharacters)\n" + socket.searchNote
                + "The directory \(shown)\(Self.describe(directory.status)), on the way to the socket, may not be searched by this user "
                + "(uid \(CurrentProcess.effectiveUserID)), so nothing in it can be reached: the cause is not the socket's own mode.\n"
                + "Run as root, or join the directory's group (weavedid gives the directory it makes for its socket "
                + "control.socketGroup, as it does the socket), or have the directory's owner let you search it."
        case let .broken(socket, reason):
            return "weavedictl: the connection to \(socket.shownPath) broke: \(reason.escapingControlCharacters)\n"
                + "Is weavedid still running?"
        case let .malformedReply(socket, method, reason):
            return "weavedictl: the reply of \(method.escapingControlCharacters) from \(socket.shownPath) is not a valid varlink reply: "
                + "\(reason.escapingControlCharacters)\n"
                + "Is this weavedid's control socket? Pass the socket's path with --socket PATH (control.socket in its configuration)."
        case let .invalidReply(socket, method, reason, _, weavedid):
            let problem = "weavedictl: the reply of \(method.escapingControlCharacters) from \(socket.shownPath) is not a valid reply to it: "
                + "\(reason.escapingControlCharacters)\n"
            guard let weavedid else {
                return problem
                    + "Is this weavedid's control socket? Pass the socket's path with --socket PATH (control.socket in its configuration)."
            }
            // Only a value is unknown, in a reply whole otherwise, from what says it is weavedid.
            let version = weavedid.count > 40 ? JSONValue.quotedForMessage(weavedid) : weavedid.escapingControlCharacters
            guard weavedid == DaemonVersion.current else {
                return problem
                    + "weavedid \(version) answers there, and this is weavedictl \(DaemonVersion.current): a weavedid of another version "
                    + "may send values this weavedictl does not know (a newer one may add some): "
                    + "use the weavedictl built with that weavedid (weavedictl \(version))."
            }
            return problem
                + "weavedid \(version) answers there, the version of this weavedictl too, yet sends a value this weavedictl does not know: "
                + "one of the two is likely built from other sources than the other. Use the weavedictl built with that weavedid."
        case let .timedOut(socket, method, wait):
            return "weavedictl: no reply to \(method.escapingControlCharacters) from \(socket.shownPath) within \(VarlinkClient.ConnectionError.seconds(wait)) s\n"
                + "The daemon may be stuck, or busy with a call that takes longer: --timeout SECONDS waits longer (0: for ever)."
        case let .permissionDenied(method, uid):
            let who = uid.map { " (you are uid \($0))" } ?? ""
            return "weavedictl: permission denied: \(method.escapingControlCharacters) changes the daemon and needs administrator rights\(who).\n"
                + "Run weavedictl as root or as the daemon's user, or have an administrator add your user to "
                + "control.adminUsers (or a group of yours to control.adminGroups) in the daemon's configuration "
                + "and reload it (`weavedictl reload` or `systemctl reload weavedid`: no restart is needed)."
        case let .failure(failure, method):
            return "weavedictl: \(method.escapingControlCharacters) failed: \(FailureHint.shown(failure))"
                + (FailureHint.hint(for: failure, method: method).map { "\n" + $0 } ?? "")
        case let .configuration(error):
            return "weavedictl: \(String(describing: error).escapingControlCharacters)"
        case let .offline(reason):
            return "weavedictl: \(reason.escapingControlCharacters)"
        case let .noted(error, note):
            return error.message + "\n" + note
        }
    }

    /// ` (mode 0750, owner root, group weavedi)`, or nothing without a status.
    private static func describe(_ status: FileStatus?) -> String {
        guard let status else { return "" }
        // A failed look-up (`try?`) and a missing entry both leave the number.
        let user = try? UserDatabase.user(id: status.userID), group = try? UserDatabase.group(id: status.groupID)
        let owner = user?.name.escapingControlCharacters ?? "uid \(status.userID)"
        let groupName = group?.name.escapingControlCharacters ?? "gid \(status.groupID)"
        return " (mode \(status.permissions), owner \(owner), group \(groupName))"
    }

    /// `a regular file`, `a directory`, ... for a message.
    private static func describe(_ kind: FileKind) -> String {
        switch kind {
        case .regular: "a regular file"
        case .directory: "a directory"
        case .symbolicLink: "a symbolic link"
        case .socket: "a socket"
        case .fifo: "a named pipe (FIFO)"
        case .characterDevice: "a character device"
        case .blockDevice: "a block device"
        case .unknown: "a file of an unknown type"
        }
    }
}
