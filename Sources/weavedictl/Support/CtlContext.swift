import Glibc
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// What a subcommand runs with: the global options, the environment, the terminal, and
/// calls to the daemon with their errors already turned into `CtlError`s.
struct CtlContext {
    /// The global options.
    let options: GlobalOptions
    /// The process environment.
    let environment: [String: String]
    /// The working directory (for socket discovery and the offline configuration).
    let workingDirectory: String
    /// Standard output.
    let terminal: Terminal

    /// A context for this process.
    init(options: GlobalOptions, environment: [String: String], workingDirectory: String, isTerminal: Bool) {
        self.options = options
        self.environment = environment
        self.workingDirectory = workingDirectory
        terminal = Terminal(
            isTerminal: isTerminal, colors: options.usesColor(environment: environment, isTerminal: isTerminal))
    }

    /// Where the control socket is.
    var socket: SocketLocation {
        SocketLocation.locate(explicit: options.socket, environment: environment, workingDirectory: workingDirectory)
    }

    /// Connects to the daemon; the connect and each reply wait at most `--timeout` (30 s by
    /// default).
    func connect() throws(CtlError) -> VarlinkClient {
        let socket = self.socket
        guard socket.path.utf8.count <= UnixSocketAddress.maximumPathLength else { throw .socketPathTooLong(socket) }
        do {
            return try VarlinkClient(path: socket.path, timeout: options.replyTimeout())
        } catch {
            guard case let .unreachable(_, reason) = error else { throw .unreachable(socket, reason: "\(error)") }
            if reason.hasSuffix("(\(Errno.permissionDenied.name))") {
                // A directory on the path that may not be searched says EACCES too.
                if let directory = SocketPathCheck.unsearchableDirectory(on: socket.path) {
                    throw .directoryNotSearchable(socket, directory, reason: reason)
                }
                let status = Self.groupMayNotWrite(socket.path)
                throw .socketNotPermitted(
                    socket, reason: reason, groupMayNotWrite: status,
                    inGroup: status.map { (try? CurrentProcess.isMember(ofGroup: $0.groupID)) == true } ?? false)
            }
            if reason.hasSuffix("(\(Errno.noSuchFileOrDirectory.name))"), let link = SocketPathCheck.danglingLink(on: socket.path) {
                throw .danglingLink(socket, link, reason: reason)
            }
            // connect(2) says ECONNREFUSED for a regular file or a directory, as for a socket
            // nobody listens on: only the file's type tells the two apart.
            // A datagram or sequenced-packet socket (journald's, a notify socket) answers EPROTOTYPE.
            if reason.hasSuffix("(\(Errno(rawValue: EPROTOTYPE).name))") {
                throw .notASocket(socket, kind: .socket, reason: reason)
            }
            if reason.hasSuffix("(\(Errno.connectionRefused.name))") || reason.hasSuffix("(\(Errno.notSocket.name))"),
                let status = try? FileStatus(path: socket.path, followSymlinks: true), status.kind != .socket
            {
                throw .notASocket(socket, kind: status.kind, reason: reason)
            }
            throw .unreachable(socket, reason: reason)
        }
    }

    /// The socket's status when this user (its effective ids) is not its owner and the mode
    /// gives the group no write permission: then joining the group, the usual advice, cannot
    /// help (nor being in it already); the mode must change.
    static func groupMayNotWrite(_ path: String) -> FileStatus? {
        guard let status = try? FileStatus(path: path, followSymlinks: true), status.kind == .socket,
            status.userID != CurrentProcess.effectiveUserID, status.permissions.rawValue & 0o020 == 0
        else { return nil }
        return status
    }

    /// Calls `io.weavedi.Daemon.<method>` on a new connection and returns the reply.
    func call(_ method: String, _ parameters: [(String, JSONValue)] = []) throws(CtlError) -> VarlinkReply {
        let client = try connect()
        let call = VarlinkCall(method: DaemonInterface.name + "." + method, parameters: parameters)
        return try perform(call, on: client)!
    }

    /// Sends `call` on `client`; `onReply` sees each reply of a `more` call. Each reply is
    /// checked against the interface first (`ReplyContract`): one that lacks a member the
    /// daemon always sends, or has one of the wrong type, ends the call as no valid reply
    /// (`invalidReply`, exit 69) before anything reads it (see `invalidReply(_:to:on:continues:)`
    /// for one whole but for a value weavedictl does not know).
    @discardableResult
    func perform(_ call: VarlinkCall, on client: VarlinkClient, onReply: (VarlinkReply) -> Void = { _ in }) throws(CtlError) -> VarlinkReply? {
        let method = call.method.hasPrefix(DaemonInterface.name + ".") ? String(call.method.dropFirst(DaemonInterface.name.count + 1)) : nil
        let socket = SocketLocation(path: client.path, origin: .option)
        do {
            return try client.call(call) { reply throws(CtlError) in
                if let method, let problem = ReplyContract.daemon.check(reply.object, inReplyTo: method) {
                    throw invalidReply(problem, to: call.method, on: client, continues: reply.continues)
                }
                onReply(reply)
            }
        } catch let error as CtlError {
            throw error
        } catch let failure as VarlinkFailure {
            throw CtlContext.translate(failure, method: call.method)
        } catch let VarlinkClient.ConnectionError.malformedReply(reason) {
            throw .malformedReply(socket, method: call.method, reason: reason)
        } catch let VarlinkClient.ConnectionError.timedOut(wait) {
            throw .timedOut(socket, method: call.method, wait: wait)
        } catch {
            throw .broken(socket, reason: CtlContext.reason(error))
        }
    }

    /// The error for `problem`, found in a reply of `client` to `method`. A reply whole but for
    /// a name weavedictl does not know (a status, a kind) is what a weavedid of another version
    /// sends, a newer one that added a status: the connection is closed, and the daemon asked
    /// on one of its own what it is (`org.varlink.service.GetInfo`), so that the message can
    /// name its version rather than ask whether this is weavedid's socket. Any other problem,
    /// or an answer that is not weavedid's, keeps that question.
    func invalidReply(_ problem: ReplyContract.Problem, to method: String, on client: VarlinkClient, continues: Bool) -> CtlError {
        let socket = SocketLocation(path: client.path, origin: .option)
        guard problem.onlyUnknownNames else { return .invalidReply(socket, method: method, reason: problem.text, continues: continues) }
        // A daemon that serves one connection at a time must see this one end first.
        client.disconnect()
        return .invalidReply(
            socket, method: method, reason: problem.text, continues: continues, weavedid: weavedidVersion(at: client.path))
    }

    /// The version of the weavedid at `path`, from its `org.varlink.service.GetInfo` (within
    /// `--timeout`), or nil when what answers there does not say it is weavedid serving
    /// `io.weavedi.Daemon`, or does not answer.
    func weavedidVersion(at path: String) -> String? {
        guard let client = try? VarlinkClient(path: path, timeout: options.replyTimeout()),
            let info = try? client.call("org.varlink.service.GetInfo").object,
            info.string("product") == "weavedid",
            info[member: "interfaces"]?.arrayValue?.contains(.string(DaemonInterface.name)) == true,
            let version = info.string("version"), !version.isEmpty
        else { return nil }
        return version
    }

    /// The member `key` of `reply`, a reply of `client` to `method` (its short name), which the
    /// caller needs although the interface lets it be null or absent (the `run` of RunJob's
    /// last reply); `unless`: a member that does instead, when it is there. Without it, the
    /// reply is no valid reply (exit 69).
    func required(
        _ key: String, of reply: VarlinkReply?, to method: String, on client: VarlinkClient, unless other: String? = nil
    ) throws(CtlError) -> JSONValue {
        let parameters = reply?.object ?? .object([])
        if let reason = ReplyContract.daemon.missing(key, inReplyTo: method, parameters, unless: other) {
            throw .invalidReply(SocketLocation(path: client.path, origin: .option), method: DaemonInterface.name + "." + method, reason: reason)
        }
        return parameters[member: key] ?? .null
    }

    /// `PermissionDenied` becomes its own error (exit 77); other failures exit 1.
    static func translate(_ failure: VarlinkFailure, method: String) -> CtlError {
        switch failure.name {
        case DaemonInterface.name + ".PermissionDenied", "org.varlink.service.PermissionDenied":
            let uid = failure.parameters.first { $0.0 == "uid" }?.1.intValue
            let named = failure.parameters.first { $0.0 == "method" }?.1.stringValue ?? method
            return .permissionDenied(method: named, uid: uid)
        default:
            return .failure(failure, method: method)
        }
    }

    private static func reason(_ error: any Error) -> String {
        if let connection = error as? VarlinkClient.ConnectionError, case let .broken(reason) = connection { return reason }
        return "\(error)"
    }

    /// Prints `value` as compact JSON on one line.
    func printJSON(_ value: JSONValue) {
        terminal.line(value.serialized)
    }
}
