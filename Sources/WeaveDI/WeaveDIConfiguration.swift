import Synchronization

/// Process-wide settings read from the environment (`applyFromEnvironment()`).
public enum WeaveDIConfiguration {
    private static let warned = Mutex<Set<String>>([])

    /// Logs, once per variable, that `value` of `variable` is not one of `accepted`.
    static func warnOnce(variable: String, value: String, accepted: String, using fallback: String) {
        let first = warned.withLock { $0.insert(variable).inserted }
        guard first else { return }
        WeaveDILog.log(
            .error, subsystem: "configuration",
            "\(variable)=\"\(value)\" is not valid (accepted: \(accepted)); using \(fallback)")
    }
}
