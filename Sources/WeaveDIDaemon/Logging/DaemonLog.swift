import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// The daemon's logger: one line per message on standard error, written unbuffered.
///
/// When `JOURNAL_STREAM` names the file standard error is (journald is reading it), each line
/// starts with its syslog priority (`<6>`) and has no timestamp of its own; otherwise it starts
/// with a UTC timestamp and the level. Lines are filtered by `LogFilter` (`WEAVEDID_LOG`).
public final class DaemonLog: Sendable {
    /// Whether lines carry journald priority prefixes.
    public let journald: Bool
    private let filter: Locked<LogFilter>
    /// Standard error, which a line waits for at most `LogOutput.stallLimit`.
    private let output: Locked<LogOutput>

    /// A logger writing to `output` (standard error by default).
    public init(filter: LogFilter = .standard, journald: Bool, output: FileDescriptor = .standardError) {
        self.filter = Locked(filter)
        self.journald = journald
        self.output = Locked(LogOutput(output))
    }

    /// The filter in effect.
    public var currentFilter: LogFilter {
        get { filter.withLock { $0 } }
        set { filter.withLock { $0 = newValue } }
    }

    /// Whether a line of `level` from `subsystem` would be written.
    public func isEnabled(_ level: DaemonLogLevel, _ subsystem: String) -> Bool {
        filter.withLock { $0.admits(level, subsystem: subsystem) }
    }

    /// Writes `message` if the filter admits it; builds the message only then.
    public func log(_ level: DaemonLogLevel, _ subsystem: String, _ message: @autoclosure () -> String) {
        guard isEnabled(level, subsystem) else { return }
        write(level, subsystem, message())
    }

    /// Shorthands.
    public func info(_ subsystem: String, _ message: @autoclosure () -> String) { log(.info, subsystem, message()) }
    /// See `info`.
    public func notice(_ subsystem: String, _ message: @autoclosure () -> String) { log(.notice, subsystem, message()) }
    /// See `info`.
    public func warning(_ subsystem: String, _ message: @autoclosure () -> String) { log(.warning, subsystem, message()) }
    /// See `info`.
    public func error(_ subsystem: String, _ message: @autoclosure () -> String) { log(.error, subsystem, message()) }
    /// See `info`.
    public func debug(_ subsystem: String, _ message: @autoclosure () -> String) { log(.debug, subsystem, message()) }

    /// Writes `message` as the log's last line (the filter admitting it or not), and nothing
    /// after it: the process exits with lines of other threads perhaps still coming (a
    /// shutdown that overran), which would otherwise follow the line that says it exits.
    public func last(_ level: DaemonLogLevel, _ subsystem: String, _ message: String) {
        write(level, subsystem, message, closing: true)
    }

    /// Writes no more lines: the process is about to exit.
    public func close() {
        output.withLock { $0.close() }
    }

    /// Takes the line's timestamp under the lock, so that lines are written in the order of
    /// their timestamps, whichever threads write them.
    private func write(_ level: DaemonLogLevel, _ subsystem: String, _ message: String, closing: Bool = false) {
        let body = message.escapingControlCharacters + "\n"
        output.withLock { output in
            guard !output.isClosed else { return }
            defer { if closing { output.close() } }
            let line = Array((prefix(level, subsystem) + body).utf8)
            output.write(line) { dropped in
                Array(format(.warning, "daemon", "\(dropped) log line(s) dropped: standard error took nothing for "
                    + "\(LogOutput.stallLimit) (whatever reads it, a pipe or journald, stopped reading)").utf8)
            }
        }
    }

    /// `message` as a line of the log, newline included.
    private func format(_ level: DaemonLogLevel, _ subsystem: String, _ message: String) -> String {
        var line = prefix(level, subsystem)
        line += message.escapingControlCharacters
        line += "\n"
        return line
    }

    /// What a line starts with: its journald priority, or its timestamp (now) and level; then
    /// `subsystem`.
    private func prefix(_ level: DaemonLogLevel, _ subsystem: String) -> String {
        journald
            ? "<\(level.syslogPriority)>\(subsystem): "
            : "\(DaemonLog.timestamp()) \(level.rawValue.padding(7)) \(subsystem): "
    }

    /// Sends the WeaveDI library's own log lines here, under subsystem `weavedi`.
    public func adoptLibraryLogging() {
        UnifiedDI.setLogSink { [self] record in write(libraryRecord: record) }
    }

    /// Writes one of the library's lines, at the daemon level its category maps to.
    func write(libraryRecord record: LogRecord) {
        let level: DaemonLogLevel = switch record.category {
        // A WEAVEDI_* value ignored for its default: a warning, as a bad WEAVEDID_LOG is.
        case .error where record.subsystem == WeaveDIConfiguration.environmentLogSubsystem: .warning
        case .error: .error
        case .overwrite: .warning
        case .health: .notice
        case .optimization: .info
        case .registration, .diagnostic: .debug
        }
        log(level, record.subsystem == "container" ? "weavedi" : "weavedi.\(record.subsystem)", record.message)
    }

    /// Whether `JOURNAL_STREAM` (`DEVICE:INODE`) names the file behind standard error. Both
    /// numbers are decimal digits only, as systemd writes them (a sign is no part of them).
    public static func journaldIsReading(environment: [String: String], standardError: FileDescriptor = .standardError) -> Bool {
        guard let value = environment["JOURNAL_STREAM"], let colon = value.firstIndex(of: ":"),
            case let (deviceText, inodeText) = (value[..<colon], value[value.index(after: colon)...]),
            SystemdVariable.isDecimal(deviceText), SystemdVariable.isDecimal(inodeText),
            let device = UInt64(deviceText), let inode = UInt64(inodeText),
            let status = try? standardError.status()
        else { return false }
        return UInt64(status.device) == device && UInt64(status.inode) == inode
    }

    /// `2026-11-21T07:30:00.123Z`: `now`, by default from the realtime clock.
    static func timestamp(_ now: TimeSpec = SystemClock.realtime()) -> String {
        let days = Int(now.seconds) / 86_400
        let secondsOfDay = Int(now.seconds) % 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let millis = Int(now.nanoseconds) / 1_000_000
        let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(year)-\(two(month))-\(two(day))T\(two(secondsOfDay / 3600)):\(two(secondsOfDay % 3600 / 60)):\(two(secondsOfDay % 60)).\(ms)Z"
    }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
