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

    /// The descriptor named `name`, or the only one when a single unnamed socket was passed.
    /// Checks that it is a listening Unix stream socket.
    public func listener(named name: String) throws(Problem) -> FileDescriptor? {
        let match = sockets.first { $0.name == name }
            ?? (sockets.count == 1 && sockets[0].name == "unknown" ? sockets[0] : nil)
        guard let match else { return nil }
        let descriptor = match.descriptor
        guard (try? descriptor.socketType()) == .stream, (try? descriptor.isListening()) == true else {
            throw Problem(description: "passed descriptor \(descriptor.rawValue) (\(match.name)) is not a listening stream socket")
        }
        guard (try? descriptor.isUnixSocket()) == true else {
            throw Problem(description: "passed descriptor \(descriptor.rawValue) (\(match.name)) is not a Unix socket")
        }
        return descriptor
    }
}
