/// How important a daemon log line is; each maps to a syslog priority for journald.
public enum DaemonLogLevel: String, Sendable, CaseIterable, Comparable {
    /// Step-by-step detail (priority 7).
    case trace
    /// Detail for debugging (priority 7).
    case debug
    /// Normal operation (priority 6).
    case info
    /// Worth noticing: state changes, reloads (priority 5).
    case notice
    /// Something is off but the daemon copes (priority 4).
    case warning
    /// Something failed (priority 3).
    case error
    /// In a filter: nothing at all.
    case off

    /// The syslog priority journald reads from the `<N>` prefix.
    public var syslogPriority: Int {
        switch self {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error, .off: 3
        }
    }

    private var rank: Int { DaemonLogLevel.allCases.firstIndex(of: self)! }

    /// Less important is smaller: `.trace < .debug < … < .error < .off`.
    public static func < (lhs: DaemonLogLevel, rhs: DaemonLogLevel) -> Bool { lhs.rank < rhs.rank }
}
