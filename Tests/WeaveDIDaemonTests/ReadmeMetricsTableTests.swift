import Foundation
import Testing
import WeaveDIPosix

/// The README's table of metrics (under Health and metrics) lists every metric a real daemon
/// exports (`weavedictl metrics`), with its type and labels, and no metric it does not, in the
/// order the daemon exports them, as the README says: a metric added to the code fails this
/// test until the table says what it is.
@Suite struct ReadmeMetricsTableTests {
    struct Metric: Equatable, CustomStringConvertible {
        var type: String
        var labels: Set<String>
        var description: String { "\(type) {\(labels.sorted().joined(separator: ","))}" }
    }

    /// The table whose header is `| Metric | Type | Labels | Meaning |`: each row's name, type
    /// and labels (backquoted, separated by commas; none when empty), and the names in the
    /// table's order.
    static func readmeTable() throws -> (metrics: [String: Metric], order: [String]) {
        let readme = try String(contentsOfFile: SystemdUnitTests.packageRoot + "/README.md", encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        let header = try #require(lines.firstIndex { $0.hasPrefix("| Metric | Type | Labels | Meaning |") }, "no metrics table in README.md")
        var table: [String: Metric] = [:]
        var order: [String] = []
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            try #require(cells.count >= 4, "\(line)")
            let name = cells[0].replacingOccurrences(of: "`", with: "")
            let labels = cells[2].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "") }
            #expect(table[name] == nil, "\(name) is listed twice")
            table[name] = Metric(type: cells[1], labels: Set(labels.filter { !$0.isEmpty }))
            order.append(name)
        }
        return (table, order)
    }

    /// The names of the `# TYPE` lines of Prometheus text, in its order.
    static func exportedOrder(_ text: String) -> [String] {
        text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) }
    }

    /// The metrics in Prometheus text: each `# TYPE` line's name and type, with the label
    /// names of its samples (none for one without samples yet).
    static func exported(_ text: String) -> [String: Metric] {
        var metrics: [String: Metric] = [:]
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                metrics[String(parts[2])] = Metric(type: String(parts[3]), labels: [])
            } else if !line.hasPrefix("#") {
                let name = String(line.prefix { $0 != "{" && $0 != " " })
                guard let open = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}") else { continue }
                // Label names: what stands before each `=` that starts a quoted value.
                let body = line[line.index(after: open)..<close]
                let names = body.components(separatedBy: "\",").compactMap { pair in
                    pair.split(separator: "=", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) }
                }
                metrics[name]?.labels.formUnion(names)
            }
        }
        return metrics
    }

    @Test func theReadmeTable_listsEveryMetricTheDaemonExports() throws {
        let directory = TemporaryDirectory("wd-metrics")
        try FileManager.default.createDirectory(atPath: directory.path + "/source", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(directory.path)/source", "destination": "\(directory.path)/mirror", "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        // A call answered with an error, so that weavedi_control_errors_total has a sample.
        let failed = try CtlRun.run(["--socket", daemon.defaultSocket, "check", "--tag", "nosuchtag"])
        #expect(failed.code != 0, "\(failed.all)")
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "metrics"])
        try #require(run.code == 0, "\(run.all)")
        let exported = Self.exported(run.output)
        let (table, order) = try Self.readmeTable()
        #expect(exported.count > 10, "\(run.output)")
        let missing = Set(exported.keys).subtracting(table.keys).sorted()
        #expect(missing.isEmpty, "exported but not in the README's table: \(missing)")
        let extra = Set(table.keys).subtracting(exported.keys).sorted()
        #expect(extra.isEmpty, "in the README's table but not exported: \(extra)")
        for (name, metric) in exported.sorted(by: { $0.key < $1.key }) {
            guard let listed = table[name] else { continue }
            #expect(listed.type == metric.type, "\(name): README \(listed), exported \(metric)")
            #expect(listed.labels == metric.labels, "\(name): README \(listed), exported \(metric)")
        }
        #expect(Self.exportedOrder(run.output) == order, "exported in this order: \(Self.exportedOrder(run.output))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
