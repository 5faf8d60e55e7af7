import WeaveDIPosix

extension DaemonConfiguration {
    /// The `control` section: the control socket, its permissions and its limits.
    public struct Control: Sendable, Equatable {
        /// The control socket's path; default `<runtimeDirectory>/control.sock`, at most 107 bytes.
        public var socket: String
        /// The socket file's permission bits; default `0o660`, at most `0o777`, owner read and write.
        public var socketMode: FilePermissions = 0o660
        /// The group the socket file is given, if any; default none (the daemon's group).
        public var socketGroup: AccountReference?
        /// Users whose connections get the administrator level; default none.
        public var adminUsers: [AccountReference] = []
        /// Groups whose members get the administrator level; default none.
        public var adminGroups: [AccountReference] = []
        /// The largest control message accepted, in bytes; default 1 MiB, from 1024 to 64 MiB.
        public var maxMessageBytes = 1_048_576
        /// How many clients may be connected at once; default 64, from 1 to 4096.
        public var maxClients = 64
        /// How many of them one user who is no administrator may have; default 16, from 1 to
        /// 4096: one local user cannot take every place from the others.
        public var maxClientsPerUser = 16
        /// How long a connection may stay silent before it is closed; default 30 seconds.
        public var idleTimeout: Duration = .seconds(30)
        /// How long one call may take before it fails with a timeout; default 10 seconds.
        public var callTimeout: Duration = .seconds(10)

        init(socket: String) {
            self.socket = socket
        }
    }

    /// A user or group given by name or by numeric id.
    public enum AccountReference: Sendable, Equatable, CustomStringConvertible {
        /// A user or group name, looked up when the daemon starts.
        case name(String)
        /// A numeric uid or gid.
        case id(UInt32)

        /// The name, or the id in decimal.
        public var description: String {
            switch self {
            case let .name(name): name
            case let .id(id): String(id)
            }
        }
    }
}
