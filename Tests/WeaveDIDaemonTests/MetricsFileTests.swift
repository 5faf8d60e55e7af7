import Foundation
import Testing
import WeaveDI
import WeaveDIControl
@testable import WeaveDIDaemon
import WeaveDIPosix

/// `sync.metricsFile` in a directory shared with other programs (node_exporter's textfile
/// collector reads every `*.prom` file there).
@Suite struct MetricsFileTests {
    /// A directory with a job `docs` run at start, and the metrics file in `textfile/` (not
    /// made); returns it with the configuration's path.
    func configured() throws -> (TemporaryDirectory, config: String) {
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("source/a.txt", "a")
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: false)
        let config = directory.write("weavedid.json", """
            {"sync": {"metricsFile": "\(d)/textfile/weavedi.prom", "jobs": [{"name": "docs", "source": "\(d)/source",
              "destination": "\(d)/mirror", "interval": 3600, "runAtStart": true}]}}
            """)
        return (directory, config)
    }

    /// A temporary file an earlier write left behind (a kill -9 mid-write) is removed before the
    /// daemon's first write, and said; what the daemon cannot prove its own stays: other names,
    /// another file's temporary files, the default temporary name any program may use, a name
    /// whose number is not written as the daemon writes it, a directory.
    @Test func staleTemporaryFilesOfTheDaemon_areRemoved_andNothingElse() throws {
        let (directory, config) = try configured()
        let d = directory.path
        let kept = [".weavedi.prom.weavedid-tmp.0123", ".weavedi.prom.tmp.5", ".other.prom.weavedid-tmp.7", "other.prom", ".weavedi.prom.weavedid-tmp.x"]
        for name in kept + [".weavedi.prom.weavedid-tmp.12345", ".weavedi.prom.weavedid-tmp.4294967295"] {
            directory.write("textfile/\(name)", "# half written\n")
        }
        try FileManager.default.createDirectory(atPath: d + "/textfile/.weavedi.prom.weavedid-tmp.9", withIntermediateDirectories: false)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        #expect(daemon.waitForLog("removed 2 temporary files left by an interrupted write of the metrics file"), "\(daemon.log)")
        #expect(daemon.log.contains("\(d)/textfile/weavedi.prom: removed 2 temporary files left by an interrupted write of the metrics file "
            + "(.weavedi.prom.weavedid-tmp.12345, .weavedi.prom.weavedid-tmp.4294967295)"), "\(daemon.log)")
        let deadline = ContinuousClock.now + .seconds(30)
        while !FileManager.default.fileExists(atPath: d + "/textfile/weavedi.prom"), ContinuousClock.now < deadline { usleep(10_000) }
        #expect(directory.read("textfile/weavedi.prom")?.contains("weavedi_sync") == true, "\(daemon.log)")
        let names = try FileManager.default.contentsOfDirectory(atPath: d + "/textfile").sorted()
        #expect(names == (kept + ["weavedi.prom", ".weavedi.prom.weavedid-tmp.9"]).sorted(), "\(names)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A first write that fails (the directory is not there yet: a disk mounted later) leaves
    /// the cleaning to the next write, which removes what an earlier run of the daemon left.
    @Test func afterAFailedFirstWrite_theNextWriteStillRemovesStaleTemporaryFiles() throws {
        let (directory, config) = try configured()
        let d = directory.path
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        #expect(daemon.waitForLog("cannot write the metrics file"), "\(daemon.log)")
        directory.write("textfile/.weavedi.prom.weavedid-tmp.42", "# half written\n")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))])
        #expect(daemon.waitForLog("removed 1 temporary file left by an interrupted write of the metrics file"), "\(daemon.log)")
        let deadline = ContinuousClock.now + .seconds(30)
        while !FileManager.default.fileExists(atPath: d + "/textfile/weavedi.prom"), ContinuousClock.now < deadline { usleep(10_000) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: d + "/textfile") == ["weavedi.prom"])
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A metrics file that cannot be written (its directory missing) makes the
    /// `sync.metricsFile` check degraded, saying why and what to do; once the directory is
    /// there, the check's fix writes the file, and the check is healthy again.
    @Test func aMetricsFileThatCannotBeWritten_degradesItsCheck_untilTheFixWritesIt() throws {
        let (directory, config) = try configured()
        let d = directory.path
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        #expect(daemon.waitForLog("cannot write the metrics file"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        func check() throws -> JSONValue? { try client.check("sync.metricsFile") }
        var found = try check()
        #expect(found?[member: "status"]?.stringValue == "degraded", "\(found.map { "\($0)" } ?? "no check")")
        #expect(found?[member: "message"]?.stringValue?.hasPrefix(#"cannot write the metrics file "\#(d)/textfile/weavedi.prom": "#) == true)
        #expect(found?[member: "message"]?.stringValue?.hasSuffix(
            "create its directory, or set sync.metricsFile to a place the daemon may write (the check's fix writes it again: "
                + "weavedictl fix sync.metricsFile)") == true)
        try FileManager.default.createDirectory(atPath: d + "/textfile", withIntermediateDirectories: false)
        let fix = try client.call("io.weavedi.Daemon.Fix", [("check", .string("sync.metricsFile"))]).parameter("fixes")?.arrayValue?.first
        #expect(fix?[member: "outcome"]?.stringValue == "succeeded", "\(fix.map { "\($0)" } ?? "no fix")")
        #expect(fix?[member: "message"]?.stringValue == #"wrote "\#(d)/textfile/weavedi.prom""#)
        #expect(directory.read("textfile/weavedi.prom")?.contains("weavedi_sync_runs_total") == true)
        found = try check()
        #expect(found?[member: "status"]?.stringValue == "healthy", "\(found.map { "\($0)" } ?? "no check")")
        // The attempt is counted by its outcome; every outcome has a sample, at 0 until one comes.
        let metrics = try client.call("io.weavedi.Daemon.GetMetrics").parameter("text")?.stringValue ?? ""
        let fixes = metrics.split(separator: "\n").filter { $0.hasPrefix("weavedi_fixes_total{") }
        #expect(fixes == [
            #"weavedi_fixes_total{outcome="succeeded"} 1"#, #"weavedi_fixes_total{outcome="failed"} 0"#,
            #"weavedi_fixes_total{outcome="timedOut"} 0"#, #"weavedi_fixes_total{outcome="refused"} 0"#,
            #"weavedi_fixes_total{outcome="inProgress"} 0"#, #"weavedi_fixes_total{outcome="notApplicable"} 0"#,
        ], "\(metrics)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// `GetHealth`, which runs no check (`weavedictl health`), says how the last write of the
    /// metrics file went as soon as that write ended: degraded once one failed (its directory
    /// missing), by the time the log says so, and healthy once one succeeded again; not at the
    /// health loop's next round (the loop is off here, as in the tests that do not turn it on).
    @Test func theMetricsFileCheck_followsEachWrite_atOnce() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("source/a.txt", "a")
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: false)
        let config = directory.write("weavedid.json", """
            {"sync": {"metricsFile": "\(d)/textfile/weavedi.prom", "jobs": [{"name": "docs",
              "source": "\(d)/source", "destination": "\(d)/mirror", "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        func lastKnown() throws -> JSONValue? {
            try client.call("io.weavedi.Daemon.GetHealth").parameter("health")?[member: "checks"]?.arrayValue?
                .first { $0[member: "name"]?.stringValue == "sync.metricsFile" }
        }
        var check = try lastKnown()
        try #require(check?[member: "status"] == .null, "\(check.map { "\($0)" } ?? "no check")")  // not run yet

        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))])
        try #require(daemon.waitForLog(#"cannot write the metrics file "\#(d)/textfile/weavedi.prom": "#), "\(daemon.log)")
        check = try lastKnown()
        #expect(check?[member: "status"]?.stringValue == "degraded", "\(check.map { "\($0)" } ?? "no check")")
        #expect(check?[member: "message"]?.stringValue?.hasPrefix(#"cannot write the metrics file "\#(d)/textfile/weavedi.prom": "#) == true)

        try FileManager.default.createDirectory(atPath: d + "/textfile", withIntermediateDirectories: false)
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))])
        #expect(daemon.waitForLog(#"notice  health: "sync.metricsFile": degraded -> healthy: the last write succeeded"#), "\(daemon.log)")
        check = try lastKnown()
        #expect(check?[member: "status"]?.stringValue == "healthy", "\(check.map { "\($0)" } ?? "no check")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// The collector reads `*.prom` files: a temporary file, half written, never ends so.
    @Test func temporaryNames_neverEndInProm_andCarryTheTargetAndTheMarker() {
        for number: UInt32 in [0, 7, .max] {
            let name = AtomicFile.temporaryName(for: "weavedi.prom", number: number, marker: SyncScheduler.metricsTemporaryMarker)
            #expect(name == ".weavedi.prom.weavedid-tmp.\(number)")
            #expect(!name.hasSuffix(".prom"))
            #expect(AtomicFile.isTemporaryFile(name, of: "weavedi.prom", marker: SyncScheduler.metricsTemporaryMarker))
            #expect(!AtomicFile.isTemporaryFile(name, of: "weavedi.prom"))
        }
    }
}
