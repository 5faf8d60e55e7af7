// TEMPORARY: replaced by the configuration loader when it lands.
public struct DaemonConfiguration: Sendable, Equatable {
    public var sourcePath: String?
    public var runtimeDirectory: String
    public var stateDirectory: String
    public var shutdownTimeout: Double = 10
    public var control: Control
    public var health = Health()
    public struct Control: Sendable, Equatable {
        public var socket: String
        public var socketMode: UInt32 = 0o660
        public var maxMessageBytes = 1_048_576
        public var maxClients = 64
        public var idleTimeout: Double = 30
        public var callTimeout: Double = 10
        public var adminUsers: [String] = []
        public var adminGroups: [String] = []
    }
    public struct Health: Sendable, Equatable {
        public var interval: Double = 30
        public var sessionIdleLimit: Double = 300
    }
    public static func builtInDefault(environment: [String: String], workingDirectory: String) -> DaemonConfiguration {
        let runtime = environment["RUNTIME_DIRECTORY"].map { String($0.split(separator: ":").first ?? "") }
            ?? environment["XDG_RUNTIME_DIR"].map { $0 + "/weavedi" } ?? workingDirectory + "/.weavedi/run"
        let state = environment["STATE_DIRECTORY"] ?? workingDirectory + "/.weavedi/state"
        return DaemonConfiguration(sourcePath: nil, runtimeDirectory: runtime, stateDirectory: state,
                                   control: Control(socket: runtime + "/control.sock"))
    }
    public static func load(path: String, environment: [String: String], workingDirectory: String) throws(ConfigurationError) -> DaemonConfiguration {
        var c = builtInDefault(environment: environment, workingDirectory: workingDirectory)
        c.sourcePath = path
        return c
    }
}
public struct ConfigurationError: Error, CustomStringConvertible {
    public var file: String
    public var fieldPath: String?
    public var problem: String
    public var errno: Int32
    public var description: String { "\(file): \(fieldPath.map { $0 + ": " } ?? "")\(problem)" }
}
