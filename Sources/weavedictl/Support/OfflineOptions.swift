import WeaveDI
import WeaveDIControl
import WeaveDIDaemon

/// `--offline [--config PATH]` of `diagnose-components` and `check-cycles`: bootstrap the
/// daemon's modules in this process instead of asking a running daemon (the CI use).
struct OfflineOptions {
    /// `--offline`.
    var offline = false
    /// `--config PATH`: the configuration to load; default the daemon's lookup order.
    var configPath: String?

    /// The help text for both subcommands.
    static let help = """
        Options:
          --offline       no daemon needed: load the configuration and bootstrap the daemon's
                          modules inside weavedictl, as CI does before deploying
          --config PATH   with --offline: the configuration file (default /etc/weavedi/weavedid.json
                          if it exists, else the built-in default, as weavedid does)
        """

    /// Parses the subcommand's arguments: these two options and the global ones.
    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        while let token = reader.next() {
            switch token {
            case let .option("--offline", value):
                try reader.flag("--offline", inline: value)
                offline = true
            case let .option("--config", value): configPath = try reader.onceValue(of: "--config", inline: value)
            case let .option(name, value): try reader.shared(name, inline: value)
            case let .argument(argument): throw reader.unexpected(argument)
            }
        }
        if configPath != nil, !offline { throw reader.error("--config only applies with --offline") }
    }

    /// The daemon's container, bootstrapped from the configuration (exit 78 when it is invalid).
    /// The library logs errors only, unless `WEAVEDI_LOG_LEVEL` says otherwise.
    func container(in context: CtlContext) async throws(CtlError) -> WeaveDI.Container {
        let level = Self.logLevel(environment: context.environment)
        let configuration: DaemonConfiguration
        do {
            configuration = try DaemonConfiguration.resolve(
                explicitPath: configPath, environment: context.environment, workingDirectory: context.workingDirectory)
        } catch {
            throw .configuration(error)
        }
        // The library's registration chatter would bury the result; WEAVEDI_LOG_LEVEL brings it back.
        WeaveDILog.level = level
        do {
            return try await OfflineDiagnostics.container(configuration: configuration)
        } catch {
            throw .offline("cannot bootstrap the daemon's modules: \(error)")
        }
    }

    /// The library's log level: `WEAVEDI_LOG_LEVEL` read as the library reads it (any case,
    /// spaces around ignored; empty counts as unset), else errors only. A value that is no level
    /// is said on standard error, as the daemon logs it, rather than ignored in silence.
    static func logLevel(environment: [String: String]) -> LogLevel {
        guard let raw = environment["WEAVEDI_LOG_LEVEL"], !raw.isEmpty else { return .errors }
        if let level = LogLevel(name: raw.trimmingASCIISpaces()) { return level }
        Terminal.error("weavedictl: WEAVEDI_LOG_LEVEL=\(JSONValue.quotedForMessage(raw).escapingControlCharacters) is not valid "
            + "(accepted: \(LogLevel.allCases.map(\.rawValue).joined(separator: ", "))); using errors")
        return .errors
    }
}
