/// How much WeaveDI logs, as the documentation's table defines it.
///
/// | level | emits |
/// |---|---|
/// | `.all` | every diagnostic message (default) |
/// | `.registration` | registration successes and overwrites, plus errors |
/// | `.optimization` | optimization lifecycle, plus errors |
/// | `.errors` | errors, plus registration failures and overwrites |
/// | `.off` | nothing |
public enum LogLevel: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Every diagnostic message.
    case all
    /// Registration successes (and overwrites) and errors.
    case registration
    /// Optimization lifecycle messages and errors.
    case optimization
    /// Errors, registration failures and overwrites.
    case errors
    /// Nothing at all.
    case off

    /// The level's name, as accepted by `WEAVEDI_LOG_LEVEL`.
    public var description: String { rawValue }

    /// Parses a level name in any case (`all`, `registration`, `optimization`, `errors`, `off`).
    public init?(name: String) {
        self.init(rawValue: name.lowercased())
    }

    /// Whether a message of `category` is emitted at this level.
    public func admits(_ category: LogCategory) -> Bool {
        switch (self, category) {
        case (.all, _): true
        case (.off, _): false
        case (_, .error): true
        case (.registration, .registration), (.registration, .overwrite): true
        case (.optimization, .optimization): true
        case (.errors, .overwrite): true
        default: false
        }
    }

    @usableFromInline
    var rank: UInt8 {
        switch self {
        case .all: 0
        case .registration: 1
        case .optimization: 2
        case .errors: 3
        case .off: 4
        }
    }

    @usableFromInline
    init(rank: UInt8) {
        self = [.all, .registration, .optimization, .errors, .off][Int(min(rank, 4))]
    }
}

/// What a WeaveDI log message is about; the log level decides which categories are emitted.
public enum LogCategory: String, Sendable, CaseIterable {
    /// A service was registered.
    case registration
    /// A registration replaced an earlier one for the same type, or a health check one of the
    /// same name.
    case overwrite
    /// Graph validation and warm-up (`enableOptimization()`).
    case optimization
    /// Health checks and auto-fix actions (also gated by `WEAVEDI_REGISTRY_HEALTH_LOGGING`).
    case health
    /// Other diagnostics: resolutions, scopes opening and closing.
    case diagnostic
    /// Something failed: a resolution, a factory, a fix.
    case error
}
