import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// The daemon logs the path warnings `--check-config` prints (a missing source, a destination
/// root it cannot write in, …), at its start and at each reload in effect, as it sees its
/// paths: under systemd, only the daemon sees them through the unit's sandbox. The
/// `daemon.configuration` check counts them.
@Suite struct DaemonPathWarningsTests {
    /// A configuration of mirror jobs, each `(name, source, destination)` below `d`.
    static func document(_ d: String, _ jobs: [(String, String, String)]) -> String {
        let listed = jobs.map { #"{"name": "\#($0.0)", "source": "\#(d)/\#($0.1)", "destination": "\#(d)/\#($0.2)", "interval": 3600}"# }
        return #"{"health": {"interval": 3600}, "sync": {"jobs": [\#(listed.joined(separator: ", "))]}}"#
    }

    static func configurationCheck(_ client: VarlinkClient) throws -> String? {
        try client.check("daemon.configuration", [("tags", .array([.string("readiness")]))])?[member: "message"]?.stringValue
    }

    @Test func theStartAndAReload_logThePathWarnings_andHealthCountsThem() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        try FileManager.default.createDirectory(atPath: "\(d)/dst", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", Self.document(d, [("a", "src/none", "dst")]))
        let daemon = try DaemonProcess(["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let fails = "the daemon starts, but each run of the job fails until"
        // The text of --check-config's, after the file, as a warning logged before the start is over.
        let sourceWarning = #"warning config: \#(config): sync.jobs[0].source: the source "\#(d)/src/none" of job "a" does not exist; \#(fails) it does"#
        let log = daemon.log
        let warned = try #require(log.range(of: sourceWarning), "\(log)")
        let ready = try #require(log.range(of: "ready;"))
        #expect(warned.lowerBound < ready.lowerBound)
        let client = try VarlinkClient(path: daemon.defaultSocket)
        #expect(try Self.configurationCheck(client) == "configuration in effect, with 1 path warning (in the log)")

        // A reload in effect logs its own: here the destination root is missing, the source there.
        try FileManager.default.createDirectory(atPath: "\(d)/src/none", withIntermediateDirectories: true)
        directory.write("weavedid.json", Self.document(d, [("a", "src/none", "dst/new")]))
        #expect(try reloadFailure(daemon.defaultSocket) == nil)
        let reloaded = daemon.log.components(separatedBy: "configuration reloaded").dropFirst().joined()
        // Worded for the reload: the daemon is not starting.
        #expect(reloaded.contains(#"warning config: \#(config): sync.jobs[0].destination: the destination "\#(d)/dst/new" of job "a" does not "#
            + "exist; the reload is in effect, but each run of the job fails until it does"), "\(daemon.log)")
        #expect(!reloaded.contains("the daemon starts"), "\(daemon.log)")
        #expect(!reloaded.contains("sync.jobs[0].source"), "\(daemon.log)")

        // Many are capped as --check-config caps them: 10 lines, then one counting the others.
        let jobs = (0..<12).map { ("j\($0)", "src/none\($0)", "dst/j\($0)") }
        for index in 0..<12 { try FileManager.default.createDirectory(atPath: "\(d)/dst/j\(index)", withIntermediateDirectories: true) }
        directory.write("weavedid.json", Self.document(d, jobs))
        #expect(try reloadFailure(daemon.defaultSocket) == nil)
        let many = daemon.log.components(separatedBy: "configuration reloaded").last ?? ""
        #expect(many.components(separatedBy: "warning config: ").count - 1 == 11, "\(daemon.log)")
        #expect(many.contains("warning config: \(config): 2 more path warnings like these, not shown"), "\(daemon.log)")
        #expect(try Self.configurationCheck(client) == "configuration in effect, with 12 path warnings (in the log)")

        // None once all is there: the check says so.
        directory.write("weavedid.json", Self.document(d, [("a", "src/none", "dst")]))
        #expect(try reloadFailure(daemon.defaultSocket) == nil)
        #expect(!(daemon.log.components(separatedBy: "configuration reloaded").last ?? "").contains("warning config:"), "\(daemon.log)")
        #expect(try Self.configurationCheck(client) == "configuration in effect")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
