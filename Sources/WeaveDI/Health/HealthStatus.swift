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
    /// Whether there is no finding yet (`pending`): what the check looks at has not happened
    /// (a job that never ran). The registry keeps the check's state as it was, unknown before
    /// any finding, and counts nothing; `status` is healthy, as a check not run yet counts in
    /// the score.
    public var isPending: Bool

    /// Creates a result.
    public init(status: HealthStatus, message: String, data: [String: String] = [:]) {
        self.status = status
        self.message = message
        self.data = data
        isPending = false
    }

    private enum CodingKeys: String, CodingKey {
        case status, message, data, isPending
    }

    /// Decodes a result; one encoded before `isPending` was kept is a finding.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        status = try container.decode(HealthStatus.self, forKey: .status)
        message = try container.decode(String.self, forKey: .message)
        data = try container.decode([String: String].self, forKey: .data)
        isPending = try container.decodeIfPresent(Bool.self, forKey: .isPending) ?? false
    }

    /// No finding yet, and why (`not run yet`): the check's state stays as it was (see
    /// `isPending`), so that its first finding is its first result, from no state.
    public static func pending(_ message: String, data: [String: String] = [:]) -> HealthCheckResult {
        var result = HealthCheckResult(status: .healthy, message: message, data: data)
        result.isPending = true
        return result
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
