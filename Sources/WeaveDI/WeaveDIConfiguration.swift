/// Process-wide settings read from the environment.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `WEAVEDI_REGISTRY_HEALTH_LOGGING` | off | log health transitions and fixes |
/// | `WEAVEDI_REGISTRY_AUTO_HEALTH` | on | the check loop of `UnifiedRegistry.shared` runs (`applyFromEnvironment()` starts it) |
/// | `WEAVEDI_REGISTRY_AUTO_FIX` | on | fixes run automatically after a check's failure threshold |
/// | `WEAVEDI_INJECTED_ENV` | automatic | `live`, `test`, `preview` or `automatic` |
/// | `WEAVEDI_LOG_LEVEL` | all | `all`, `registration`, `optimization`, `errors` or `off` |
///
/// The defaults are the settings' own before anything changes them. A variable that is unset
/// or empty leaves its setting as it is (a level set by `UnifiedDI.setLogLevel(_:)`, say): an
/// empty value is how a systemd drop-in unsets one (`Environment=WEAVEDI_LOG_LEVEL=`).
/// Spaces, tabs and line ends around a value are ignored (a value of nothing else is not empty:
/// it is warned about, as below).
/// Booleans accept `1/true/yes/on` and `0/false/no/off` in any case. Any other value leaves the
/// setting as it is and is warned about once, naming the variable, the value and what is accepted.
public enum WeaveDIConfiguration {
    /// What `applyFromEnvironment()` applied.
    public struct Settings: Sendable, Equatable {
        /// `WEAVEDI_REGISTRY_HEALTH_LOGGING`.
        public var healthLogging: Bool
        /// `WEAVEDI_REGISTRY_AUTO_HEALTH`.
        public var autoHealth: Bool
        /// `WEAVEDI_REGISTRY_AUTO_FIX`.
        public var autoFix: Bool
        /// The context after `WEAVEDI_INJECTED_ENV` (or detection).
        public var injectedContext: InjectedContext
        /// `WEAVEDI_LOG_LEVEL`.
        public var logLevel: LogLevel
    }

    private static let warned = Locked<Set<String>>([])

    /// Whether `applyFromEnvironment()` has offered `UnifiedRegistry.shared` the built-in checks
    /// of the live container (it does once: checks removed after it stay removed).
    private static let liveChecksOffered = Locked(false)

    /// The variables above: what `applyFromEnvironment()` reads, and warns about itself when
    /// a value is not valid (not UTF-8 included).
    public static let variableNames = [
        "WEAVEDI_REGISTRY_HEALTH_LOGGING", "WEAVEDI_REGISTRY_AUTO_HEALTH", "WEAVEDI_REGISTRY_AUTO_FIX",
        "WEAVEDI_INJECTED_ENV", "WEAVEDI_LOG_LEVEL",
    ]

    /// The subsystem of the log lines about a variable above whose value is ignored (a default
    /// is used instead). They are of category `.error`, the library's only category for a
    /// problem; a sink with a warning level of its own (the daemon's) logs them at that level.
    public static let environmentLogSubsystem = "configuration"

    /// Reads the variables above and applies them to `UnifiedRegistry.shared`, the log level
    /// and `InjectedContext`; returns the settings now in effect. An unset variable, or one with
    /// a value that is not valid (warned about), leaves its setting as it is.
    ///
    /// The first call also registers on the registry the passive built-in checks of the live
    /// container (`registerLiveContainerChecks()`, `ContainerChecks.passive`: `container.graph`
    /// reading the recorded graph, `container.singletons` asking built singletons that adopt
    /// `HealthReporting`, of whichever container `WeaveDI.Container.live` is as they run), unless
    /// it has a check of one of the built-in names already (`registerContainerChecks(for:)`
    /// called before, with a container of the program's): the loop and the flags have something
    /// to look at. They build nothing, run no factory, open and close no session.
    /// `registerLiveContainerChecks(.active())` asks for the checks that build. Unregister them
    /// after the call to do without them; a later call does not bring them back.
    ///
    /// With `WEAVEDI_REGISTRY_AUTO_HEALTH` on (the default) it also starts the registry's check
    /// loop, every `healthLoopInterval`, unless the loop already runs; off, it stops the loop.
    /// Pass nil to start it yourself later (the daemon does, once its checks are registered, at
    /// its configured interval).
    @discardableResult
    public static func applyFromEnvironment(healthLoopInterval: Duration? = .seconds(30)) -> Settings {
        let registry = UnifiedRegistry.shared
        let settings = Settings(
            healthLogging: flag("WEAVEDI_REGISTRY_HEALTH_LOGGING", current: registry.healthLoggingEnabled),
            autoHealth: flag("WEAVEDI_REGISTRY_AUTO_HEALTH", current: registry.autoHealthEnabled),
            autoFix: flag("WEAVEDI_REGISTRY_AUTO_FIX", current: registry.autoFixEnabled),
            injectedContext: InjectedContext.fromEnvironment(current: InjectedContext.current),
            logLevel: logLevel(current: WeaveDILog.level))
        registry.healthLoggingEnabled = settings.healthLogging
        registry.autoHealthEnabled = settings.autoHealth
        registry.autoFixEnabled = settings.autoFix
        InjectedContext.current = settings.injectedContext
        WeaveDILog.level = settings.logLevel
        offerLiveContainerChecks(to: registry)
        if settings.autoHealth, let interval = healthLoopInterval, !registry.isRunning {
            registry.start(interval: interval)
        }
        return settings
    }

    /// Registers the live container's built-in checks on `registry`, the first time only, and
    /// only if it has none of their names (see `applyFromEnvironment`).
    static func offerLiveContainerChecks(to registry: UnifiedRegistry) {
        let first = liveChecksOffered.withLock { offered in
            defer { offered = true }
            return !offered
        }
        guard first, Set(registry.checkNames).isDisjoint(with: UnifiedRegistry.containerCheckNames) else { return }
        // Each only if absent, in the same step as the look: a program's own checks registered
        // meanwhile on another thread are not displaced.
        registry.registerContainerChecks(of: { WeaveDI.Container.live }, .passive, .addIfAbsent)
    }

    /// Parses a boolean environment value; nil for anything but `1/true/yes/on`, `0/false/no/off`.
    public static func parseBool(_ raw: String) -> Bool? {
        switch raw.trimmingASCIISpaces().lowercased() {
        case "1", "true", "yes", "on": true
        case "0", "false", "no", "off": false
        default: nil
        }
    }

    /// The value of the variable `name` above; nil when it is unset or empty. An empty value
    /// counts as unset, as weavedid counts an empty `WEAVEDID_LOG` or directory variable:
    /// `Environment=NAME=` in a systemd drop-in is the usual way to unset what the unit sets.
    /// A value of spaces only is not empty: it is read, trimmed, and refused as any other.
    static func settingValue(_ name: String) -> String? {
        guard let raw = environmentValue(name), !raw.isEmpty else { return nil }
        return raw
    }

    /// The boolean variable `name`; `current` when it is unset, empty or not valid (warned about).
    static func flag(_ name: String, current: Bool) -> Bool {
        guard let raw = settingValue(name) else { return current }
        if let value = parseBool(raw) { return value }
        warnOnce(variable: name, value: raw, accepted: "1, true, yes, on, 0, false, no or off (any case)",
                 using: "the current setting (\(current ? "on" : "off"))")
        return current
    }

    /// `WEAVEDI_LOG_LEVEL`; `current` when it is unset, empty or not valid (warned about).
    static func logLevel(current: LogLevel) -> LogLevel {
        guard let raw = settingValue("WEAVEDI_LOG_LEVEL") else { return current }
        if let level = LogLevel(name: raw.trimmingASCIISpaces()) { return level }
        warnOnce(variable: "WEAVEDI_LOG_LEVEL", value: raw, accepted: LogLevel.allCases.map(\.rawValue).joined(separator: ", "),
                 using: "the current level (\(current))")
        return current
    }

    /// Logs, once per variable, that `value` of `variable` is not one of `accepted`.
    static func warnOnce(variable: String, value: String, accepted: String, using fallback: String) {
        let first = warned.withLock { $0.insert(variable).inserted }
        guard first else { return }
        let invalid = environmentValueIsUTF8(variable) ? "is not valid" : "is not valid UTF-8 (\u{FFFD} stands for its bytes that are not)"
        WeaveDILog.log(
            .error, subsystem: environmentLogSubsystem,
            "\(variable)=\(JSONValue.quotedForMessage(value)) \(invalid) (accepted: \(accepted)); using \(fallback)")
    }
}
