/// How a health check found what it checks, from best to worst.
public enum HealthStatus: String, Sendable, Codable, Comparable, CaseIterable {
    /// Working as intended.
    case healthy
    /// Working, but not as well as it should (slow, partly failing, close to a limit).
    case degraded
    /// Not working.
    case unhealthy

    /// A check's share of the health score: healthy 100, degraded 50, unhealthy 0.
    public var score: Int {
        switch self {
        case .healthy: 100
        case .degraded: 50
        case .unhealthy: 0
        }
    }

    private var severity: Int {
        switch self {
        case .healthy: 0
        case .degraded: 1
        case .unhealthy: 2
        }
    }

    /// Worse is greater: `.healthy < .degraded < .unhealthy`.
    public static func < (lhs: HealthStatus, rhs: HealthStatus) -> Bool { lhs.severity < rhs.severity }
}

/// What one run of a health check found.
public struct HealthCheckResult: Sendable, Codable, Equatable {
    /// The finding.
    public var status: HealthStatus
    /// One line for people: what is wrong, or what is fine.
    public var message: String
    /// Figures behind the finding (counts, paths, ages), for machines.
    public var data: [String: String]

    /// Creates a result.
    public init(status: HealthStatus, message: String, data: [String: String] = [:]) {
        self.status = status
        self.message = message
        self.data = data
    }

    /// A healthy result.
    public static func healthy(_ message: String = "ok", data: [String: String] = [:]) -> HealthCheckResult {
        HealthCheckResult(status: .healthy, message: message, data: data)
    }

    /// A degraded result.
    public static func degraded(_ message: String, data: [String: String] = [:]) -> HealthCheckResult {
        HealthCheckResult(status: .degraded, message: message, data: data)
    }

    /// An unhealthy result.
    public static func unhealthy(_ message: String, data: [String: String] = [:]) -> HealthCheckResult {
        HealthCheckResult(status: .unhealthy, message: message, data: data)
    }
}

/// What a singleton adopts to report its own health; the container's built-in check asks every
/// built singleton that adopts it, and evicts (disposes, rebuilds on next resolve) the ones that
/// report themselves unhealthy.
public protocol HealthReporting: Sendable {
    /// The instance's own view of its health.
    func health() async -> HealthCheckResult
}
