import WeaveDI
import WeaveDIControl

/// Counters of the control socket, and the Prometheus text exposition of all metrics.
final class ControlMetrics: Sendable {
    private let calls = Locked<[String: Int]>([:])
    private let errors = Locked<[String: Int]>([:])
    let clients: @Sendable () -> Int

    init(clients: @escaping @Sendable () -> Int) {
        self.clients = clients
    }

    /// Counts a call by its method, or as `(unknown)` if the interfaces have no such method:
    /// any client may send any name, and a counter per name would grow for good.
    func count(method: String, error: String?) {
        let method = method == "(malformed)" || DaemonInterface.methodNames.contains(method) ? method : "(unknown)"
        calls.withLock { $0[method, default: 0] += 1 }
        if let error { errors.withLock { $0[error, default: 0] += 1 } }
    }

    /// Every metric, in the Prometheus text exposition format (version 0.0.4).
    func render(methods: DaemonMethods) async -> String {
        var out = PrometheusText()
        let uptime = ContinuousClock.now - methods.started
        out.gauge("weavedi_up", "Whether the daemon is up.", 1)
        out.gauge("weavedi_uptime_seconds", "Seconds since the daemon started.", seconds(uptime))
        let report = methods.registry.report()
        out.gauge("weavedi_health_score", "Health score from 0 to 100.", Double(report.score))
        out.header("weavedi_health_check_status", "1 for the state each health check is in.", type: "gauge")
        for check in report.checks {
            for status in HealthStatus.allCases {
                out.sample("weavedi_health_check_status", [("check", check.name), ("status", status.rawValue)], check.status == status ? 1 : 0)
            }
        }
        out.header(
            "weavedi_health_check_runs_total",
            "Runs of each health check started: once per run, however many callers shared it; a run that timed out counts.",
            type: "counter")
        for check in report.checks {
            out.sample("weavedi_health_check_runs_total", [("check", check.name)], Double(check.runsStarted))
        }
        out.header("weavedi_fixes_total", "Fix attempts recorded in the fix history since the start, by outcome.", type: "counter")
        let recorded = methods.registry.fixesRecorded()
        for outcome in FixRecord.Outcome.allCases {
            out.sample("weavedi_fixes_total", [("outcome", outcome.rawValue)], Double(recorded[outcome] ?? 0))
        }
        out.gauge("weavedi_control_clients", "Connected control clients.", Double(clients()))
        out.gauge("weavedi_sessions_open", "Open WeaveDI sessions.", Double(methods.container.openSessions.count))
        out.gauge("weavedi_registrations", "Registrations in the daemon's container.", Double(methods.container.registrations.count))
        out.header("weavedi_control_calls_total", "Control calls by method.", type: "counter")
        for (method, count) in calls.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            out.sample("weavedi_control_calls_total", [("method", method)], Double(count))
        }
        out.header("weavedi_control_errors_total", "Control calls answered with an error, by error.", type: "counter")
        for (error, count) in errors.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            out.sample("weavedi_control_errors_total", [("error", error)], Double(count))
        }
        return out.text + (await methods.jobs.metrics())
    }
}

/// Builds the Prometheus text format, escaping label values.
struct PrometheusText {
    private(set) var text = ""

    mutating func header(_ name: String, _ help: String, type: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    mutating func gauge(_ name: String, _ help: String, _ value: Double) {
        header(name, help, type: "gauge")
        sample(name, [], value)
    }

    mutating func counter(_ name: String, _ help: String, _ value: Double) {
        header(name, help, type: "counter")
        sample(name, [], value)
    }

    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: Double) {
        let rendered = labels.isEmpty ? "" : "{" + labels.map { "\($0.0)=\"\(PrometheusText.escape($0.1))\"" }.joined(separator: ",") + "}"
        let number = value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        text += "\(name)\(rendered) \(number)\n"
    }

    /// By Unicode scalar: as a `Character`, "\r\n" is one, equal to neither "\r" nor "\n", and
    /// its line feed went out raw (a client could write lines of its own into the text).
    static func escape(_ value: String) -> String {
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
