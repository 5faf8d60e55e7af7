import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Sync jobs in the real daemon: runs by hand with progress, persistence, shutdown during a run,
/// and kill -9 in the middle of a large durable run, ten times over.
@Suite struct DaemonSyncTests {
    struct Fixture {
        let directory = TemporaryDirectory()
        var source: String { directory.path + "/source" }
        var destination: String { directory.path + "/mirror" }

        /// The job `docs`. A `RunJob` without `more` answers when the run ends, within the
        /// daemon's `control.callTimeout`: here 300 s, not the default 10 s, which a large durable
        /// run can take on a slow, busy machine (these tests are about the runs, not that limit).
        func config(durable: Bool = true, runAtStart: Bool = false, extra: String = "") -> String {
            """
            {"control": {"callTimeout": 300},
             "sync": {"jobs": [{"name": "docs", "source": "\(source)", "destination": "\(destination)",
              "interval": 3600, "runAtStart": \(runAtStart), "durable": \(durable), "delete": true\(extra)}]}}
            """
        }

        /// The job `docs` alone (every 3600 s), after `section` (`"health": {…}`), as a
        /// configuration file has it.
        func plainJob(after section: String) -> String {
            #"{\#(section), "sync": {"jobs": [{"name": "docs", "source": "\#(source)", "destination": "\#(destination)", "interval": 3600}]}}"#
        }

        /// Starts the daemon; the destination root exists (runs never create it) unless
        /// `withDestination` is false.
        func start(_ config: String, withDestination: Bool = true) throws -> DaemonProcess {
            if withDestination { try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true) }
            let path = directory.write("weavedid.json", config)
            return try DaemonProcess(["--config", path], directory: directory)
        }
    }

    func runJob(_ daemon: DaemonProcess, more: Bool) throws -> (run: JSONValue?, progress: [JSONValue]) {
        let client = try VarlinkClient(path: daemon.defaultSocket)
        var progress: [JSONValue] = []
        let reply = try client.call(VarlinkCall(method: "io.weavedi.Daemon.RunJob", parameters: [("name", .string("docs"))], more: more)) { reply in
            if reply.continues, let step = reply.parameter("progress") { progress.append(step) }
        }
        return (reply?.parameter("run"), progress)
    }

    func waitForReady(_ daemon: DaemonProcess) throws {
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
    }

    @Test func aRunIntoAnotherJobsTree_throughALinkMadeAfterTheStart_isRefused() throws {
        // b's destination did not exist when the configuration was read; now it is a link to a's.
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("a-source/a.txt", "a")
        directory.write("b-source/b.txt", "b")
        try FileManager.default.createDirectory(atPath: d + "/backup", withIntermediateDirectories: false)
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [
              {"name": "a", "source": "\(d)/a-source", "destination": "\(d)/backup", "delete": true, "interval": 3600},
              {"name": "b", "source": "\(d)/b-source", "destination": "\(d)/later", "delete": true, "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try waitForReady(daemon)
        let client = try VarlinkClient(path: daemon.defaultSocket)
        func run(_ name: String) throws -> JSONValue? {
            try client.call("io.weavedi.Daemon.RunJob", [("name", .string(name))]).parameter("run")
        }
        #expect(try run("a")?[member: "result"]?.stringValue == "success")
        try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: d + "/later", pointingTo: "backup")
        let b = try run("b")
        #expect(b?[member: "result"]?.stringValue == "failed")
        #expect(b?[member: "message"]?.stringValue == "\"\(d)/later\": the destination \"\(d)/backup\" is the destination \"\(d)/backup\" of job \"a\" (real paths; configured as \"\(d)/backup\"): the jobs would overwrite or delete each other's files")
        #expect(directory.read("backup/a.txt") == "a")
        #expect(directory.read("backup/b.txt") == nil)
        // a, for its part, no longer runs into b's tree either.
        let a = try run("a")
        #expect(a?[member: "result"]?.stringValue == "failed")
        #expect(a?[member: "message"]?.stringValue?.hasSuffix("of job \"b\" (real paths; configured as \"\(d)/later\"): the jobs would overwrite or delete each other's files") == true)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// Starts a `delete` job into `box/mirror` with the daemon's `variable` directory (state or
    /// runtime) at `other/mirror/name`, clear of it; runs it once; swaps `box` for a link to
    /// `other`, so that the destination now holds that directory; runs it again. Returns that
    /// run, the daemon and the directory's path.
    func runIntoTheDaemonsDirectory(
        _ variable: String, _ name: String
    ) throws -> (run: JSONValue?, daemon: DaemonProcess, directory: TemporaryDirectory, held: String) {
        let directory = TemporaryDirectory()
        let d = directory.path
        try directory.makeBoxAndOther()
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [
              {"name": "docs", "source": "\(d)/source", "destination": "\(d)/box/mirror", "delete": true, "interval": 3600}]}}
            """)
        let held = d + "/other/mirror/" + name
        let daemon = try DaemonProcess(["--config", config], environment: [variable: held], directory: directory)
        try waitForReady(daemon)
        let socket = variable == "RUNTIME_DIRECTORY" ? held + "/control.sock" : daemon.defaultSocket
        let client = try VarlinkClient(path: socket)
        func run() throws -> JSONValue? {
            try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
        }
        #expect(try run()?[member: "result"]?.stringValue == "success")
        #expect(directory.read("box/mirror/a.txt") == "a")
        try directory.turnBoxIntoALinkToOther()
        return (try run(), daemon, directory, held)
    }

    @Test func aRunIntoTheStateDirectory_throughALinkMadeAfterTheStart_isRefused() throws {
        let (run, daemon, directory, state) = try runIntoTheDaemonsDirectory("STATE_DIRECTORY", "state")
        let d = directory.path
        #expect(run?[member: "result"]?.stringValue == "failed")
        #expect(run?[member: "message"]?.stringValue == "\"\(d)/box/mirror\": the destination \"\(d)/box/mirror\" of job \"docs\" "
            + "contains the state directory \"\(state)\" through symbolic links (\"\(d)/box/mirror\" resolves to "
            + "\"\(d)/other/mirror\", \"\(state)\" to \"\(state)\"); the job would overwrite or delete the daemon's lock (weavedid.lock) and the jobs' state "
            + "file (jobs.json) there")
        // Nothing was copied there, and the daemon's files are where they were.
        #expect(directory.read("other/mirror/a.txt") == nil)
        #expect(FileManager.default.fileExists(atPath: state + "/weavedid.lock"))
        #expect(directory.read("other/mirror/state/jobs.json", once: "\"docs\"") != nil)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aRunOverTheControlSocket_throughALinkMadeAfterTheStart_isRefused() throws {
        let (run, daemon, directory, runtime) = try runIntoTheDaemonsDirectory("RUNTIME_DIRECTORY", "run")
        let d = directory.path
        let socket = runtime + "/control.sock"
        #expect(run?[member: "result"]?.stringValue == "failed")
        #expect(run?[member: "message"]?.stringValue == "\"\(d)/box/mirror\": the destination \"\(d)/box/mirror\" of job \"docs\" "
            + "contains the control socket \"\(socket)\" through symbolic links (\"\(d)/box/mirror\" resolves to "
            + "\"\(d)/other/mirror\", \"\(socket)\" to \"\(socket)\")")
        // Nothing was copied there, and the socket still answers.
        #expect(directory.read("other/mirror/a.txt") == nil)
        let client = try VarlinkClient(path: socket)
        #expect(try client.call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func onewayRunJobWithMore_getsNoReplyAtAll() throws {
        // Progress replies to a oneway call would be taken for the answers of later calls.
        let fixture = Fixture()
        try TreeFixture.make(at: fixture.source, count: 300)
        let daemon = try fixture.start(fixture.config())
        try waitForReady(daemon)
        let client = try RawClient(daemon.defaultSocket)
        try client.send(call("io.weavedi.Daemon.RunJob", #"{"name":"docs"}"#, extra: #","oneway":true,"more":true"#))
        let ran = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < ran {
            if (try? TreeFixture.snapshot(fixture.destination)) == (try? TreeFixture.snapshot(fixture.source)) { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        try client.send(call("io.weavedi.Daemon.Ping"))
        let reply = client.reply() ?? ""
        #expect(reply.contains(#""version":"#), "the first reply was not Ping's: \(reply)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func runJobWithMore_streamsProgress_thenMirrorsExactly() throws {
        let fixture = Fixture()
        try TreeFixture.make(at: fixture.source, count: 300)
        let daemon = try fixture.start(fixture.config())
        try waitForReady(daemon)
        let (run, progress) = try runJob(daemon, more: true)
        #expect(run?[member: "result"]?.stringValue == "success")
        #expect(run?[member: "filesCopied"]?.intValue == 301)  // 300 files and the link
        // Each progress reply supersedes the one before: the counts only grow, and the files
        // done never pass the total. The run's last, complete, is not always seen: the final
        // reply supersedes a progress reply not written yet (`ControlConnection.finish`), as
        // when the test reads slower than the run goes, on a busy machine.
        let counts = progress.filter { !$0.isNull }.map {
            ($0[member: "filesDone"]?.intValue ?? -1, $0[member: "filesTotal"]?.intValue ?? -1)
        }
        #expect(!counts.isEmpty)
        #expect(counts.allSatisfy { $0.0 >= 0 && $0.0 <= $0.1 }, "\(counts)")
        #expect(zip(counts, counts.dropFirst()).allSatisfy { $0.0 <= $1.0 && $0.1 <= $1.1 }, "\(counts)")
        #expect(try TreeFixture.snapshot(fixture.destination) == TreeFixture.snapshot(fixture.source))
        // Changed, deleted and renamed files: the next run follows.
        try "changed".write(toFile: fixture.source + "/d1/e1/f1.dat", atomically: false, encoding: .utf8)
        try FileManager.default.removeItem(atPath: fixture.source + "/d2/e2/f2.dat")
        try FileManager.default.moveItem(atPath: fixture.source + "/d3/e3/f3.dat", toPath: fixture.source + "/d3/e3/renamed.dat")
        let (second, _) = try runJob(daemon, more: false)
        #expect(second?[member: "result"]?.stringValue == "success")
        #expect(second?[member: "filesUpdated"]?.intValue == 1 && second?[member: "filesCopied"]?.intValue == 1)
        #expect(second?[member: "filesDeleted"]?.intValue == 2)
        #expect(try TreeFixture.snapshot(fixture.destination) == TreeFixture.snapshot(fixture.source))
        let metrics = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.GetMetrics").parameter("text")?.stringValue ?? ""
        #expect(metrics.contains(#"weavedi_sync_runs_total{job="docs",result="success"} 2"#))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aDamagedStateFile_isReported_andReplacedAfterTheNextRun() throws {
        let fixture = Fixture()
        try TreeFixture.make(at: fixture.source, count: 3)
        let state = fixture.directory.path + "/state"
        fixture.directory.write("state/jobs.json", #"{"jobs": {"docs": "#)
        let daemon = try fixture.start(#"{"stateDirectory": "\#(state)", "# + fixture.config().dropFirst())
        try waitForReady(daemon)
        #expect(daemon.log.contains("warning sync: \(state)/jobs.json: ") && daemon.log.contains("; starting without the jobs' previous results"), "\(daemon.log)")
        #expect(try runJob(daemon, more: false).run?[member: "result"]?.stringValue == "success")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        // Written by the run's end, or at the latest by the shutdown, which waits for it.
        let saved = fixture.directory.read("state/jobs.json") ?? ""
        #expect(saved.contains(#""result":"success""#), "\(saved)")
    }

    @Test func aStateFileThatCannotBeRead_orWritten_isReported_andTheDaemonGoesOn() throws {
        let fixture = Fixture()
        try TreeFixture.make(at: fixture.source, count: 3)
        let state = fixture.directory.path + "/state"
        try FileManager.default.createDirectory(atPath: state + "/jobs.json", withIntermediateDirectories: true)
        let daemon = try fixture.start(#"{"stateDirectory": "\#(state)", "# + fixture.config().dropFirst())
        try waitForReady(daemon)
        #expect(daemon.log.contains("warning sync: \(state)/jobs.json: Is a directory (EISDIR)"), "\(daemon.log)")
        #expect(daemon.log.contains("; starting without the jobs' previous results"), "\(daemon.log)")
        #expect(try runJob(daemon, more: false).run?[member: "result"]?.stringValue == "success")
        #expect(daemon.waitForLog(#"error   sync: cannot write the jobs' state file "\#(state)/jobs.json": Is a directory (EISDIR)"#), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func metricsFile_isWrittenAfterEachRun() throws {
        let fixture = Fixture()
        try TreeFixture.make(at: fixture.source, count: 10)
        let prom = fixture.directory.path + "/textfile/weavedi.prom"
        try FileManager.default.createDirectory(atPath: fixture.directory.path + "/textfile", withIntermediateDirectories: true)
        let daemon = try fixture.start(#"{"sync": {"metricsFile": "\#(prom)", "jobs": [{"name": "docs", "source": "\#(fixture.source)", "destination": "\#(fixture.destination)", "interval": 3600}]}}"#)
        try waitForReady(daemon)
        #expect(try runJob(daemon, more: false).run?[member: "result"]?.stringValue == "success")
        var text = ""
        let deadline = ContinuousClock.now + .seconds(30)
        while !text.contains(#"weavedi_sync_runs_total{job="docs",result="success"} 1"#), ContinuousClock.now < deadline {
            text = (try? String(contentsOfFile: prom, encoding: .utf8)) ?? ""
            usleep(10_000)
        }
        #expect(text.contains("# TYPE weavedi_sync_runs_total counter"))
        #expect(text.contains(#"weavedi_sync_runs_total{job="docs",result="success"} 1"#))
        #expect(text.contains(#"weavedi_sync_files_copied_total{job="docs"} 11"#))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path + "/textfile").filter { $0 != "weavedi.prom" }
        #expect(leftovers.isEmpty)  // written to a temporary name, then renamed
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// The job's check is run as each run ends: `GetHealth` right after `RunJob` returned says
    /// how that run went, not what the check saw before it (the health loop is off here, as a
    /// loop of 30 s is for a while after a run at start).
    @Test func aJobsHealth_saysHowItsLastRunWent_assoonAsTheRunEnds() throws {
        let fixture = Fixture()
        try TreeFixture.make(at: fixture.source, count: 3)
        let daemon = try fixture.start(fixture.config())
        try waitForReady(daemon)
        let client = try VarlinkClient(path: daemon.defaultSocket)
        func jobCheck() throws -> JSONValue? {
            let checks = try client.call("io.weavedi.Daemon.GetHealth").parameter("health")?[member: "checks"]?.arrayValue ?? []
            return checks.first { $0[member: "name"]?.stringValue == "job.docs" }
        }
        #expect(try runJob(daemon, more: false).run?[member: "result"]?.stringValue == "success")
        var check = try jobCheck()
        #expect(check?[member: "status"]?.stringValue == "healthy", "\(check.map { "\($0)" } ?? "no check")")
        #expect(check?[member: "message"]?.stringValue == "last run success")
        try FileManager.default.removeItem(atPath: fixture.destination)
        #expect(try runJob(daemon, more: false).run?[member: "result"]?.stringValue == "failed")
        check = try jobCheck()
        #expect(check?[member: "status"]?.stringValue == "degraded", "\(check.map { "\($0)" } ?? "no check")")
        #expect(check?[member: "message"]?.stringValue?.hasPrefix("last run failed: ") == true)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func missingDestinationRoot_failsTheRun_andTheJobsFixRecreatesIt() throws {
        let fixture = Fixture()
        try TreeFixture.make(at: fixture.source, count: 5)
        let daemon = try fixture.start(fixture.config(), withDestination: false)
        try waitForReady(daemon)
        let failed = try runJob(daemon, more: false).run
        #expect(failed?[member: "result"]?.stringValue == "failed")
        #expect(failed?[member: "message"]?.stringValue?.contains("the destination does not exist") == true)
        #expect(failed?[member: "message"]?.stringValue?.hasSuffix(
            "mount its file system or create it, or have the job's fix create it: weavedictl fix job.docs") == true,
            "\(failed.map { "\($0)" } ?? "no run")")
        #expect(!fileExists(fixture.destination))
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let fix = try client.call("io.weavedi.Daemon.Fix", [("check", .string("job.docs"))]).parameter("fixes")?.arrayValue?.first
        #expect(fix?[member: "outcome"]?.stringValue == "succeeded")
        #expect(fix?[member: "message"]?.stringValue?.hasPrefix("created the destination root \"\(fixture.destination)\"; ") == true,
                "\(fix.map { "\($0)" } ?? "no fix")")  // it did not exist: created, not "recreated"
        // The fix waits a while for the run it starts, so the check run again after it judges
        // the run: it succeeded, and the fix healed the job.
        #expect(fix?[member: "message"]?.stringValue?.hasSuffix("reset the backoff; run docs-2 succeeded") == true, "\(fix.map { "\($0)" } ?? "no fix")")
        let health = try client.call("io.weavedi.Daemon.GetHealth").parameter("health")?[member: "checks"]?.arrayValue ?? []
        #expect(health.first { $0[member: "name"]?.stringValue == "job.docs" }?[member: "status"]?.stringValue == "healthy")
        var done = false
        let deadline = ContinuousClock.now + .seconds(30)
        while !done, ContinuousClock.now < deadline {  // the fix started a run
            done = (try? TreeFixture.snapshot(fixture.destination)) == (try? TreeFixture.snapshot(fixture.source))
            if !done { usleep(10_000) }
        }
        #expect(done)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// The fix makes the destination root along its path without following a link: one
    /// planted where a missing parent would be is refused, and nothing is made where it leads.
    @Test func theJobsFix_refusesALinkOnTheWayToAMissingDestination_andMakesItsMissingParents() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("source/a.txt", "a")
        try FileManager.default.createDirectory(atPath: d + "/elsewhere", withIntermediateDirectories: false)
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(d)/source", "destination": "\(d)/disk/docs", "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try waitForReady(daemon)
        try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: d + "/disk", pointingTo: d + "/elsewhere")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let refused = try client.call("io.weavedi.Daemon.Fix", [("check", .string("job.docs"))]).parameter("fixes")?.arrayValue?.first
        #expect(refused?[member: "outcome"]?.stringValue == "failed", "\(String(describing: refused))")
        #expect(refused?[member: "error"]?.stringValue?.contains(
            "\"\(d)/disk/docs\": the destination root cannot be created: \"\(d)/disk\" is a symbolic link, which the fix does not "
                + "follow (nothing was created through it): create the destination by hand, or configure it by its real path")
            == true, "\(String(describing: refused))")
        #expect(!fileExists(d + "/elsewhere/docs"))
        // Without the link, the fix makes both missing directories.
        try FileManager.default.removeItem(atPath: d + "/disk")
        let fixed = try client.call("io.weavedi.Daemon.Fix", [("check", .string("job.docs"))]).parameter("fixes")?.arrayValue?.first
        #expect(fixed?[member: "outcome"]?.stringValue == "succeeded", "\(String(describing: fixed))")
        #expect((try? FileStatus(path: d + "/disk/docs", followSymlinks: false))?.kind == .directory)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func runChecks_onlyLooks_itStartsNoFix() throws {
        let fixture = Fixture()
        try TreeFixture.make(at: fixture.source, count: 2)
        let daemon = try fixture.start(fixture.config(), withDestination: false)
        try waitForReady(daemon)
        #expect(try runJob(daemon, more: false).run?[member: "result"]?.stringValue == "failed")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let checks = try client.call("io.weavedi.Daemon.RunChecks", []).parameter("health")?[member: "checks"]?.arrayValue ?? []
        #expect(checks.first { $0[member: "name"]?.stringValue == "job.docs" }?[member: "status"]?.stringValue == "degraded")
        #expect(try client.call("io.weavedi.Daemon.ListFixes", []).parameter("fixes")?.arrayValue?.isEmpty == true)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A missing destination root is most often a disk not mounted: auto-fix does not create
    /// it, and, as only a person can help, has nothing to do, silently (no record, the breaker
    /// closed), the check saying why. By hand, the fix creates it.
    /// The daemon on `fixture` with its job `docs` (interval 3600 s), health rounds every 0.1 s
    /// with auto-fix, once the job's first run (by hand) failed; the job's check as `GetHealth`
    /// gives it; its `fixHeldBack` once auto-fix has asked the fix (nil if not within 30 s).
    func autoFixingAFailedJob(_ fixture: Fixture) throws
        -> (daemon: DaemonProcess, client: VarlinkClient, check: () throws -> JSONValue?, heldBack: String?)
    {
        let config = fixture.plainJob(after: #""health": {"interval": 0.1}"#)
        let daemon = try DaemonProcess(
            ["--config", fixture.directory.write("weavedid.json", config)],
            environment: ["WEAVEDI_REGISTRY_AUTO_HEALTH": "1", "WEAVEDI_REGISTRY_AUTO_FIX": "1"], directory: fixture.directory)
        try waitForReady(daemon)
        #expect(try runJob(daemon, more: false).run?[member: "result"]?.stringValue == "failed")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        func check() throws -> JSONValue? { try client.check("job.docs", method: "GetHealth") }
        var heldBack: String?
        for _ in 0..<3000 where heldBack == nil {
            heldBack = try check()?[member: "fixHeldBack"]?.stringValue
            if heldBack == nil { usleep(10_000) }
        }
        return (daemon, client, check, heldBack)
    }

    /// How many distinct health rounds ran `check` (by its `lastRun`), waiting for `count` of
    /// them (60 s at most).
    func rounds(_ count: Int, of check: () throws -> JSONValue?) throws -> Int {
        var rounds = Set<Double>()
        for _ in 0..<6000 where rounds.count < count {
            if let lastRun = try check()?[member: "lastRun"]?.numberValue { rounds.insert(lastRun) }
            usleep(10_000)
        }
        return rounds.count
    }

    @Test func missingDestinationRoot_isNotRecreatedByAnAutomaticFix() throws {
        let fixture = Fixture()
        try TreeFixture.make(at: fixture.source, count: 2)
        let (daemon, client, check, heldBack) = try autoFixingAFailedJob(fixture)
        #expect(heldBack == "its fix has nothing to do: \"\(fixture.destination)\": the destination root does not exist; an automatic "
            + "fix does not create it (a disk not mounted must not be filled underneath): mount its file system, or create it "
            + "with `weavedictl fix job.docs`", "\(String(describing: heldBack))\n\(daemon.log)")
        _ = try rounds(10, of: check)
        #expect(try client.call("io.weavedi.Daemon.ListFixes", []).parameter("fixes")?.arrayValue?.isEmpty == true)
        #expect(!daemon.log.contains("fix of"), "\(daemon.log)")
        #expect(try check()?[member: "breaker"]?.stringValue == "closed")
        #expect(!fileExists(fixture.destination))
        // Rounds go on every 0.1 s: one may be running its automatic attempt as the fix by hand
        // comes, which then waits for it to end (it heals nothing) and runs.
        let byHand = try client.call("io.weavedi.Daemon.Fix", [("check", .string("job.docs"))]).parameter("fixes")?.arrayValue?.first
        #expect(byHand?[member: "outcome"]?.stringValue == "succeeded", "\(byHand.map { "\($0)" } ?? "no fix")")
        #expect(fileExists(fixture.destination))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// Auto-fix of a job whose run failed (the source missing), with a health round every
    /// 0.1 s, starts no run: the job's schedule (interval 3600 s, its backoff) does, and the
    /// fix has nothing to do, round after round, without a record or a line in the log; the
    /// check says why. By hand, the fix runs the job now, and says that run failed: the fix
    /// failed (exit 1), not succeeded.
    @Test func autoFix_ofAFailedJob_startsNoRun_andSaysNothing_butAFixByHandRunsIt() throws {
        let fixture = Fixture()
        try FileManager.default.createDirectory(atPath: fixture.destination, withIntermediateDirectories: true)
        // Until auto-fix has asked the fix (which found nothing to do), then twenty rounds more,
        // each of which runs the check again: the daemon's own rounds, however slow the machine.
        let (daemon, client, check, heldBack) = try autoFixingAFailedJob(fixture)
        #expect(heldBack?.hasPrefix("its fix has nothing to do: no run stuck, nothing to prepare") == true,
            "\(String(describing: heldBack))\n\(daemon.log)")
        #expect(try rounds(20, of: check) == 20)
        let jobs = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue ?? []
        #expect(jobs.first?[member: "lastRun"]?[member: "id"]?.stringValue == "docs-1", "\(jobs)\n\(daemon.log)")
        #expect(try client.call("io.weavedi.Daemon.ListFixes", []).parameter("fixes")?.arrayValue?.isEmpty == true)
        #expect(!daemon.log.contains("fix of"), "\(daemon.log)")
        #expect(try check()?[member: "breaker"]?.stringValue == "closed")

        let byHand = try CtlRun.run(["--socket", daemon.defaultSocket, "fix", "job.docs"])
        #expect(byHand.code == 1, "\(byHand.all)")
        #expect(byHand.output.contains(" manual   failed "), "\(byHand.all)")
        #expect(byHand.output.contains("reset the backoff; run docs-2 failed: "), "\(byHand.all)")
        #expect(daemon.waitForLog(#"health: fix of "job.docs" (manual) failed: reset the backoff; run docs-2 failed: "#), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A fix by hand of a failed job starts a run that lasts: the fix is `inProgress` (the
    /// check still fails until the run ends), and the rounds after it, every 0.5 s, leave the
    /// run alone: no automatic attempt, no failure counted, the breaker closed, and
    /// `weavedictl health` says the fix is in progress.
    @Test func aFixByHand_duringOneLongRun_isInProgress_andAutoFixLeavesItAlone() throws {
        let fixture = Fixture()
        let gate = try CopyGate.build(in: fixture.directory)
        defer { gate.release("slow-big.bin") }
        func config(healthInterval: Double) -> String { fixture.plainJob(after: #""health": {"interval": \#(healthInterval)}"#) }
        // No rounds but the first until the source is there: the first run fails without it.
        try FileManager.default.createDirectory(atPath: fixture.destination, withIntermediateDirectories: true)
        let daemon = try DaemonProcess(
            ["--config", fixture.directory.write("weavedid.json", config(healthInterval: 3600))],
            environment: gate.environment.merging(["WEAVEDI_REGISTRY_AUTO_HEALTH": "1"]) { $1 }, directory: fixture.directory)
        try waitForReady(daemon)
        #expect(try runJob(daemon, more: false).run?[member: "result"]?.stringValue == "failed")
        // The run the fix starts is held (`CopyGate`) in this file's copy until the end: sparse,
        // 128 MiB, so 133 s held before the run's walk watch fails it, longer than the rounds take.
        let big = fixture.directory.write("source/slow-big.bin", "")
        try #require(truncate(big, off_t(128 << 20)) == 0, "truncate: \(Errno.current)")
        // By hand while no round runs (one running an automatic attempt would refuse it).
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let fixes = try client.call("io.weavedi.Daemon.Fix", [("check", .string("job.docs"))]).parameter("fixes")?.arrayValue ?? []
        let first = fixes.first
        #expect(first?[member: "outcome"]?.stringValue == "inProgress", "\(String(describing: first))\n\(daemon.log)")
        #expect(first?[member: "message"]?.stringValue?.contains("reset the backoff; started run docs-2, still going after ") == true,
            "\(String(describing: first))")
        fixture.directory.write("weavedid.json", config(healthInterval: 0.5))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        // Some ten rounds, each a new `lastRun` of the check: three fixes counted as failed
        // would have opened the breaker.
        func lastRun() throws -> Double? { try client.check("job.docs", method: "GetHealth")?[member: "lastRun"]?.numberValue }
        var rounds: Set<Double> = []
        if let now = try lastRun() { rounds.insert(now) }
        let roundsDeadline = ContinuousClock.now + .seconds(120)
        while rounds.count < 11, ContinuousClock.now < roundsDeadline {
            usleep(50_000)
            if let now = try lastRun() { rounds.insert(now) }
        }
        try #require(rounds.count >= 11, "the health rounds did not go on: \(rounds.count - 1) rounds\n\(daemon.log)")
        let jobs = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue ?? []
        try #require(jobs.first?[member: "running"] == .bool(true), "the run ended: the test proves nothing\n\(daemon.log)")
        let all = try client.call("io.weavedi.Daemon.ListFixes", []).parameter("fixes")?.arrayValue ?? []
        #expect(all.count == 1 && all.first?[member: "trigger"]?.stringValue == "manual", "\(all)")
        let check = try #require(try client.check("job.docs", method: "GetHealth"))
        #expect(check[member: "breaker"]?.stringValue == "closed", "\(check)")
        #expect(check[member: "fixInProgress"]?.stringValue?.contains("started run docs-2") == true, "\(check)")
        #expect(check[member: "fixHeldBack"]?.stringValue?.contains("auto-fix waits for it to end") == true, "\(check)")
        let health = try CtlRun.run(["--socket", daemon.defaultSocket, "health"])
        #expect(health.output.split(separator: "\n").contains { $0.hasPrefix("job.docs ") && $0.contains(" in progress ") },
            "\(health.all)")
        daemon.send(.terminate)
        gate.release("slow-big.bin")
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// `hold` for `PreloadLibrary.holdingFstatat`: the look at the path `WEAVEDI_TEST_WATCHED`
    /// names, while the file `armed` is in the directory `WEAVEDI_TEST_HOLD` names, creates
    /// `held` there, then waits (60 s at most) until `armed` is gone.
    static let holdingTheLookWhileArmed = #"""
        static void hold(const char *path) {
          const char *watched = getenv("WEAVEDI_TEST_WATCHED"), *directory = getenv("WEAVEDI_TEST_HOLD");
          if (!watched || !directory || strcmp(path, watched) != 0) return;
          char armed[4096], held[4096];
          snprintf(armed, sizeof armed, "%s/armed", directory);
          snprintf(held, sizeof held, "%s/held", directory);
          if (access(armed, F_OK) != 0) return;
          int fd = open(held, O_WRONLY | O_CREAT, 0600);
          if (fd >= 0) close(fd);
          struct timespec pause = {0, 10000000};
          for (int i = 0; i < 6000 && access(armed, F_OK) == 0; i++) nanosleep(&pause, NULL);
        }
        """#

    /// A `Fix` call of a check whose fix by hand is running waits for that fix; cut at
    /// `control.callTimeout` (1 s) meanwhile, the call is answered `CallTimedOut`, and its fix
    /// is neither recorded nor run: not when the fix it waited for ends without healing the
    /// check (here it failed, the job's source missing), which would have run it had its caller
    /// stayed. The running fix, the first call's, is held in its look at the job's destination
    /// (`prepareForRetry`) until the second call was answered; it ends as any, its call cut too.
    /// A fix by hand after it runs the job's next run, docs-2: none started in between. The
    /// library's tests cancel the caller's task themselves; this is the daemon's own path, the
    /// timeout of its varlink call.
    @Test func aFixCallCutWhileItWaitsForARunningFixOfItsCheck_recordsNothing_andRunsNothing() throws {
        let fixture = Fixture()
        let holds = fixture.directory.path + "/holds"
        try FileManager.default.createDirectory(atPath: holds, withIntermediateDirectories: true)
        let shim = try PreloadLibrary.holdingFstatat(Self.holdingTheLookWhileArmed, in: fixture.directory)
        defer { unlink(holds + "/armed") }
        func config(callTimeout: Double) -> String { fixture.plainJob(after: #""control": {"callTimeout": \#(callTimeout)}"#) }
        // No source: the runs fail, and so does the job's fix that runs one.
        try FileManager.default.createDirectory(atPath: fixture.destination, withIntermediateDirectories: true)
        let daemon = try DaemonProcess(
            ["--config", fixture.directory.write("weavedid.json", config(callTimeout: 1))],
            environment: ["LD_PRELOAD": shim, "WEAVEDI_TEST_HOLD": holds, "WEAVEDI_TEST_WATCHED": fixture.destination],
            directory: fixture.directory)
        try waitForReady(daemon)
        fixture.directory.write("holds/armed", "")
        let first = try daemon.sendCall("Fix", #"{"check":"job.docs"}"#)
        let deadline = ContinuousClock.now + .seconds(30)
        while access(holds + "/held", F_OK) != 0, ContinuousClock.now < deadline { usleep(10_000) }
        try #require(access(holds + "/held", F_OK) == 0, "the fix was not held\n\(daemon.log)")
        // The first call's fix is running, held: this one waits for it, until its time is up.
        let second = try daemon.sendCall("Fix", #"{"check":"job.docs"}"#)
        let timedOut = #"{"error":"io.weavedi.Daemon.CallTimedOut","parameters":{"method":"io.weavedi.Daemon.Fix","seconds":1.0}}"#
        #expect(second.reply() == timedOut, "\(daemon.log)")
        #expect(first.reply() == timedOut, "\(daemon.log)")
        unlink(holds + "/armed")
        // The first call's fix goes on to its end: the run it starts fails.
        try #require(daemon.waitForLog(#"health: fix of "job.docs" (manual) failed"#), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let fixes = try client.call("io.weavedi.Daemon.ListFixes", []).parameter("fixes")?.arrayValue ?? []
        #expect(fixes.count == 1 && fixes.first?[member: "message"]?.stringValue?.contains("run docs-1 failed") == true, "\(fixes)")
        // A fix by hand now, its call given time (a reload): the job's next run is its.
        fixture.directory.write("weavedid.json", config(callTimeout: 300))
        try #require(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let next = try client.call("io.weavedi.Daemon.Fix", [("check", .string("job.docs"))]).parameter("fixes")?.arrayValue?.first
        #expect(next?[member: "message"]?.stringValue?.hasPrefix("reset the backoff; run docs-2 failed: ") == true,
            "\(next.map { "\($0)" } ?? "no fix")")
        let all = try client.call("io.weavedi.Daemon.ListFixes", []).parameter("fixes")?.arrayValue ?? []
        #expect(all.count == 2 && all.allSatisfy { $0[member: "trigger"]?.stringValue == "manual" }, "\(all)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(daemon.log.components(separatedBy: #"fix of "job.docs" (manual)"#).count == 3, "\(daemon.log)")
    }

    @Test func lastResult_survivesARestart_andHealthKnowsIt() throws {
        let fixture = Fixture()
        let daemon = try fixture.start(fixture.config(extra: #", "failureThreshold": 1"#))  // no source yet
        try waitForReady(daemon)
        #expect(try runJob(daemon, more: false).run?[member: "result"]?.stringValue == "failed")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        let saved = try String(contentsOfFile: fixture.directory.path + "/state/jobs.json", encoding: .utf8)
        #expect(saved.contains(#""result":"failed""#))
        let again = try fixture.start(fixture.config(extra: #", "failureThreshold": 1"#))
        try waitForReady(again)
        let health = try VarlinkClient(path: again.defaultSocket).call("io.weavedi.Daemon.RunChecks", [("tags", .array([.string("sync")]))])
        let job = health.parameter("health")?[member: "checks"]?.arrayValue?.first
        #expect(job?[member: "name"]?.stringValue == "job.docs")
        #expect(job?[member: "status"]?.stringValue == "unhealthy")
        again.send(.terminate)
        #expect(again.wait() == .exited(0))
    }

    /// SIGTERM cancels a run under way: it stops at a safe point (between files), is recorded
    /// as cancelled, and the daemon exits 0. The run (one worker) is held in the copy of one of
    /// two `slow-` files (`CopyGate`) until the daemon is stopping its sync service; the other
    /// is still to copy then, so only a cancelled run leaves it alone.
    @Test func sigtermDuringARun_stopsAtASafePoint_andExitsZero() throws {
        let fixture = Fixture()
        let gate = try CopyGate.build(in: fixture.directory)
        try TreeFixture.make(at: fixture.source, count: 300, large: 1)
        let large = String(repeating: "x", count: 2 << 20)
        fixture.directory.write("source/slow-1.bin", large)
        fixture.directory.write("source/slow-2.bin", large)
        try FileManager.default.createDirectory(atPath: fixture.destination, withIntermediateDirectories: true)
        let config = fixture.directory.write("weavedid.json", fixture.config(runAtStart: true, extra: #", "workers": 1"#))
        var environment = gate.environment
        environment["WEAVEDID_LOG"] = "info,daemon=debug"  // says when it stops its sync service
        let daemon = try DaemonProcess(["--config", config], environment: environment, directory: fixture.directory)
        try waitForReady(daemon)
        let first = try #require(gate.waitForAny(["slow-1.bin", "slow-2.bin"]), "\(daemon.log)")
        let second = first == "slow-1.bin" ? "slow-2.bin" : "slow-1.bin"
        daemon.send(.terminate)
        #expect(daemon.waitForLog("stopping sync"), "\(daemon.log)")
        gate.release(first)
        // Cancelled, the run ends; not cancelled, it goes on to the second file.
        let deadline = ContinuousClock.now + .seconds(60)
        func ended() -> Bool { ["cancelled", "success", "partial", "failed"].contains { daemon.log.contains("run docs-1 \($0)") } }
        while !ended(), !gate.hasReached(second), ContinuousClock.now < deadline {
            usleep(20_000)
        }
        #expect(!gate.hasReached(second), "the run went on after SIGTERM\n\(daemon.log)")
        gate.release(second)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(daemon.log.contains("run docs-1 cancelled"), "\(daemon.log)")
        try assertNoTornFiles(fixture)
    }

    @Test func killNineDuringLargeDurableRuns_neverLeavesATornFile_andTheMirrorCompletes() throws {
        let fixture = Fixture()
        try TreeFixture.make(at: fixture.source, count: 2000, large: 4)
        let before = try TreeFixture.snapshot(fixture.source)
        var generator = TreeFixture.SplitMix(seed: 7)
        for round in 0..<10 {
            // Keep every run substantial: take back part of what earlier rounds copied.
            for victim in ["d\(round)", "d\(round + 10)", "large\(round % 4).bin"] {
                try? FileManager.default.removeItem(atPath: fixture.destination + "/" + victim)
            }
            let daemon = try fixture.start(fixture.config(runAtStart: true))
            try waitForReady(daemon)
            usleep(useconds_t(20_000 + generator.next() % 400_000))  // somewhere inside the run (or after it)
            daemon.send(.kill)
            #expect(daemon.wait() == .signaled(.kill), "round \(round)")
            try assertNoTornFiles(fixture)
            #expect(try TreeFixture.snapshot(fixture.source) == before, "the source was modified in round \(round)")
        }
        // The kills may have left unfinished copies; one more, planted, makes sure there is one.
        try "torn".write(toFile: fixture.destination + "/.weavedi-tmp.planted.0123456789ab", atomically: false, encoding: .utf8)
        let leftovers = try TreeFixture.snapshot(fixture.destination).keys.filter {
            ($0 as NSString).lastPathComponent.hasPrefix(".weavedi-tmp.")
        }.count
        let daemon = try fixture.start(fixture.config())
        try waitForReady(daemon)
        // A last run the kill cut short never ended: the start runs the job again at once, and
        // that run is the one that mends the destination; otherwise a run by hand does.
        let run: JSONValue?
        if daemon.log.contains("sync: docs: its last run docs-") {
            #expect(daemon.waitForLog("docs: run docs-", timeout: .seconds(120)) && daemon.waitForLog(" success in ", timeout: .seconds(120)),
                    "\(daemon.log)")
            run = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?
                .arrayValue?.first?[member: "lastRun"]
        } else {
            run = try runJob(daemon, more: false).run
        }
        #expect(run?[member: "result"]?.stringValue == "success")
        let counted = "removed \(leftovers) unfinished cop\(leftovers == 1 ? "y" : "ies") (.weavedi-tmp.*) left by an interrupted run"
        #expect(run?[member: "message"]?.stringValue == counted)
        #expect(daemon.log.contains("docs: " + counted))
        #expect(try TreeFixture.snapshot(fixture.destination) == before)  // exact, and no temporary files left
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// Every file under a final name in the destination is a complete copy of its source.
    func assertNoTornFiles(_ fixture: Fixture) throws {
        let source = try TreeFixture.snapshot(fixture.source)
        for (path, entry) in try TreeFixture.snapshot(fixture.destination) where entry.hasPrefix("file ") {
            let name = (path as NSString).lastPathComponent
            if name.hasPrefix(".weavedi-tmp.") { continue }
            // Same size and content as the source (the mtime may lag until the file is finished).
            let content = entry.split(separator: " ").suffix(2).joined(separator: " ")
            let expected = source[path]?.split(separator: " ").suffix(2).joined(separator: " ")
            #expect(content == expected, "\(path) is torn or stale: \(entry) vs \(source[path] ?? "missing")")
        }
    }
}
