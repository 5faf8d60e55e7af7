import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Unfinished copies (`.weavedi-tmp.*`) that a run killed with SIGKILL left in a destination
/// directory no later walk visits (its source directory deleted, `delete` off) stayed for ever.
/// The real daemon, started on the state file a killed daemon leaves (its run said going), has
/// the first run after it look through the whole destination for them; until a run has done so,
/// the state file says it is still to do (`cleanupDue`), so a first run that fails (its source
/// not there yet) leaves it to the next.
@Suite struct DaemonLeftoverSweepTests {
    private struct Setup {
        let directory = TemporaryDirectory("weavedi-leftover-sweep")
        var d: String { directory.path }
        var stateFile: String { d + "/state/jobs.json" }
        static let leftovers = ["gone/.weavedi-tmp.a.txt.0123456789ab", "gone/deeper/.weavedi-tmp.b.txt.abcdefghijkl",
                                "gone/.weavedi-tmp.link.cccccccccccc"]
        /// What no run made: an ordinary name, a directory of the reserved shape, a file kept.
        static let kept = ["gone/.weavedi-tmp.notes", "gone/.weavedi-tmp.dir.dddddddddddd/x", "gone/keep.txt"]

        init(sourceThere: Bool = true) throws {
            if sourceThere { directory.write("src/a.txt", "a") }
            directory.write("bk/a.txt", "a")
            for path in Self.leftovers.dropLast() + Self.kept { directory.write("bk/" + path, "torn") }
            try FileManager.default.createSymbolicLink(atPath: d + "/bk/" + Self.leftovers[2], withDestinationPath: d + "/bk/a.txt")
            directory.write("weavedid.json", """
                {"sync": {"jobs": [{"name": "m", "source": "\(d)/src", "destination": "\(d)/bk", "interval": 3600}]}}
                """)
            // What a daemon killed during run m-3 leaves.
            let now = Date().timeIntervalSince1970
            directory.write("state/jobs.json", """
                {"lastRunNumber": 3, "jobs": {"m": {"consecutiveFailures": 0, "firstSeenAt": \(now - 60),
                  "runGoing": {"id": "m-3", "startedAt": \(now - 5)}}}}
                """)
        }

        func start() throws -> DaemonProcess {
            let daemon = try DaemonProcess(
                ["--config", d + "/weavedid.json"], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory)
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            return daemon
        }

        func stop(_ daemon: DaemonProcess) {
            daemon.send(.terminate)
            #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        }

        func exists(_ path: String) -> Bool {
            (try? FileStatus(path: d + "/bk/" + path, followSymlinks: false)) != nil
        }

        func cleanupDue() throws -> JSONValue? {
            let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: stateFile))))
            return saved[member: "jobs"]?[member: "m"]?[member: "cleanupDue"]
        }

        func lastRun(_ daemon: DaemonProcess) throws -> JSONValue? {
            try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?
                .arrayValue?.first?[member: "lastRun"]
        }
    }

    static let removed = "removed 3 unfinished copies (.weavedi-tmp.*) left by an interrupted run"

    @Test func theRunAfterOneThatNeverEnded_removesUnfinishedCopiesWhereTheWalkDoesNotGo() throws {
        let setup = try Setup()
        var found = stat()
        #expect(stat(setup.d + "/bk/gone", &found) == 0)
        let daemon = try setup.start()
        #expect(daemon.waitForLog("m: run m-4 success"), "\(daemon.log)")
        let run = try setup.lastRun(daemon)
        #expect(run?[member: "message"]?.stringValue == Self.removed, "\(String(describing: run))")
        #expect(daemon.log.contains("notice  sync: m: " + Self.removed), "\(daemon.log)")
        for path in Setup.leftovers { #expect(!setup.exists(path), "\(path)") }
        for path in Setup.kept { #expect(setup.exists(path), "\(path)") }
        #expect(setup.exists("a.txt"))  // the link's target is no leftover
        // The directory keeps its mtime: nothing of the source's was changed in it.
        var after = stat()
        #expect(stat(setup.d + "/bk/gone", &after) == 0)
        #expect(after.st_mtim.tv_sec == found.st_mtim.tv_sec && after.st_mtim.tv_nsec == found.st_mtim.tv_nsec)
        setup.stop(daemon)
        #expect(try setup.cleanupDue() == .bool(false))
    }

    /// A first run that fails before its walk (the source not there yet: a disk mounted late)
    /// leaves the look to the next run that gets through.
    @Test func aFirstRunThatFails_leavesTheLookToTheNextRun() throws {
        let setup = try Setup(sourceThere: false)
        var daemon = try setup.start()
        #expect(daemon.waitForLog("m: run m-4 failed"), "\(daemon.log)")
        setup.stop(daemon)
        #expect(try setup.cleanupDue() == .bool(true))
        for path in Setup.leftovers { #expect(setup.exists(path), "\(path)") }

        setup.directory.write("src/a.txt", "a")
        daemon = try setup.start()
        let run = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.RunJob", [("name", .string("m"))]).parameter("run")
        #expect(run?[member: "result"]?.stringValue == "success", "\(String(describing: run))\n\(daemon.log)")
        #expect(run?[member: "message"]?.stringValue == Self.removed, "\(String(describing: run))")
        for path in Setup.leftovers { #expect(!setup.exists(path), "\(path)") }
        setup.stop(daemon)
        #expect(try setup.cleanupDue() == .bool(false))
    }
}
