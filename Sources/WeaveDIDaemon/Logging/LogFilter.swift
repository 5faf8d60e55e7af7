import WeaveDI
import WeaveDIControl

/// Which log lines pass, by subsystem: `WEAVEDID_LOG=info,sync=debug,control=trace`.
///
/// The first bare level is the default; `subsystem=level` overrides it for that subsystem and
/// those below it (`sync` covers `sync.worker`); the longest matching prefix wins; `off`
/// silences.
public struct LogFilter: Sendable, Equatable {
    /// The level for subsystems with no override.
    public var defaultLevel: DaemonLogLevel
    /// Overrides by subsystem prefix.
    public var overrides: [String: DaemonLogLevel]

    /// The default filter: `info` everywhere.
    public static let standard = LogFilter(defaultLevel: .info, overrides: [:])

    /// Creates a filter.
    public init(defaultLevel: DaemonLogLevel, overrides: [String: DaemonLogLevel]) {
        self.defaultLevel = defaultLevel
        self.overrides = overrides
    }

    /// At most this many entries: every log line looks through the overrides, so a filter of
    /// thousands (`WEAVEDID_LOG`, or `SetLogLevel` from an administrator) would slow every line.
    public static let maximumEntries = 64

    /// Parses `info,sync=debug,control=trace`; the error says which part is wrong and why.
    public static func parse(_ text: String) -> Result<LogFilter, LogFilterError> {
        var filter = LogFilter.standard
        var sawDefault = false
        let entries = text.utf8.reduce(1) { $1 == UInt8(ascii: ",") ? $0 + 1 : $0 }
        guard entries <= maximumEntries else {
            return .failure(LogFilterError(part: text, problem: "\(entries) entries; at most \(maximumEntries)"))
        }
        for rawPart in text.split(separator: ",", omittingEmptySubsequences: false) {
            let part = rawPart.trimmingCharacters(in: " \t")
            if part.isEmpty { return .failure(LogFilterError(part: String(rawPart), problem: "empty entry")) }
            if let equals = part.firstIndex(of: "=") {
                let subsystem = part[..<equals].trimmingCharacters(in: " \t")
                let levelName = part[part.index(after: equals)...].trimmingCharacters(in: " \t")
                guard !subsystem.isEmpty, subsystem.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-" })
                else { return .failure(LogFilterError(part: part, problem: "a subsystem name is letters, digits, '.', '_' or '-'")) }
                guard let level = DaemonLogLevel(rawValue: levelName.lowercased()) else {
                    return .failure(LogFilterError(part: part, problem: "unknown level \(JSONValue.quotedForMessage(levelName))"))
                }
                guard filter.overrides.updateValue(level, forKey: subsystem) == nil else {
                    return .failure(LogFilterError(part: part, problem: "a second level for \(JSONValue.quotedForMessage(subsystem))"))
                }
            } else {
                guard let level = DaemonLogLevel(rawValue: part.lowercased()) else {
                    return .failure(LogFilterError(part: part, problem: "unknown level \(JSONValue.quotedForMessage(part))"))
                }
                guard !sawDefault else {
                    return .failure(LogFilterError(part: part, problem: "a second default level"))
                }
                sawDefault = true
                filter.defaultLevel = level
            }
        }
        return .success(filter)
    }

    /// The level in effect for `subsystem`.
    public func level(for subsystem: String) -> DaemonLogLevel {
        var best: (length: Int, level: DaemonLogLevel)?
        for (prefix, level) in overrides where subsystem == prefix || subsystem.hasPrefix(prefix + ".") {
            if best == nil || prefix.count > best!.length { best = (prefix.count, level) }
        }
        return best?.level ?? defaultLevel
    }

    /// Whether a line of `level` from `subsystem` passes.
    public func admits(_ level: DaemonLogLevel, subsystem: String) -> Bool {
        let threshold = self.level(for: subsystem)
        return threshold != .off && level >= threshold
    }
}

/// Why a `WEAVEDID_LOG` value was refused.
public struct LogFilterError: Error, Equatable, CustomStringConvertible {
    /// The offending entry.
    public var part: String
    /// What is wrong with it.
    public var problem: String

    /// `"sync=loud": unknown level "loud"`; the entry, and a name in the problem, quoted as
    /// every message quotes text from outside (`JSONValue.quotedForMessage`: escaped, and a
    /// long one shortened with its length).
    public var description: String { "\(JSONValue.quotedForMessage(part)): \(problem)" }
}

extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let c = s.first, set.contains(c) { s.removeFirst() }
        while let c = s.last, set.contains(c) { s.removeLast() }
        return String(s)
    }
}
