#if canImport(Glibc)
import Glibc
import WeaveDI
#endif

/// What a figure's numbers are.
enum Unit: String, Sendable {
    /// Nanoseconds (printed as ns, µs or ms).
    case time
    /// Operations per second.
    case rate
    /// Megabytes (10^6 bytes).
    case megabytes
    /// Events per second.
    case perSecond

    /// `value` for the table; `extra` more decimal digits than usual.
    func format(_ value: Double, extra: Int = 0) -> String {
        guard value.isFinite else { return "—" }
        switch self {
        case .time:
            if value < 1_000 { return "\(fixed(value, (value < 100 ? 1 : 0) + extra)) ns" }
            if value < 1_000_000 { return "\(fixed(value / 1_000, (value < 100_000 ? 2 : 1) + extra)) µs" }
            if value < 1_000_000_000 { return "\(fixed(value / 1_000_000, (value < 100_000_000 ? 2 : 1) + extra)) ms" }
            return "\(fixed(value / 1_000_000_000, 2 + extra)) s"
        case .rate: return value >= 10_000 ? "\(fixed(value / 1_000, 1 + extra))k/s" : "\(fixed(value, extra))/s"
        case .megabytes: return "\(fixed(value, 1 + extra)) MB"
        case .perSecond: return "\(fixed(value, 2 + extra))/s"
        }
    }

    /// `value` with enough digits to tell it from `limit` when they differ (10.02 ns, not
    /// 10.0 ns, beside a target of ≤ 10.0 ns), at most three more than usual.
    func format(_ value: Double, against limit: Double?) -> String {
        guard let limit, value.isFinite, limit.isFinite, value != limit else { return format(value) }
        var extra = 0
        while extra < 3 && format(value, extra: extra) == format(limit, extra: extra) { extra += 1 }
        return format(value, extra: extra)
    }

    /// The unit of raw values in the JSON output.
    var jsonName: String {
        switch self {
        case .time: "ns"
        case .rate: "ops/s"
        case .megabytes: "MB"
        case .perSecond: "1/s"
        }
    }
}

func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "—" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (abs(value) * scale).rounded()
    let whole = Int(rounded / scale)
    var text = (value < 0 && rounded != 0 ? "-" : "") + "\(whole)"
    if digits > 0 {
        var fraction = "\(Int(rounded) - whole * Int(scale))"
        while fraction.count < digits { fraction = "0" + fraction }
        text += "." + fraction
    }
    return text
}

/// What a figure must reach.
enum Target: Sendable {
    case none
    /// median ≤ value
    case atMost(Double)
    /// median < value
    case below(Double)
    /// median ≤ baseline + value
    case baselinePlus(Double)
    /// median ≤ factor × baseline
    case ratioAtMost(Double)
    /// median ≥ factor × baseline
    case ratioAtLeast(Double)

    func describe(_ unit: Unit, baseline: String?) -> String {
        let b = baseline ?? "baseline"
        switch self {
        case .none: return ""
        case let .atMost(v): return "≤ \(unit.format(v))"
        case let .below(v): return "< \(unit.format(v))"
        case let .baselinePlus(v): return "≤ \(b) + \(unit.format(v))"
        case let .ratioAtMost(f): return "≤ \(fixed(f, 1)) × \(b)"
        case let .ratioAtLeast(f): return "≥ \(fixed(f, 1)) × \(b)"
        }
    }
}

enum Verdict: String, Sendable {
    case pass = "PASS"
    case miss = "MISS"
    case info = ""
    case skipped = "n/a"
}

/// One line of the table.
struct Figure: Sendable {
    var group: String
    var name: String
    var unit: Unit
    var stats: Stats
    /// Printed instead of min–max when set (e.g. the p50 beside a p99).
    var spread: String?
    var baselineName: String?
    var baseline: Stats?
    var target: Target = .none
    var note: String?
    /// Set when the figure could not be compared (e.g. no Redis).
    var skipReason: String?
    /// Further distributions behind the figure, by name (e.g. the rounds' p50 and p99
    /// latencies), written to the JSON as numbers.
    var percentiles: [(name: String, stats: Stats)] = []

    var ratio: Double? {
        guard let baseline, baseline.median > 0, stats.median.isFinite else { return nil }
        return stats.median / baseline.median
    }

    var verdict: Verdict {
        if skipReason != nil { return .skipped }
        let m = stats.median
        guard m.isFinite else { return .miss }
        switch target {
        case .none: return .info
        case let .atMost(v): return m <= v ? .pass : .miss
        case let .below(v): return m < v ? .pass : .miss
        case let .baselinePlus(v):
            guard let b = baseline?.median else { return .skipped }
            return m <= b + v ? .pass : .miss
        case let .ratioAtMost(f):
            guard let r = ratio else { return .skipped }
            return r <= f ? .pass : .miss
        case let .ratioAtLeast(f):
            guard let r = ratio else { return .skipped }
            return r >= f ? .pass : .miss
        }
    }

    /// The absolute limit the median is compared with, if the target has one.
    var limit: Double? {
        switch target {
        case let .atMost(v), let .below(v): return v
        case let .baselinePlus(v): return baseline.map { $0.median + v }
        default: return nil
        }
    }

    /// The ratio's factor target, if it has one.
    var ratioLimit: Double? {
        switch target {
        case let .ratioAtMost(f), let .ratioAtLeast(f): return f
        default: return nil
        }
    }

    /// The median, with enough digits to show why it met or missed its limit.
    var medianText: String { unit.format(stats.median, against: limit) }

    /// The ratio, likewise.
    var ratioText: String? {
        guard let ratio else { return nil }
        guard let f = ratioLimit, ratio != f else { return fixed(ratio, 2) }
        var digits = 2
        while digits < 5 && fixed(ratio, digits) == fixed(f, digits) { digits += 1 }
        return fixed(ratio, digits)
    }

    var spreadText: String {
        if let spread { return spread }
        if stats.values.count < 2 { return "" }
        return "\(unit.format(stats.min)) – \(unit.format(stats.max))"
    }
}

/// Collects figures, prints them as they come and as a table at the end, writes JSON.
final class Report {
    private(set) var figures: [Figure] = []
    var notes: [String] = []
    let settings: Settings

    init(settings: Settings) { self.settings = settings }

    func add(_ figure: Figure) {
        figures.append(figure)
        var line = "  \(figure.name): \(figure.medianText)"
        if let baselineName = figure.baselineName, let baseline = figure.baseline {
            line += "  (\(baselineName) \(figure.unit.format(baseline.median))"
            if let ratio = figure.ratioText { line += ", × \(ratio)" }
            line += ")"
        }
        if figure.verdict != .info { line += "  \(figure.verdict.rawValue)" }
        if let reason = figure.skipReason { line += " (\(reason))" }
        print(line)
    }

    /// Adds `figure`, and when it could not be compared, a note saying why (the table shows only "n/a").
    func add(_ figure: Figure, notingSkip: Bool) {
        add(figure)
        if notingSkip, let reason = figure.skipReason { note("\(figure.name): n/a, \(reason)") }
    }

    func note(_ text: String) {
        notes.append(text)
        print("  note: \(text)")
    }

    /// The table, as Markdown (aligned, so that it reads well in a terminal too).
    func table() -> String {
        let header = ["figure", "median", "spread (min – max)", "baseline", "ratio", "target", "result"]
        var rows: [[String]] = []
        for f in figures {
            rows.append([
                f.name,
                f.medianText,
                f.spreadText,
                f.baseline.map { "\(f.baselineName ?? "") \(f.unit.format($0.median))" } ?? "",
                f.ratioText ?? "",
                f.target.describe(f.unit, baseline: f.baselineName),
                f.verdict.rawValue,
            ])
        }
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            "| " + cells.enumerated().map { i, cell in
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                return (i == 0 || i == 2 || i == 3 || i == 5) ? cell + pad : pad + cell
            }.joined(separator: " | ") + " |"
        }
        var out = [line(header)]
        out.append("|" + widths.enumerated().map { i, w in
            (i == 0 || i == 2 || i == 3 || i == 5) ? ":" + String(repeating: "-", count: w + 1) : String(repeating: "-", count: w + 1) + ":"
        }.joined(separator: "|") + "|")
        for row in rows { out.append(line(row)) }
        return out.joined(separator: "\n")
    }

    var summary: String {
        let passed = figures.filter { $0.verdict == .pass }.count
        let missed = figures.filter { $0.verdict == .miss }
        let skipped = figures.filter { $0.verdict == .skipped }.count
        var text = "\(passed) targets met, \(missed.count) missed"
        if skipped > 0 { text += ", \(skipped) not compared" }
        if !missed.isEmpty { text += ": " + missed.map(\.name).joined(separator: "; ") }
        return text
    }

    func json(machine: Machine, run: RunInfo, command: String) -> String {
        func num(_ v: Double) -> String {
            guard v.isFinite else { return "null" }
            if v == v.rounded(), abs(v) < 1e15 { return "\(Int(v))" }
            return "\(v)"
        }
        func stats(_ s: Stats) -> String {
            "{\"median\":\(num(s.median)),\"min\":\(num(s.min)),\"max\":\(num(s.max)),\"samples\":\(s.values.count),"
                + "\"values\":[\(s.values.map(num).joined(separator: ","))]}"
        }
        func optional(_ text: String?) -> String { text.map(jsonString) ?? "null" }
        var items: [String] = []
        for f in figures {
            var fields = [
                "\"group\":\(jsonString(f.group))", "\"name\":\(jsonString(f.name))", "\"unit\":\(jsonString(f.unit.jsonName))",
                "\"value\":\(stats(f.stats))",
            ]
            if let spread = f.spread { fields.append("\"spread\":\(jsonString(spread))") }
            if let b = f.baseline {
                fields.append("\"baseline\":{\"name\":\(jsonString(f.baselineName ?? "")),\"value\":\(stats(b))}")
            }
            if let r = f.ratio { fields.append("\"ratio\":\(num(r))") }
            if !f.percentiles.isEmpty {
                let members = f.percentiles.map { "\(jsonString($0.name)):\(stats($0.stats))" }
                fields.append("\"percentiles\":{\(members.joined(separator: ","))}")
            }
            let target = f.target.describe(f.unit, baseline: f.baselineName)
            if !target.isEmpty { fields.append("\"target\":\(jsonString(target))") }
            fields.append("\"result\":\(jsonString(f.verdict == .info ? "info" : f.verdict.rawValue))")
            if let note = f.note { fields.append("\"note\":\(jsonString(note))") }
            if let reason = f.skipReason { fields.append("\"skipped\":\(jsonString(reason))") }
            items.append("    {" + fields.joined(separator: ",") + "}")
        }
        return """
            {
              "harness": "weavedi-bench",
              "mode": \(jsonString(settings.quick ? "quick" : "full")),
              "command": \(jsonString(command)),
              "started": \(jsonString(run.started)),
              "seconds": \(num(run.seconds)),
              "package": {"root": \(jsonString(run.root)), "gitCommit": \(optional(run.gitCommit)), "gitModified": \(run.gitModified.map { "\($0)" } ?? "null"), "daemon": \(optional(run.daemon))},
              "tools": {"swift": \(optional(run.swiftVersion)), "redis-server": \(optional(run.redisVersion)), "rsync": \(optional(run.rsyncVersion))},
              "machine": {"cpus": \(machine.cpus), "model": \(jsonString(machine.model)), "memoryMB": \(machine.memoryMB), "kernel": \(jsonString(machine.kernel))},
              "notes": [\(notes.map(jsonString).joined(separator: ", "))],
              "figures": [
            \(items.joined(separator: ",\n"))
              ]
            }

            """
    }
}

/// `text` as a JSON string literal (WeaveDI's encoder).
func jsonString(_ text: String) -> String {
    JSONValue.string(text).serialized
}

/// What was run, with what, and when (for the JSON).
struct RunInfo: Sendable {
    var started: String
    var seconds: Double = .nan
    var root: String
    var gitCommit: String?
    var gitModified: Bool?
    var daemon: String?
    var swiftVersion: String?
    var redisVersion: String?
    var rsyncVersion: String?

    /// The first line a command prints, or nil if it fails.
    private static func firstLine(_ path: String, _ arguments: [String]) -> String? {
        let run = System.run(path, arguments)
        guard run.status == 0 else { return nil }
        let line = run.output.split(separator: "\n").first.map(String.init) ?? ""
        return line.isEmpty ? nil : line
    }

    /// Asks git, swift, redis-server and rsync (before anything is measured).
    static func collect(root: String) -> RunInfo {
        var info = RunInfo(started: utcTimestamp(), root: root)
        info.gitCommit = firstLine("git", ["-C", root, "rev-parse", "HEAD"])
        if info.gitCommit != nil {
            let status = System.run("git", ["-C", root, "status", "--porcelain", "--untracked-files=no"])
            if status.status == 0 { info.gitModified = !status.output.isEmpty }
        }
        info.swiftVersion = firstLine("swift", ["--version"])
        if let redis = System.findProgram("redis-server", fallbacks: RedisServer.fallbacks) {
            info.redisVersion = firstLine(redis, ["--version"])
        }
        if let rsync = System.findProgram("rsync", fallbacks: rsyncFallbacks) {
            info.rsyncVersion = firstLine(rsync, ["--version"])
        }
        return info
    }
}

/// Now, in UTC, as ISO 8601 (2026-11-22T15:48:06Z).
func utcTimestamp() -> String {
    var seconds = time(nil)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    var buffer = [CChar](repeating: 0, count: 32)
    let n = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
    return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// What the figures were measured on.
struct Machine: Sendable {
    var cpus: Int
    var model: String
    var memoryMB: Int
    var kernel: String

    static func current() -> Machine {
        var model = "unknown"
        if let info = System.readFile("/proc/cpuinfo"),
            let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
            let colon = line.firstIndex(of: ":")
        {
            model = line[line.index(after: colon)...].trimmingPrefix(" ").description
        }
        let memoryKB = System.statusField("/proc/meminfo", "MemTotal") ?? 0
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return Machine(cpus: System.processorCount, model: model, memoryMB: memoryKB / 1024, kernel: "Linux \(release)")
    }

    var description: String {
        "\(cpus) CPUs (\(model)), \(memoryMB) MiB memory, \(kernel)"
    }
}
