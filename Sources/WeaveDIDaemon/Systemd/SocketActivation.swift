import WeaveDIPosix

/// Sockets passed by systemd (`LISTEN_PID`, `LISTEN_FDS`, `LISTEN_FDNAMES`; `sd_listen_fds(3)`).
public struct SocketActivation: Sendable {
    /// The first passed descriptor number.
    public static let firstDescriptor: Int32 = 3

    /// The passed descriptors by name (`LISTEN_FDNAMES`; `unknown` where unnamed).
    public var sockets: [(name: String, descriptor: FileDescriptor)]

    /// Why the passed sockets are unusable.
    public struct Problem: Error, CustomStringConvertible {
        /// What is wrong.
        public var description: String
    }

    /// Reads the variables; nil when nothing was passed to this process. The variables are
    /// removed from the environment so that children never see them, and the descriptors are
    /// marked close-on-exec.
    public static func take(environment: [String: String], pid: Int32) throws(Problem) -> SocketActivation? {
        defer {
            for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { try? CurrentProcess.removeEnvironmentValue(name) }
        }
        guard let pidText = environment["LISTEN_PID"], let countText = environment["LISTEN_FDS"] else { return nil }
        guard Int32(pidText) == pid else { return nil }  // meant for another process
        guard let count = Int32(countText), count >= 0, count < 1024 else {
            throw Problem(description: "LISTEN_FDS=\(countText) is not a descriptor count")
        }
        let names = environment["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? []
        if !names.isEmpty, names.count != Int(count) {
            throw Problem(description: "LISTEN_FDNAMES has \(names.count) names for LISTEN_FDS=\(count) descriptors")
        }
        var sockets: [(String, FileDescriptor)] = []
        for index in 0..<count {
            let descriptor = FileDescriptor(rawValue: firstDescriptor + index)
            do {
                try descriptor.setCloseOnExec(true)
            } catch {
                throw Problem(description: "passed descriptor \(descriptor.rawValue) is not open: \(error)")
            }
            sockets.append((names.isEmpty ? "unknown" : names[Int(index)], descriptor))
        }
        return SocketActivation(sockets: sockets)
    }

    /// The socket named `name`, or the only one passed, whatever its name (systemd names a
    /// socket after its unit, `weavedid.socket`, unless `FileDescriptorName=` says otherwise);
    /// nil when none was passed. Several sockets of which none is named `name` are refused: the
    /// daemon cannot tell which one to serve, and binding one of its own would leave the
    /// clients of the passed ones waiting for ever. Checks that it is a listening Unix stream
    /// socket.
    public func listener(named name: String) throws(Problem) -> (name: String, descriptor: FileDescriptor)? {
        guard !sockets.isEmpty else { return nil }
        guard let match = sockets.first(where: { $0.name == name }) ?? (sockets.count == 1 ? sockets[0] : nil) else {
            throw Problem(description: "systemd passed \(sockets.count) sockets (\(sockets.map(\.name).joined(separator: ", "))) "
                + "and none is named \(name); name the control socket with FileDescriptorName=\(name) in its socket unit")
        }
        let descriptor = match.descriptor
        guard (try? descriptor.socketType()) == .stream, (try? descriptor.isListening()) == true else {
            throw Problem(description: "passed descriptor \(descriptor.rawValue) (\(match.name)) is not a listening stream socket")
        }
        guard (try? descriptor.isUnixSocket()) == true else {
            throw Problem(description: "passed descriptor \(descriptor.rawValue) (\(match.name)) is not a Unix socket")
        }
        return (match.name, descriptor)
    }
}
