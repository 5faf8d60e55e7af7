import Glibc
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Turns a parsed configuration document into a `DaemonConfiguration`, reporting the first
/// problem in document order.
///
/// Each field is checked when it is reached; checks that compare fields of one job run at
/// the end of that job's object, and checks that involve the effective control socket path
/// (which may come from `runtimeDirectory`, wherever it appears) or the state directory run
/// after the whole document.
struct ConfigurationDecoder {
    static let topLevelFields = ["runtimeDirectory", "stateDirectory", "shutdownTimeout", "control", "health", "sync"]
    static let controlFields = [
        "socket", "socketMode", "socketGroup", "adminUsers", "adminGroups",
        "maxMessageBytes", "maxClients", "maxClientsPerUser", "idleTimeout", "callTimeout",
    ]
    static let healthFields = ["interval", "sessionIdleLimit"]

    let fields: FieldReader
    var configuration: DaemonConfiguration
    var socketIsExplicit = false
    /// The index of the job that first used each name.
    var jobIndices: [String: Int] = [:]
    /// The mirror jobs' roots so far, as written, by position (`checkOverlaps`).
    var mirrorTrees = MirrorTreeIndex<PathIndex>()

    init(file: String, environment: [String: String], workingDirectory: String) {
        fields = FieldReader(file: file)
        configuration = DaemonConfiguration(
            source: .file(path: file), environment: environment, workingDirectory: workingDirectory)
    }

    /// Decodes the whole document.
    mutating func decode(_ document: JSONValue) throws(ConfigurationError) -> DaemonConfiguration {
        guard let members = document.objectMembers else {
            throw ConfigurationError(
                file: fields.file, fieldPath: nil,
                problem: "expected a JSON object at the top level, got \(FieldReader.describe(document))", errno: EINVAL)
        }
        for (name, value) in members {
            let path = try fields.knownMember(name, of: "", accepted: Self.topLevelFields)
            switch name {
            case "runtimeDirectory":
                configuration.runtimeDirectory = try fields.absolutePath(value, at: path)
                if configuration.socketOrigin != .controlSocket { configuration.socketOrigin = .runtimeDirectory }
            case "stateDirectory":
                configuration.stateDirectory = try fields.absolutePath(value, at: path)
                configuration.stateDirectoryIsSet = true
            case "shutdownTimeout":
                configuration.shutdownTimeout = try fields.seconds(value, at: path, in: .positive(upTo: 3600))
            case "control": try decodeControl(value, at: path)
            case "health": try decodeHealth(value, at: path)
            default: try decodeSync(value, at: path)
            }
        }
        try checkDaemonPaths()
        return configuration
    }

    private mutating func decodeControl(_ value: JSONValue, at parent: String) throws(ConfigurationError) {
        for (name, value) in try fields.members(of: value, at: parent) {
            let path = try fields.knownMember(name, of: parent, accepted: Self.controlFields)
            switch name {
            case "socket":
                let socket = try fields.absolutePath(value, at: path)
                try checkSocketLength(socket, at: path, isDefault: false)
                configuration.control.socket = socket
                configuration.socketOrigin = .controlSocket
                socketIsExplicit = true
            case "socketMode":
                configuration.control.socketMode = try socketMode(value, at: path)
            case "socketGroup":
                configuration.control.socketGroup = try value.isNull ? nil : fields.account(value, at: path, kind: .group)
            case "adminUsers":
                configuration.control.adminUsers = try accounts(value, at: path, kind: .user)
            case "adminGroups":
                configuration.control.adminGroups = try accounts(value, at: path, kind: .group)
            case "maxMessageBytes":
                configuration.control.maxMessageBytes = try fields.integer(value, at: path, in: 1024...67_108_864)
            case "maxClients":
                configuration.control.maxClients = try fields.integer(value, at: path, in: 1...4096)
            case "maxClientsPerUser":
                configuration.control.maxClientsPerUser = try fields.integer(value, at: path, in: 1...4096)
            case "idleTimeout":
                configuration.control.idleTimeout = try fields.seconds(value, at: path, in: .positive(upTo: 86400))
            default:
                configuration.control.callTimeout = try fields.seconds(value, at: path, in: .positive(upTo: 3600))
            }
        }
    }

    private mutating func decodeHealth(_ value: JSONValue, at parent: String) throws(ConfigurationError) {
        for (name, value) in try fields.members(of: value, at: parent) {
            let path = try fields.knownMember(name, of: parent, accepted: Self.healthFields)
            if name == "interval" {
                configuration.health.interval = try fields.seconds(value, at: path, in: .from(0.1, to: 86400))
            } else {
                configuration.health.sessionIdleLimit = try fields.seconds(
                    value, at: path, in: .positive(upTo: SecondsRange.oneYear))
            }
        }
    }

    private func accounts(
        _ value: JSONValue,
        at path: String,
        kind: FieldReader.AccountKind
    ) throws(ConfigurationError) -> [DaemonConfiguration.AccountReference] {
        var accounts: [DaemonConfiguration.AccountReference] = []
        for (index, element) in try fields.elements(of: value, at: path).enumerated() {
            accounts.append(try fields.account(element, at: "\(path)[\(index)]", kind: kind))
        }
        return accounts
    }

    /// An octal string of 3 or 4 digits, at most 0777, giving the owner read and write.
    private func socketMode(_ value: JSONValue, at path: String) throws(ConfigurationError) -> FilePermissions {
        let expected = "an octal mode string of 3 or 4 digits such as \"0660\""
        let text = try fields.string(value, at: path, expected: expected)
        guard (3...4).contains(text.utf8.count),
              text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }),
              let mode = UInt32(text, radix: 8)
        else { throw fields.fail(path, "expected \(expected), got \(FieldReader.describe(value))") }
        guard mode <= 0o777 else {
            throw fields.fail(path, "mode \"\(text)\" has bits above 0777 (setuid, setgid or sticky), which a socket cannot use")
        }
        guard mode & 0o600 == 0o600 else {
            throw fields.fail(path, "mode \"\(text)\" must give the owner read and write permission (0600)")
        }
        return FilePermissions(rawValue: mode)
    }

    private func checkSocketLength(_ socket: String, at path: String, isDefault: Bool) throws(ConfigurationError) {
        guard let problem = DaemonConfiguration.socketLengthProblem(socket, isDefault: isDefault) else { return }
        throw fields.fail(path, isDefault ? problem + "; set control.socket or a shorter runtimeDirectory" : problem)
    }

    /// Applies the default socket path, and checks the job destinations against the daemon's
    /// own paths (`ReservedPath`: the control socket, the state directory and its files, the
    /// metrics file).
    private mutating func checkDaemonPaths() throws(ConfigurationError) {
        if !socketIsExplicit {
            let socket = ConfigurationDirectories.join(configuration.runtimeDirectory, "control.sock")
            try checkSocketLength(socket, at: "control.socket", isDefault: true)
            configuration.control.socket = socket
        }
        let reserved = ReservedPath.all(of: configuration)
        let components = reserved.map { ConfigurationDirectories.normalizedComponents($0.path) }
        for (index, job) in configuration.sync.jobs.enumerated() {
            guard let destination = job.mirror?.destination else { continue }
            let destinationComponents = ConfigurationDirectories.normalizedComponents(destination)
            for (path, pathComponents) in zip(reserved, components) {
                guard let relation = MirrorTreeOverlap.relation(of: destinationComponents, to: pathComponents),
                      path.refuses(relation)
                else { continue }
                throw fields.fail("sync.jobs[\(index)].destination", path.problem("the destination \(JSONValue.quotedPathForMessage(destination))", relation))
            }
        }
    }
}
