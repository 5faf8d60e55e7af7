/// The documentation's entry point for tuning diagnostics at run time.
public enum UnifiedDI {
    /// Sets how much WeaveDI logs (see `LogLevel` for what each level emits).
    public static func setLogLevel(_ level: LogLevel) {
        WeaveDILog.level = level
    }

    /// The current log level.
    public static var logLevel: LogLevel { WeaveDILog.level }

    /// Replaces where WeaveDI's log lines go (standard error by default).
    public static func setLogSink(_ sink: @escaping LogSink) {
        WeaveDILog.setSink(sink)
    }
}
