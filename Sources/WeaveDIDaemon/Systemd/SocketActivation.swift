import WeaveDI
import WeaveDIControl
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

    /// The most descriptors `LISTEN_FDS` may count: far more than any socket unit passes.
    public static let maximumCount: Int32 = 1023

    /// Reads the variables; nil when nothing was passed to this process. The variables are
    /// removed from the environment so that children never see them, and the descriptors are
    /// marked close-on-exec. Call before the process opens any descriptor of its own: one
    /// opened at a number `LISTEN_FDS` counts would pass for a descriptor systemd passed.
    ///
    /// A `LISTEN_FDS` that is no count (not a decimal number, negative, more than
    /// `maximumCount`), or that counts a descriptor which is not open, is refused with a
    /// problem naming the variable, its value (quoted, so that an empty one shows) and what is
    /// wrong with it.
    public static func take(environment: [String: String], pid: Int32) throws(Problem) -> SocketActivation? {
        defer {
            for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { try? CurrentProcess.removeEnvironmentValue(name) }
        }
        guard let pidText = environment["LISTEN_PID"], let countText = environment["LISTEN_FDS"] else { return nil }
        guard SystemdVariable.isDecimal(pidText), let listenPID = Int32(pidText), listenPID > 0 else {
            // As sd_listen_fds(3): an error, not sockets silently taken for another process's.
            throw Problem(description: "\(SystemdVariable.quoted("LISTEN_PID", pidText)) is not a process id; it names the process the sockets in LISTEN_FDS are for")
        }
        guard listenPID == pid else { return nil }  // meant for another process
        let count = try descriptorCount(countText)
        let names = environment["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? []
        if !names.isEmpty, names.count != Int(count) {
            let listed = names.count == 1 ? "1 name" : "\(names.count) names"
            let passed = count == 1 ? "1 descriptor" : "\(count) descriptors"
            throw Problem(description: "LISTEN_FDNAMES lists \(listed) (separated by ':') but LISTEN_FDS counts \(passed): "
                + "the daemon cannot tell which socket is which; systemd sets both alike, so whatever started the daemon set them otherwise")
        }
        var sockets: [(String, FileDescriptor)] = []
        for index in 0..<count {
            let descriptor = FileDescriptor(rawValue: firstDescriptor + index)
            do {
                try descriptor.setCloseOnExec(true)
            } catch {
                throw Problem(description: "\(quoted(countText)) counts descriptors \(firstDescriptor) to \(firstDescriptor + count - 1), "
                    + "but descriptor \(descriptor.rawValue) is not open (\(error))")
            }
            sockets.append((names.isEmpty ? "unknown" : names[Int(index)], descriptor))
        }
        return SocketActivation(sockets: sockets)
    }

    /// `LISTEN_FDS` read as a count of descriptors, or the problem with it: decimal digits
    /// only, as systemd writes it and as `LISTEN_PID` is read (a sign, `+2` or `-0`, is
    /// refused, not read as `Int32` would read it).
    static func descriptorCount(_ text: String) throws(Problem) -> Int32 {
        guard SystemdVariable.isDecimal(text) else {
            let digits = text.dropFirst()
            if text.first == "-", SystemdVariable.isDecimal(digits), digits.contains(where: { $0 != "0" }) {
                throw Problem(description: "\(quoted(text)) is negative; it counts the descriptors systemd passed, from 3 on")
            }
            throw Problem(description: "\(quoted(text)) is not a number of decimal digits only (no sign, no space); "
                + "it counts the descriptors systemd passed, from 3 on")
        }
        guard let count = Int32(text), count <= maximumCount else {
            throw Problem(description: "\(quoted(text)) is too large: the daemon takes at most \(maximumCount) passed descriptors")
        }
        return count
    }

    /// `LISTEN_FDS="…"` (`SystemdVariable.quoted`).
    private static func quoted(_ value: String) -> String {
        SystemdVariable.quoted("LISTEN_FDS", value)
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
            throw Problem(description: "systemd passed \(sockets.count) sockets (\(Self.listed(sockets.map { Self.shown($0.name) }))) "
                + "and none is named \(name); name the control socket with FileDescriptorName=\(name) in its socket unit")
        }
        let descriptor = match.descriptor
        guard (try? descriptor.socketType()) == .stream, (try? descriptor.isListening()) == true else {
            throw Problem(description: "passed descriptor \(descriptor.rawValue) (\(Self.shown(match.name))) is not a listening stream socket")
        }
        guard (try? descriptor.isUnixSocket()) == true else {
            throw Problem(description: "passed descriptor \(descriptor.rawValue) (\(Self.shown(match.name))) is not a Unix socket")
        }
        return (match.name, descriptor)
    }

    /// A warning naming the passed sockets `listener(named: name)` does not serve, or nil when
    /// it serves them all (or none, refusing the start). systemd goes on listening on those:
    /// their clients connect, and wait for ever, as nothing here accepts their connections;
    /// the socket unit passed more than the one socket the daemon serves.
    public func unservedWarning(serving name: String) -> String? {
        guard let served = sockets.first(where: { $0.name == name }) ?? (sockets.count == 1 ? sockets[0] : nil) else { return nil }
        let unserved = sockets.filter { $0.descriptor != served.descriptor }
        guard !unserved.isEmpty else { return nil }
        let named = unserved.prefix(Self.namedAtMost).map { socket in
            // Quoted as every path from outside is: an address may hold a space, a comma, a
            // quote or a newline, which would blur or forge the list.
            let address = (try? socket.descriptor.localAddress()).map {
                $0.kind == .unnamed ? "" : ", \(JSONValue.quotedPathForMessage($0.description))"
            } ?? ""
            return "descriptor \(socket.descriptor.rawValue) (\(Self.shown(socket.name))\(address))"
        }
        return "systemd passed \(sockets.count) sockets; only descriptor \(served.descriptor.rawValue) (\(Self.shown(served.name))) is served, "
            + "not \(Self.listed(named, of: unserved.count)): their clients connect and wait for ever; the socket unit should "
            + "pass only the control socket (FileDescriptorName=\(name))"
    }

    /// How many passed sockets a message names at most; the others are counted.
    static let namedAtMost = 8

    /// A name from `LISTEN_FDNAMES`, for a message, quoted as every message quotes a value from
    /// outside (`JSONValue.quotedForMessage`: escaped as a JSON string, and past 60 Unicode
    /// scalars its first 57, then `...` and its length). systemd gives names of 255 characters
    /// at most; the variable may hold 128 KiB, which makes no message of 128 KiB.
    public static func shown(_ name: String) -> String {
        JSONValue.quotedForMessage(name)
    }

    /// `items` joined with commas, the first `namedAtMost` of them only, then how many more
    /// there are among `count`.
    static func listed(_ items: [String], of count: Int? = nil) -> String {
        let count = count ?? items.count
        let shown = items.prefix(namedAtMost).joined(separator: ", ")
        return count > namedAtMost ? "\(shown) and \(count - namedAtMost) more" : shown
    }
}
