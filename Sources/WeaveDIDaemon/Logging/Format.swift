import WeaveDIPosix

/// Numbers, durations and times as people read them, without Foundation: weavedictl's
/// tables and the lines the daemon's log and weavedictl share (`SyncRunSummary`).
package enum Format {
    /// The largest magnitude that converts to `Int` (2^62, about 4.6e18); a reply's number
    /// beyond it (`1e300`) is shown as `-`, as one that is missing, instead of trapping.
    private static let largestConvertible = 4.6e18

    /// `value` with exactly `digits` decimals (rounded half away from zero); `-` for a value
    /// that is not finite or too large to convert.
    package static func fixed(_ value: Double, digits: Int = 1) -> String {
        guard value.isFinite else { return "-" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        guard abs(value) * scale < largestConvertible else { return "-" }
        let scaled = Int((abs(value) * scale).rounded())
        let sign = value < 0 && scaled != 0 ? "-" : ""
        guard digits > 0 else { return sign + String(scaled) }
        let divisor = Int(scale)
        let fraction = String(scaled % divisor)
        return sign + String(scaled / divisor) + "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }

    /// A duration in seconds: `850 ms`, `4.2 s`, `3m 04s`, `2h 05m`, `3d 04h`; `-` for one
    /// that is negative, not finite or too large to convert.
    package static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < largestConvertible else { return "-" }
        if seconds < 1 { return "\(Int((seconds * 1000).rounded())) ms" }
        if seconds < 60 { return fixed(seconds) + " s" }
        let whole = Int(seconds)
        if whole < 3600 { return "\(whole / 60)m " + twoDigits(whole % 60) + "s" }
        if whole < 86400 { return "\(whole / 3600)h " + twoDigits(whole % 3600 / 60) + "m" }
        return "\(whole / 86400)d " + twoDigits(whole % 86400 / 3600) + "h"
    }

    /// How long ago the Unix time `epoch` was: `12 s ago`, or `never` for nil.
    package static func ago(_ epoch: Double?, now: Double = Format.now()) -> String {
        guard let epoch else { return "never" }
        return duration(max(0, now - epoch)) + " ago"
    }

    /// A byte count: `512 B`, `1.5 KiB`, `3.0 MiB`, `1.2 GiB`.
    package static func bytes(_ count: Int) -> String {
        if count < 1024 { return "\(count) B" }
        var value = Double(count) / 1024
        for unit in ["KiB", "MiB", "GiB", "TiB"] {
            if value < 1024 || unit == "TiB" { return fixed(value) + " " + unit }
            value /= 1024
        }
        return "\(count) B"
    }

    /// The current Unix time in seconds.
    package static func now() -> Double {
        let time = SystemClock.realtime()
        return Double(time.seconds) + Double(time.nanoseconds) / 1e9
    }

    /// A list for a table cell: the items joined by ", ", or `-` when empty.
    package static func list(_ items: [String]) -> String {
        items.isEmpty ? "-" : items.joined(separator: ", ")
    }

    private static func twoDigits(_ value: Int) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }
}
