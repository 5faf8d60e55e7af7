import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// The jobs' state file (`<stateDirectory>/jobs.json`) as the daemon finds it at start: values
/// out of range, or a file that is not a regular file, are reported and left behind; the daemon
/// neither crashes nor hangs on them, and writes a good file after the next run.
@Suite struct DaemonStateFileTests {
    struct Fixture {
        let directory = TemporaryDirectory()
        var state: String { directory.path + "/state" }
        var stateFile: String { state + "/jobs.json" }

        /// A daemon with one job, `docs`, whose source does not exist: each run fails (and no
        /// fix starts another); `schedule`, the job's members that time its runs.
        func start(schedule: String = #""interval": 3600"#) throws -> DaemonProcess {
            try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
            let config = directory.write("weavedid.json", """
                {"stateDirectory": "\(state)", "sync": {"jobs": [{"name": "docs", "source": "\(directory.path)/source",
                  "destination": "\(directory.path)/mirror", \(schedule)}]}}
                """)
            return try DaemonProcess(["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory)
        }

        /// A state file in which `docs` was first seen, and nothing else: the start writes none
        /// (it writes one for a job first seen), and the test's writes are the runs'.
        func writeSeenBefore() {
            directory.write("state/jobs.json", #"{"jobs": {"docs": {"consecutiveFailures": 0, "firstSeenAt": \#(DaemonStateFileTests.recently)}}}"#)
        }
    }

    /// A pause outlives a restart (a crash, the watchdog, a reboot): the state file keeps it,
    /// the restarted daemon says so, and only `ResumeJob` ends it. Before, a restart quietly
    /// resumed a job paused for maintenance.
    @Test func aPausedJob_staysPausedAcrossARestart_untilResumed() throws {
        let fixture = Fixture()
        func paused(_ daemon: DaemonProcess) throws -> JSONValue? {
            try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?
                .arrayValue?.first?[member: "paused"]
        }
        let first = try fixture.start()
        try #require(first.waitForLog("ready;"), "\(first.log)")
        _ = try VarlinkClient(path: first.defaultSocket).call("io.weavedi.Daemon.PauseJob", [("name", .string("docs"))])
        first.send(.terminate)
        #expect(first.wait() == .exited(0), "\(first.log)")

        let second = try fixture.start()
        try #require(second.waitForLog("ready;"), "\(second.log)")
        #expect(try paused(second) == .bool(true), "\(second.log)")
        #expect(second.log.contains("sync: docs: paused, as it was when the daemon stopped (weavedictl resume-job docs resumes it)"),
                "\(second.log)")
        _ = try VarlinkClient(path: second.defaultSocket).call("io.weavedi.Daemon.ResumeJob", [("name", .string("docs"))])
        #expect(try paused(second) == .bool(false))
        second.send(.terminate)
        #expect(second.wait() == .exited(0), "\(second.log)")

        let third = try fixture.start()
        try #require(third.waitForLog("ready;"), "\(third.log)")
        #expect(try paused(third) == .bool(false), "\(third.log)")
        #expect(!third.log.contains("paused, as it was"), "\(third.log)")
        third.send(.terminate)
        #expect(third.wait() == .exited(0), "\(third.log)")
    }

    /// A paused job a reload removes and a later one adds back starts unpaused, as configured
    /// anew, and a restart then (after a crash, which writes nothing more) does not pause it
    /// again from the state file.
    @Test func aPausedJobAddedBackByAReload_isUnpaused_alsoAfterARestart() throws {
        let fixture = Fixture()
        let first = try fixture.start()
        try #require(first.waitForLog("ready;"), "\(first.log)")
        let client = try VarlinkClient(path: first.defaultSocket)
        _ = try client.call("io.weavedi.Daemon.PauseJob", [("name", .string("docs"))])
        let config = try String(contentsOfFile: fixture.directory.path + "/weavedid.json", encoding: .utf8)
        fixture.directory.write("weavedid.json", #"{"stateDirectory": "\#(fixture.state)"}"#)
        _ = try client.call("io.weavedi.Daemon.Reload")
        fixture.directory.write("weavedid.json", config)
        _ = try client.call("io.weavedi.Daemon.Reload")
        let listed = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(listed?[member: "paused"] == .bool(false), "\(String(describing: listed))")
        // Killed once the file says so (its writes are the daemon's own, asynchronous): a clean
        // stop would write it anyway; a crash keeps what was last written.
        let deadline = ContinuousClock.now + .seconds(30)
        while fixture.directory.read("state/jobs.json")?.contains(#""paused":false"#) != true, ContinuousClock.now < deadline {
            usleep(20_000)
        }
        #expect(fixture.directory.read("state/jobs.json")?.contains(#""paused":false"#) == true)
        first.send(.kill)
        _ = first.wait()

        let second = try fixture.start()
        try #require(second.waitForLog("ready;"), "\(second.log)")
        let after = try VarlinkClient(path: second.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(after?[member: "paused"] == .bool(false), "\(second.log)")
        second.send(.terminate)
        #expect(second.wait() == .exited(0), "\(second.log)")
    }

    /// The job's run (by hand), then its health check.
    func runAndCheck(_ daemon: DaemonProcess) throws -> (run: String?, health: String?) {
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let run = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
        let health = try client.call("io.weavedi.Daemon.RunChecks", [("tags", .array([.string("sync")]))])
            .parameter("health")?[member: "checks"]?.arrayValue?.first { $0[member: "name"]?.stringValue == "job.docs" }
        return (run?[member: "result"]?.stringValue, health?[member: "status"]?.stringValue)
    }

    /// Values no run of the daemon writes: a count of failures that overflows at the next one, a
    /// last success so far in the past that its age is no integer, negative counts and times.
    @Test(arguments: [
        (#"{"consecutiveFailures": 9223372036854775807}"#, "consecutiveFailures: expected an integer from 0 to 2147483647, got 9223372036854775807"),
        (#"{"consecutiveFailures": -5}"#, "consecutiveFailures: expected an integer from 0 to 2147483647, got -5"),
        (#"{"consecutiveFailures": 0, "lastSuccess": -1e308}"#, "lastSuccess: expected a time in seconds since 1970, got -1e+308"),
        (#"{"consecutiveFailures": 0, "lastSuccess": 1e308}"#, "lastSuccess: expected a time in seconds since 1970, got 1e+308"),
        (#"{"consecutiveFailures": 0, "runGoing": "docs-3"}"#, #"runGoing: expected an object or null, got "docs-3""#),
        (#"{"consecutiveFailures": 0, "paused": "yes"}"#, #"paused: expected true or false, got "yes""#),
        (#"{"consecutiveFailures": 0, "runGoing": {"id": "other-3", "startedAt": 1}}"#,
         #"runGoing.id: expected a run id of the job (NAME-N), got "other-3""#),
        (#"{"consecutiveFailures": 0, "runGoing": {"id": "docs-3", "startedAt": -1}}"#,
         "runGoing.startedAt: expected a time in seconds since 1970, got -1"),
        (#"{"consecutiveFailures": 0, "runGoing": {"startedAt": 1}}"#, "runGoing.id: expected a string, got nothing"),
    ])
    func valuesOutOfRange_areReported_andLeftBehind(entry: String, problem: String) throws {
        let fixture = Fixture()
        fixture.directory.write("state/jobs.json", #"{"jobs": {"docs": \#(entry)}}"#)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains(#"warning sync: \#(fixture.stateFile): job "docs": \#(problem); starting without its previous results"#),
                "\(daemon.log)")
        let (run, health) = try runAndCheck(daemon)
        #expect(run == "failed")
        #expect(health == "degraded")  // one failure in a row, below the threshold of 3
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        let saved = try JSONValue.parse(Array(FileManager.default.contents(atPath: fixture.stateFile) ?? Data()))
        #expect(saved[member: "jobs"]?[member: "docs"]?[member: "consecutiveFailures"]?.intValue == 1)
    }

    /// `count` failed items as `failedItems`, the first one's reason `reasonBytes` bytes long.
    static func failedItems(_ count: Int, reasonBytes: Int = 6) -> String {
        let items = (0..<count).map { #"{"path": "f\#($0)", "reason": "\#(String(repeating: "r", count: $0 == 0 ? reasonBytes : 6))"}"# }
        return #""failedItems": [\#(items.joined(separator: ", "))]"#
    }

    /// What only tells about the last run, as no run writes it (`failedItems` of the wrong type,
    /// too many, items of the wrong form or too long; a `message` that is no string), is
    /// dropped alone and said in the log: the job keeps its pause, its failures in a row, its
    /// last success and the last run's result and counts, in `ListJobs` and in the file the
    /// daemon writes again. Before, the whole entry was refused: the job started unpaused, its
    /// previous results gone. Items as a run writes them (20, a reason of 1024 bytes) are kept.
    @Test(arguments: [
        (#""failedItems": 5"#, "lastRun.failedItems: expected an array or null, got 5"),
        (#""failedItems": {"path": "a"}"#, #"lastRun.failedItems: expected an array or null, got {"path":"a"}"#),
        (Self.failedItems(21), "lastRun.failedItems: expected at most 20 items, got 21"),
        (#""failedItems": ["a"]"#, #"lastRun.failedItems[0]: expected an object with a path and a reason, got "a""#),
        (#""failedItems": [{"path": "a", "reason": "b"}, {"path": 1, "reason": "b"}]"#, "lastRun.failedItems[1].path: expected a string, got 1"),
        (#""failedItems": [{"path": "a"}]"#, "lastRun.failedItems[0].reason: expected a string, got nothing"),
        (Self.failedItems(1, reasonBytes: 1025), "lastRun.failedItems[0].reason: expected at most 1024 bytes, got 1025"),
        (#""failedItems": [{"path": "\#(String(repeating: "é", count: 513))", "reason": "b"}]"#,
         "lastRun.failedItems[0].path: expected at most 1024 bytes, got 1026"),
        (#""message": ["no"]"#, #"lastRun.message: expected a string or null, got ["no"]"#),
        (Self.failedItems(20, reasonBytes: 1024), nil),
    ] as [(String, String?)])
    func informationNoRunWrites_isDroppedAlone_theRestOfTheEntryKept(field: String, problem: String?) throws {
        let fixture = Fixture()
        let message = field.hasPrefix(#""message""#) ? "" : #""message": "4 item(s) failed", "#
        fixture.directory.write("state/jobs.json", #"""
            {"lastRunNumber": 7, "jobs": {"docs": {"consecutiveFailures": 2, "lastSuccess": 1700000000, "paused": true,
              "lastRun": {"id": "docs-7", "job": "docs", "result": "partial", "startedAt": 1700000100, "endedAt": 1700000160,
                          "filesCopied": 3, "errors": 4, \#(message)\#(field)}}}}
            """#)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let dropped = "; that field is dropped, the job keeps the rest of its previous results"
        if let problem {
            #expect(daemon.log.contains(#"warning sync: \#(fixture.stateFile): job "docs": \#(problem)\#(dropped)"#), "\(daemon.log)")
        } else {
            #expect(!daemon.log.contains(fixture.stateFile), "\(daemon.log)")
        }
        #expect(!daemon.log.contains("starting without"), "\(daemon.log)")
        let kept = problem == nil ? 20 : 0
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(job?[member: "paused"] == .bool(true), "\(String(describing: job))")
        let listed = job?[member: "lastRun"]
        #expect(listed?[member: "id"]?.stringValue == "docs-7", "\(String(describing: job))")
        #expect(listed?[member: "result"]?.stringValue == "partial")
        #expect(listed?[member: "filesCopied"]?.intValue == 3)
        #expect(listed?[member: "errors"]?.intValue == 4)
        #expect(listed?[member: "failedItems"]?.arrayValue?.count == kept)
        #expect(listed?[member: "message"]?.stringValue == (message.isEmpty ? nil : "4 item(s) failed"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        let saved = try JSONValue.parse(Array(FileManager.default.contents(atPath: fixture.stateFile) ?? Data()))
        let entry = saved[member: "jobs"]?[member: "docs"]
        #expect(entry?[member: "paused"] == .bool(true), "\(saved.serialized.prefix(2000))")
        #expect(entry?[member: "consecutiveFailures"]?.intValue == 2)
        #expect(entry?[member: "lastSuccess"]?.numberValue == 1_700_000_000)
        #expect(entry?[member: "lastRun"]?[member: "id"]?.stringValue == "docs-7")
        #expect(entry?[member: "lastRun"]?[member: "filesCopied"]?.intValue == 3)
        #expect(entry?[member: "lastRun"]?[member: "failedItems"]?.arrayValue?.count == kept)
    }

    /// A count written as a whole number with a fraction or an exponent, or as a negative zero
    /// (as an edit by hand may leave it), is that integer, as in the configuration: the entry is
    /// taken whole, and written back as integers. Before, `-0` and `2.0` were refused, and the
    /// job started without its previous results (unpaused).
    @Test func countsWrittenAsWholeNumbers_areThoseIntegers() throws {
        let fixture = Fixture()
        fixture.directory.write("state/jobs.json", #"""
            {"lastRunNumber": 7e0, "jobs": {"docs": {"consecutiveFailures": 2.0, "lastSuccess": 1700000000, "paused": true,
              "lastRun": {"id": "docs-7", "job": "docs", "result": "partial", "startedAt": 1700000100, "endedAt": 1700000160,
                          "filesCopied": 30e-1, "errors": -0, "message": "4 item(s) failed"}}}}
            """#)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(!daemon.log.contains(fixture.stateFile), "\(daemon.log)")
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(job?[member: "paused"] == .bool(true), "\(String(describing: job))")
        #expect(job?[member: "consecutiveFailures"]?.intValue == 2, "\(String(describing: job))")
        #expect(job?[member: "lastRun"]?[member: "filesCopied"]?.intValue == 3, "\(String(describing: job))")
        #expect(job?[member: "lastRun"]?[member: "errors"]?.intValue == 0, "\(String(describing: job))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        let saved = try JSONValue.parse(Array(FileManager.default.contents(atPath: fixture.stateFile) ?? Data()))
        #expect(saved[member: "lastRunNumber"] == .int(7), "\(saved.serialized.prefix(2000))")
        let entry = saved[member: "jobs"]?[member: "docs"]
        #expect(entry?[member: "consecutiveFailures"] == .int(2), "\(saved.serialized.prefix(2000))")
        #expect(entry?[member: "lastRun"]?[member: "errors"] == .int(0), "\(saved.serialized.prefix(2000))")
    }

    /// A last run no run writes (a count or a time out of range, an unknown result, no id,
    /// something else than an object) is dropped whole and said in the log: the job keeps its
    /// pause, its failures in a row and its last success, in `ListJobs` and in the file the
    /// daemon writes again. Before, the whole entry was refused: the job started unpaused,
    /// its previous results gone.
    @Test(arguments: [
        (#"{"id": "docs-7", "job": "docs", "result": "partial", "startedAt": 1700000100, "endedAt": 1700000160, "filesCopied": -1}"#,
         "lastRun.filesCopied: expected an integer from 0, got -1"),
        (#"{"id": "docs-7", "job": "docs", "result": "failed", "startedAt": 1700000100, "endedAt": 1700000160, "errors": -1}"#,
         "lastRun.errors: expected an integer from 0, got -1"),
        (#"{"id": "docs-7", "job": "docs", "result": "bogus", "startedAt": 1700000100, "endedAt": 1700000160}"#,
         #"lastRun.result: unknown result "bogus""#),
        (#"{"id": "docs-7", "job": "docs", "result": "failed", "startedAt": -1, "endedAt": 1700000160}"#,
         "lastRun.startedAt: expected a time in seconds since 1970, got -1"),
        (#"{"id": 7, "job": "docs", "result": "failed", "startedAt": 1700000100, "endedAt": 1700000160}"#,
         "lastRun.id: expected a string, got 7"),
        ("5", "lastRun: expected an object or null, got 5"),
        (#""docs-7""#, #"lastRun: expected an object or null, got "docs-7""#),
    ])
    func aLastRunNoRunWrites_isDroppedWhole_theRestOfTheEntryKept(run: String, problem: String) throws {
        let fixture = Fixture()
        fixture.directory.write("state/jobs.json", #"""
            {"lastRunNumber": 7, "jobs": {"docs": {"consecutiveFailures": 2, "lastSuccess": 1700000000, "paused": true,
              "lastRun": \#(run)}}}
            """#)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains(#"warning sync: \#(fixture.stateFile): job "docs": \#(problem); the whole lastRun is dropped, "#
            + "the job keeps the rest of its previous results"), "\(daemon.log)")
        #expect(!daemon.log.contains("starting without"), "\(daemon.log)")
        #expect(daemon.log.contains("docs: paused, as it was when the daemon stopped"), "\(daemon.log)")
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(job?[member: "paused"] == .bool(true), "\(String(describing: job))")
        #expect(job?[member: "lastRun"] == .null, "\(String(describing: job))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        let saved = try JSONValue.parse(Array(FileManager.default.contents(atPath: fixture.stateFile) ?? Data()))
        let entry = saved[member: "jobs"]?[member: "docs"]
        #expect(entry?[member: "paused"] == .bool(true), "\(saved.serialized)")
        #expect(entry?[member: "consecutiveFailures"]?.intValue == 2)
        #expect(entry?[member: "lastSuccess"]?.numberValue == 1_700_000_000)
        #expect(entry?[member: "lastRun"] == .null, "\(saved.serialized)")
        #expect(saved[member: "lastRunNumber"]?.intValue == 7)
    }

    /// A message longer than a run keeps (4096 bytes of UTF-8) is cut as a run cuts it, at a
    /// character, with `…` ending it, in `ListJobs` and in the file written again: a damaged
    /// or hostile file's megabytes of message go no further. One that fits is kept whole.
    @Test(arguments: [(4096, false), (100_000, true)])
    func aLongMessage_isCutWhenRead(bytes: Int, cut: Bool) throws {
        let fixture = Fixture()
        // `x`, then `é`s of 2 bytes each: 2046 of them fit before the 3 bytes of `…`.
        let message = "x" + String(repeating: "é", count: (bytes - 2) / 2) + "x"
        #expect(message.utf8.count == bytes)
        fixture.directory.write("state/jobs.json", #"""
            {"lastRunNumber": 7, "jobs": {"docs": {"consecutiveFailures": 1, "paused": true,
              "lastRun": {"id": "docs-7", "job": "docs", "result": "failed", "startedAt": 1700000100, "endedAt": 1700000160,
                          "message": "\#(message)"}}}}
            """#)
        let expected = cut ? "x" + String(repeating: "é", count: 2046) + "…" : message
        #expect(expected.utf8.count == 4096)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log.prefix(2000))")
        #expect(!daemon.log.contains(fixture.stateFile), "\(daemon.log.prefix(2000))")
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(job?[member: "lastRun"]?[member: "message"]?.stringValue == expected)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log.prefix(2000))")
        let saved = try JSONValue.parse(Array(FileManager.default.contents(atPath: fixture.stateFile) ?? Data()))
        #expect(saved[member: "jobs"]?[member: "docs"]?[member: "lastRun"]?[member: "message"]?.stringValue == expected)
    }

    /// Entries with fields dropped by the thousand make a few lines: the first 10 jobs named,
    /// the others counted in one line; each keeps the rest of its entry.
    @Test func manyEntriesWithFieldsDropped_makeFewLogLines() throws {
        let fixture = Fixture()
        let entries = (0..<1000).map {
            #""j\#($0)": {"consecutiveFailures": 1, "lastRun": {"id": "j\#($0)-1", "job": "j\#($0)", "result": "failed", "startedAt": 1, "endedAt": 2, "failedItems": 5}}"#
        }
        fixture.directory.write("state/jobs.json", #"{"jobs": {\#(entries.joined(separator: ", "))}}"#)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log.prefix(2000))")
        let named = daemon.log.split(separator: "\n").filter { $0.contains("lastRun.failedItems: expected an array or null, got 5; that field is dropped") }
        #expect(named.count == 10, "\(daemon.log.prefix(2000))")
        #expect(daemon.log.contains(
            "warning sync: \(fixture.stateFile): 990 more jobs' entries had fields dropped likewise; those jobs keep the rest of their previous results"),
            "\(daemon.log.prefix(2000))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log.prefix(2000))")
        // Entries of jobs not configured: the 100 that ran last are kept, with their failures.
        let saved = try JSONValue.parse(Array(FileManager.default.contents(atPath: fixture.stateFile) ?? Data()))
        let kept = saved[member: "jobs"]?.objectMembers ?? []
        #expect(kept.count == 101, "\(kept.count) entries")
        #expect(kept.filter { $0.0 != "docs" }.allSatisfy { $0.1[member: "consecutiveFailures"]?.intValue == 1 })
    }

    /// A damaged file's names and values of any length, and entries by the thousand: each is
    /// quoted shortened (past 60 characters, with its length), the first 10 entries refused
    /// are named, the others counted in one line; the configured job keeps its good entry.
    @Test func hugeNamesValuesAndManyEntries_makeShortLogLines() throws {
        let fixture = Fixture()
        let longName = String(repeating: "n", count: 100_000)
        let longValue = String(repeating: "v", count: 100_000)
        var entries = [
            #""docs": {"consecutiveFailures": 2}"#,
            #""\#(longName)": {"consecutiveFailures": "\#(longValue)"}"#,
            #""array": {"consecutiveFailures": [\#(Array(repeating: "1", count: 50_000).joined(separator: ","))]}"#,
        ]
        for i in 0..<5_000 { entries.append(#""j\#(i)": {}"#) }
        fixture.directory.write("state/jobs.json", #"{"jobs": {\#(entries.joined(separator: ", "))}}"#)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log.prefix(2000))")
        let log = daemon.log
        let name = #""\#(String(repeating: "n", count: 57))..." (100000 characters)"#
        let value = #""\#(String(repeating: "v", count: 57))..." (100000 characters)"#
        #expect(log.contains(#"warning sync: \#(fixture.stateFile): job \#(name): consecutiveFailures: expected an integer from 0 to 2147483647, got \#(value); starting without its previous results"#),
                "\(log.prefix(2000))")
        #expect(log.contains(#"job "array": consecutiveFailures: expected an integer from 0 to 2147483647, got [\#(String(repeating: "1,", count: 28))... (100001 characters); starting"#),
                "\(log.prefix(2000))")
        #expect(log.contains(#"job "j7": consecutiveFailures: expected an integer from 0 to 2147483647, got nothing; starting"#))
        #expect(!log.contains(#"job "j8""#))
        #expect(log.contains("warning sync: \(fixture.stateFile): 4992 more jobs' entries refused likewise; those jobs start without their previous results"),
                "\(log.prefix(2000))")
        let lines = log.split(separator: "\n")
        #expect(lines.count < 100, "\(lines.count) lines")
        #expect(lines.allSatisfy { $0.utf8.count < 400 }, "\(lines.map(\.utf8.count).max() ?? 0) bytes in the longest line")
        let health = try runAndCheck(daemon).health
        #expect(health == "unhealthy")  // 2 failures from the file, then this run's: 3 in a row
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log.prefix(2000))")
    }

    /// Entries of jobs that are not configured are kept (a job added back keeps its last
    /// result), but only the 100 that ran last: a configuration churned through many names does
    /// not grow the file for ever.
    @Test func entriesOfJobsNotConfigured_areKept_onlyTheHundredThatRanLast() throws {
        let fixture = Fixture()
        // gone-0 ran last; gone-149 first.
        let entries = (0..<150).map { #""gone-\#($0)": {"consecutiveFailures": 1, "lastSuccess": \#(1_700_000_000 - $0)}"# }
        fixture.directory.write("state/jobs.json", #"{"jobs": {\#(entries.joined(separator: ", "))}}"#)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log.prefix(2000))")
        #expect(try runAndCheck(daemon).run == "failed")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log.prefix(2000))")
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: fixture.stateFile))))
        let names = Set(saved[member: "jobs"]?.objectMembers?.map(\.0) ?? [])
        #expect(names == Set(["docs"] + (0..<100).map { "gone-\($0)" }), "\(names.count) entries")
        #expect(saved[member: "jobs"]?[member: "gone-99"]?[member: "lastSuccess"]?.numberValue == 1_699_999_901)
    }

    /// What the state file may be instead of a file: a named pipe (whose open waits for a
    /// writer that never comes), a device (`/dev/null` here; `/dev/zero` would be read for
    /// ever), a file larger than any the daemon writes. Each is refused at once, without reading
    /// it, and replaced by the first write after a run. The file too large is kept aside first,
    /// as a damaged one is (`jobs.json.corrupt`); the pipe and the link to a device, which hold
    /// nothing the daemon wrote, are not. Before, the large file was lost to the write.
    @Test(arguments: ["fifo", "device", "huge"])
    func aStateFileThatIsNoFile_orTooLarge_isRefusedAtOnce_andReplaced(kind: String) throws {
        let fixture = Fixture()
        try FileManager.default.createDirectory(atPath: fixture.state, withIntermediateDirectories: true)
        let problem: String
        switch kind {
        case "fifo":
            try #require(mkfifo(fixture.stateFile, 0o600) == 0, "mkfifo: \(Errno.current)")
            problem = "not a regular file (a named pipe)"
        case "device":
            try FileManager.default.createSymbolicLink(atPath: fixture.stateFile, withDestinationPath: "/dev/null")
            problem = "not a regular file (a character device)"
        default:
            fixture.directory.write("state/jobs.json", "")
            try #require(truncate(fixture.stateFile, 64 << 20) == 0, "truncate: \(Errno.current)")  // sparse
            problem = "the file is larger than 16777216 bytes"
        }
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains("warning sync: \(fixture.stateFile): \(problem); starting without the jobs' previous results"),
                "\(daemon.log)")
        let copy = fixture.stateFile + ".corrupt"
        if kind == "huge" {
            #expect(daemon.log.contains("; the over-large file is kept as \"\(copy)\" (replacing an earlier copy, if any)"), "\(daemon.log)")
            let kept = try FileStatus(path: copy, followSymlinks: false)
            #expect(kept.kind == .regular && kept.size == 64 << 20, "\(kept)")
        } else {
            #expect(daemon.log.contains("; the file is replaced at the next run's start"), "\(daemon.log)")
            #expect(!fileExists(copy))
        }
        #expect(try runAndCheck(daemon).run == "failed")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        let status = try FileStatus(path: fixture.stateFile, followSymlinks: false)
        #expect(status.kind == .regular)
        let saved = try JSONValue.parse(Array(FileManager.default.contents(atPath: fixture.stateFile) ?? Data()))
        #expect(saved[member: "jobs"]?[member: "docs"]?[member: "consecutiveFailures"]?.intValue == 1, "\(daemon.log)")
    }

    /// The health round run before `READY=1` only looks: a check failing in it (here
    /// `sync.stateFile`, the state file a named pipe the start could not read) is degraded at
    /// once, but its fix (which would write the file again) is not run before the daemon is
    /// ready, nor counted toward auto-fix's threshold; the loop's rounds, one `health.interval`
    /// later, fix. Before, auto-fix ran within the start, holding it for the fix's attempt and
    /// the check's run after it.
    @Test func theHealthRoundBeforeReady_startsNoFix() throws {
        let fixture = Fixture()
        try FileManager.default.createDirectory(atPath: fixture.state, withIntermediateDirectories: true)
        try #require(mkfifo(fixture.stateFile, 0o600) == 0, "mkfifo: \(Errno.current)")
        try FileManager.default.createDirectory(atPath: fixture.directory.path + "/mirror", withIntermediateDirectories: true)
        let config = fixture.directory.write("weavedid.json", """
            {"stateDirectory": "\(fixture.state)", "health": {"interval": 3600}, "sync": {"jobs": [{"name": "docs",
              "source": "\(fixture.directory.path)/source", "destination": "\(fixture.directory.path)/mirror", "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_HEALTH": "1", "WEAVEDI_REGISTRY_AUTO_FIX": "1"], directory: fixture.directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let health = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.GetHealth").parameter("health")
        let check = health?[member: "checks"]?.arrayValue?.first { $0[member: "name"]?.stringValue == "sync.stateFile" }
        #expect(check?[member: "status"]?.stringValue == "degraded", "\(String(describing: health))")
        #expect(check?[member: "fixesTried"]?.intValue == 0, "\(String(describing: check))")
        #expect(!daemon.log.contains("fix of \"sync.stateFile\""), "\(daemon.log)")
        #expect(try FileStatus(path: fixture.stateFile, followSymlinks: false).kind == .fifo)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Temporary files left by a write of the state file that a crash interrupted
    /// (`.jobs.json.tmp.N`, N a number the write drew) are removed at start, and the log says
    /// so; names that only look like them, and anything not a regular file, are left alone.
    @Test func staleTemporaryStateFiles_areRemovedAtStart_andNothingElse() throws {
        let fixture = Fixture()
        let stale = [".jobs.json.tmp.0", ".jobs.json.tmp.12345", ".jobs.json.tmp.4294967295"]
        let kept = [
            ".jobs.json.tmp.", ".jobs.json.tmp.abc", ".jobs.json.tmp.12x", ".jobs.json.tmp.-1", ".jobs.json.tmp.+5",
            ".jobs.json.tmp.007", ".jobs.json.tmp.4294967296", "jobs.json.tmp.5", ".jobs.json.tmp.5.bak",
            ".metrics.prom.tmp.5", ".other.json.tmp.5", "notes.txt",
        ]
        for name in stale + kept { fixture.directory.write("state/\(name)", "{}") }
        try FileManager.default.createDirectory(atPath: fixture.state + "/.jobs.json.tmp.77", withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: fixture.state + "/.jobs.json.tmp.88", withDestinationPath: fixture.state + "/notes.txt")
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        for name in stale { #expect(!fileExists(fixture.state + "/" + name), "\(name)") }
        for name in kept + [".jobs.json.tmp.77", ".jobs.json.tmp.88"] { #expect(fileExists(fixture.state + "/" + name), "\(name)") }
        #expect(daemon.log.contains(
            "notice  sync: \(fixture.state): removed 3 temporary files left by an interrupted write of the jobs' state file "
            + "(.jobs.json.tmp.0, .jobs.json.tmp.12345, .jobs.json.tmp.4294967295)"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Without such files nothing is said.
    @Test func withoutStaleTemporaryFiles_nothingIsSaid() throws {
        let fixture = Fixture()
        fixture.directory.write("state/notes.txt", "")
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(!daemon.log.contains("temporary file"), "\(daemon.log)")
        #expect(fileExists(fixture.state + "/notes.txt"))
    }

    /// The state file stays where the daemon started with it: a reload that moves
    /// `stateDirectory` is refused (a restart moves it), rather than said to be in effect while
    /// the state goes on being written to the old directory. The same directory spelled
    /// otherwise (a trailing slash, a doubled one) is no move.
    @Test func aReloadThatMovesTheStateDirectory_isRefused() throws {
        let fixture = Fixture()
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let config = try String(contentsOfFile: fixture.directory.path + "/weavedid.json", encoding: .utf8)
        // The same directory spelled with a trailing slash and a doubled one is no move.
        fixture.directory.write("weavedid.json", config.replacingOccurrences(of: fixture.state, with: fixture.state.replacingOccurrences(of: "/", with: "//") + "/"))
        #expect(try reloadFailure(daemon.defaultSocket) == nil, "\(daemon.log)")
        let moved = fixture.directory.path + "/moved"
        fixture.directory.write("weavedid.json", config.replacingOccurrences(of: fixture.state, with: moved))
        let refusal = try reloadFailure(daemon.defaultSocket)
        #expect(refusal?.name == "io.weavedi.Daemon.ReloadRefused", "\(daemon.log)")
        #expect(refusal?.reply.parameter("reason")?.stringValue
            == #"stateDirectory changed from "\#(fixture.state)" to "\#(moved)"; a restart uses the new directory but moves nothing: "#
            + #"the jobs' last runs, their pauses and the run counter stay in jobs.json in the old one; to carry them over, stop the "#
            + #"daemon, move jobs.json (not weavedid.lock) from "\#(fixture.state)" into "\#(moved)", then start it"#, "\(daemon.log)")
        #expect(try runAndCheck(daemon).run == "failed")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(fileExists(fixture.stateFile))
    }

    /// The `sync.stateFile` check, run now.
    func stateFileCheck(_ daemon: DaemonProcess) throws -> JSONValue? {
        try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.RunChecks", [("tags", .array([.string("sync")]))])
            .parameter("health")?[member: "checks"]?.arrayValue?.first { $0[member: "name"]?.stringValue == "sync.stateFile" }
    }

    /// A state file that cannot be written (here a directory in its place, which fails as root
    /// too) makes the `sync.stateFile` check degraded, saying which file, why, what a restart
    /// would lose and what to do; once the way is clear, the check's fix writes the file, and
    /// the check is healthy again.
    @Test func aStateFileThatCannotBeWritten_degradesItsCheck_untilTheFixWritesIt() throws {
        let fixture = Fixture()
        fixture.writeSeenBefore()
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(try stateFileCheck(daemon)?[member: "status"]?.stringValue == "healthy", "\(daemon.log)")
        try FileManager.default.removeItem(atPath: fixture.stateFile)
        try FileManager.default.createDirectory(atPath: fixture.stateFile + "/in-the-way", withIntermediateDirectories: true)
        #expect(try runAndCheck(daemon).run == "failed")
        try #require(daemon.waitForLog(#"cannot write the jobs' state file "\#(fixture.stateFile)": "#), "\(daemon.log)")
        var check = try stateFileCheck(daemon)
        #expect(check?[member: "status"]?.stringValue == "degraded", "\(check.map { "\($0)" } ?? "no check")")
        let message = check?[member: "message"]?.stringValue ?? ""
        #expect(message.hasPrefix(#"cannot write the jobs' state file "\#(fixture.stateFile)": "#), "\(message)")
        #expect(message.hasSuffix(
            "; until a write succeeds, a restart loses the jobs' last results (health would not know how each job last went) "
                + #"and the count of runs (run ids would be given again): make "\#(fixture.state)" writable by the daemon, free space "#
                + "on its file system, or move away what stands in the file's place (the check's fix writes it again: "
                + "weavedictl fix sync.stateFile)"), "\(message)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        var fix = try client.call("io.weavedi.Daemon.Fix", [("check", .string("sync.stateFile"))]).parameter("fixes")?.arrayValue?.first
        #expect(fix?[member: "outcome"]?.stringValue == "failed", "\(fix.map { "\($0)" } ?? "no fix")")
        #expect(fix?[member: "error"]?.stringValue?.hasPrefix(#"cannot write the jobs' state file "\#(fixture.stateFile)": "#) == true,
                "\(fix.map { "\($0)" } ?? "no fix")")

        try FileManager.default.removeItem(atPath: fixture.stateFile)
        fix = try client.call("io.weavedi.Daemon.Fix", [("check", .string("sync.stateFile"))]).parameter("fixes")?.arrayValue?.first
        #expect(fix?[member: "outcome"]?.stringValue == "succeeded", "\(fix.map { "\($0)" } ?? "no fix")")
        #expect(fix?[member: "message"]?.stringValue == #"wrote "\#(fixture.stateFile)""#, "\(fix.map { "\($0)" } ?? "no fix")")
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: fixture.stateFile))))
        #expect(saved[member: "jobs"]?[member: "docs"]?[member: "consecutiveFailures"]?.intValue == 1)
        check = try stateFileCheck(daemon)
        #expect(check?[member: "status"]?.stringValue == "healthy", "\(check.map { "\($0)" } ?? "no check")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// `GetHealth`, which runs no check (`weavedictl health`), says how the last write of the
    /// state file went as soon as that write ended: degraded once one failed, by the time the
    /// log says so, and healthy once one succeeded again; not at the health loop's next round
    /// (the loop is off here, as in the tests that do not turn it on).
    @Test func theStateFileCheck_followsEachWrite_atOnce() throws {
        let fixture = Fixture()
        fixture.writeSeenBefore()
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        func lastKnown() throws -> JSONValue? {
            try client.call("io.weavedi.Daemon.GetHealth", [("tags", .array([.string("sync")]))])
                .parameter("health")?[member: "checks"]?.arrayValue?.first { $0[member: "name"]?.stringValue == "sync.stateFile" }
        }
        var check = try lastKnown()
        try #require(check?[member: "status"] == .null, "\(check.map { "\($0)" } ?? "no check")")  // not run yet

        try FileManager.default.removeItem(atPath: fixture.stateFile)
        try FileManager.default.createDirectory(atPath: fixture.stateFile + "/in-the-way", withIntermediateDirectories: true)
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))])
        try #require(daemon.waitForLog(#"cannot write the jobs' state file "\#(fixture.stateFile)": "#), "\(daemon.log)")
        check = try lastKnown()
        #expect(check?[member: "status"]?.stringValue == "degraded", "\(check.map { "\($0)" } ?? "no check")")
        #expect(check?[member: "message"]?.stringValue?.hasPrefix(#"cannot write the jobs' state file "\#(fixture.stateFile)": "#) == true)
        #expect(daemon.log.contains(#"warning health: "sync.stateFile": unknown -> degraded: cannot write the jobs' state file"#),
                "\(daemon.log)")

        try FileManager.default.removeItem(atPath: fixture.stateFile)
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))])
        #expect(daemon.waitForLog(#"notice  health: "sync.stateFile": degraded -> healthy: the last write succeeded"#), "\(daemon.log)")
        check = try lastKnown()
        #expect(check?[member: "status"]?.stringValue == "healthy", "\(check.map { "\($0)" } ?? "no check")")
        #expect(check?[member: "message"]?.stringValue == "the last write succeeded")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A state file that is there but cannot be read at the start (a directory in its place)
    /// costs the jobs' last results and the run count: the log says ids start again, and
    /// `sync.stateFile` is degraded from the start, not "not written yet", until a write
    /// replaces the file.
    @Test func aStateFileUnreadableAtTheStart_degradesItsCheck_untilAWriteReplacesIt() throws {
        let fixture = Fixture()
        try FileManager.default.createDirectory(atPath: fixture.stateFile, withIntermediateDirectories: true)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains("warning sync: \(fixture.stateFile): ") && daemon.log.contains(
            "; starting without the jobs' previous results (their last runs, and their pauses: a job paused before is "
                + "scheduled again), and run ids start again at NAME-1 (they may repeat ids in older logs); the file is replaced "
                + "at the next run's start"), "\(daemon.log)")
        var check = try stateFileCheck(daemon)
        #expect(check?[member: "status"]?.stringValue == "degraded", "\(check.map { "\($0)" } ?? "no check")")
        let message = check?[member: "message"]?.stringValue ?? ""
        #expect(message.hasPrefix(#"could not read the jobs' state file "\#(fixture.stateFile)" at the start: "#), "\(message)")
        #expect(message.hasSuffix("run ids started again at NAME-1 (they may repeat ids in older logs): move away what stands "
            + "in the file's place, or mend its directory's permissions; a write replaces the file (at the next run's start, "
            + "or now: weavedictl fix sync.stateFile)"), "\(message)")

        try FileManager.default.removeItem(atPath: fixture.stateFile)
        let fix = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Fix", [("check", .string("sync.stateFile"))])
            .parameter("fixes")?.arrayValue?.first
        #expect(fix?[member: "outcome"]?.stringValue == "succeeded", "\(fix.map { "\($0)" } ?? "no fix")")
        check = try stateFileCheck(daemon)
        #expect(check?[member: "status"]?.stringValue == "healthy", "\(check.map { "\($0)" } ?? "no check")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// The id of the job's run by hand.
    func runID(_ daemon: DaemonProcess) throws -> String? {
        try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))])
            .parameter("run")?[member: "id"]?.stringValue
    }

    /// Run ids go on across restarts: a run after a restart is not given the id of one before
    /// it. The file keeps the number of the last run started (`lastRunNumber`), which covers
    /// runs the jobs' entries do not keep (cancelled, skipped).
    @Test func runIDs_goOnAfterARestart() throws {
        let fixture = Fixture()
        var daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(try runID(daemon) == "docs-1")
        #expect(try runID(daemon) == "docs-2")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: fixture.stateFile))))
        #expect(saved[member: "lastRunNumber"]?.intValue == 2)

        daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(try runID(daemon) == "docs-3", "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// The run count is saved as a run starts: a daemon killed during a run (SIGKILL: no
    /// shutdown, no write at the run's end) gives the next run a higher id, not the killed one's.
    @Test func runIDs_areNotGivenAgain_afterTheDaemonIsKilledDuringARun() throws {
        let fixture = Fixture()
        // Killed once the state file says the run is going (its number is written with it).
        var (daemon, restart, release) = try startWithARunGoing(fixture)
        defer { release() }
        #expect(fixture.directory.read("state/jobs.json")?.contains(#""lastRunNumber":1"#) == true)
        daemon.send(.kill)
        #expect(daemon.wait() == .signaled(.kill), "\(daemon.log)")
        #expect(!daemon.log.contains("run docs-1 success"), "the run ended before the kill: \(daemon.log)")

        // The run that never ended is run again at the start: under the next id.
        daemon = try restart(false)
        #expect(daemon.log.contains("sync: docs: its last run docs-1 never ended (the destination may be behind): it runs again now"),
                "\(daemon.log)")
        #expect(daemon.waitForLog("docs: run docs-2 started"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A daemon, with the job `docs` whose source holds `slow-big.bin`, and that job's run
    /// started by hand and held (`CopyGate`) in that file's copy, its id written in the state
    /// file as going (`runGoing`); `restart` starts the daemon again, its copies not held. The
    /// test releases the held copy (`release`) before a clean shutdown of the first daemon.
    func startWithARunGoing(_ fixture: Fixture) throws
        -> (daemon: DaemonProcess, restart: (_ held: Bool) throws -> DaemonProcess, release: () -> Void)
    {
        let d = fixture.directory.path
        let gate = try CopyGate.build(in: fixture.directory)
        let big = fixture.directory.write("source/slow-big.bin", "")
        // Sparse, 32 MiB: 4 copy chunks, and 37 s held before the run's walk watch fails it.
        try #require(truncate(big, 32 << 20) == 0, "truncate: \(Errno.current)")
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        let config = fixture.directory.write("weavedid.json", """
            {"stateDirectory": "\(fixture.state)", "sync": {"jobs": [{"name": "docs", "source": "\(d)/source",
              "destination": "\(d)/mirror", "interval": 3600}]}}
            """)
        func start(_ extra: [String: String]) throws -> DaemonProcess {
            let environment = extra.merging(["WEAVEDI_REGISTRY_AUTO_FIX": "0"]) { $1 }
            let daemon = try DaemonProcess(["--config", config], environment: environment, directory: fixture.directory)
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            return daemon
        }
        var held = gate.environment
        held["WEAVEDID_LOG"] = "info,daemon=debug"  // says when it stops its sync service
        let daemon = try start(held)
        let id = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.RunJob", [("name", .string("docs")), ("detach", .bool(true))])
            .parameter("runId")?.stringValue
        try #require(id == "docs-1", "\(daemon.log)")
        try #require(daemon.waitForLog("docs: run docs-1 started"), "\(daemon.log)")
        try #require(gate.waitForReached("slow-big.bin"), "\(daemon.log)")
        try #require(fixture.directory.read("state/jobs.json", once: #""runGoing":{"id":"docs-1","startedAt":"#) != nil,
                     "\(fixture.directory.read("state/jobs.json") ?? "no state file")")
        // Held again (`held`): the gate is closed anew, and the next copy of the file waits there.
        func restart(_ held: Bool) throws -> DaemonProcess {
            guard held else { return try start([:]) }
            unlink(gate.gate + "/release-slow-big.bin")
            unlink(gate.gate + "/reached-slow-big.bin")
            return try start(gate.environment)
        }
        return (daemon, restart, { gate.release("slow-big.bin") })
    }

    /// A daemon killed during a run (SIGKILL: no shutdown, no write at the run's end) leaves the
    /// run said going in the state file: at the next start the log says it never ended, and it
    /// is the job's last run, failed with the same message (`ListJobs`, the job's check), one
    /// failure in a row.
    @Test func aRunTheDaemonNeverEnded_isLoggedAndFailed_atTheNextStart() throws {
        let fixture = Fixture()
        var (daemon, start, release) = try startWithARunGoing(fixture)
        defer { release() }
        daemon.send(.kill)
        #expect(daemon.wait() == .signaled(.kill), "\(daemon.log)")
        try #require(!daemon.log.contains("run docs-1 success"), "the run ended before the kill: \(daemon.log)")

        // Held: the run the start makes (the last one never ended) does not end meanwhile.
        daemon = try start(true)
        let tail = ", never ended: the daemon stopped without ending it (killed, crashed, the power); its destination may "
            + "hold part of that run's changes until the next run"
        let line = try #require(daemon.log.split(separator: "\n").first { $0.contains("never ended") }, "\(daemon.log)")
        #expect(line.contains("warning sync: docs: run docs-1, started at 20") && line.hasSuffix("Z" + tail), "\(line)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let job = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        let last = job?[member: "lastRun"]
        #expect(last?[member: "id"]?.stringValue == "docs-1", "\(job.map { "\($0)" } ?? "no job")")
        #expect(last?[member: "result"]?.stringValue == "failed", "\(job.map { "\($0)" } ?? "no job")")
        let message = last?[member: "message"]?.stringValue ?? ""
        #expect(message.hasPrefix("run docs-1, started at 20") && message.hasSuffix(tail), "\(message)")
        #expect(line.hasSuffix("sync: docs: " + message), "\(line)")
        #expect(job?[member: "consecutiveFailures"]?.intValue == 1, "\(job.map { "\($0)" } ?? "no job")")
        let health = try client.call("io.weavedi.Daemon.RunChecks", [("tags", .array([.string("sync")]))])
            .parameter("health")?[member: "checks"]?.arrayValue?.first { $0[member: "name"]?.stringValue == "job.docs" }
        #expect(health?[member: "status"]?.stringValue == "degraded", "\(health.map { "\($0)" } ?? "no check")")
        #expect(health?[member: "message"]?.stringValue == "last run failed: " + message, "\(health.map { "\($0)" } ?? "no check")")
        release()
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        // Said once: the file no longer says the run is going.
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: fixture.stateFile))))
        #expect(saved[member: "jobs"]?[member: "docs"]?[member: "runGoing"]?.isNull == true)
        #expect(saved[member: "jobs"]?[member: "docs"]?[member: "lastRun"]?[member: "id"]?.stringValue == "docs-2")
    }

    /// Two runs of a job in a row that never ended (the later one run again at once at a
    /// start, as the earlier had not ended) are what a run that crashes the daemon leaves: the
    /// job is not run again at once (it would crash the daemon at every start, a restart loop),
    /// but at its interval, even with `runAtStart`; the log says why, naming both runs, and so
    /// does the job's check. Before, it ran at once at every start.
    @Test(arguments: [false, true])
    func twoRunsInARowThatNeverEnded_areNotRunAgainAtOnce(runAtStart: Bool) throws {
        let fixture = Fixture()
        let now = Date().timeIntervalSince1970
        // What two kills in a row leave: docs-1 never ended (read at a start, `unfinished`),
        // and docs-2, run at once at that start, was going when the daemon stopped again.
        fixture.directory.write("state/jobs.json", """
            {"lastRunNumber": 2, "jobs": {"docs": {"consecutiveFailures": 1, "firstSeenAt": \(now - 60), "unfinished": true,
              "lastRun": {"id": "docs-1", "job": "docs", "result": "failed", "startedAt": \(now - 30), "endedAt": \(now - 30),
                "message": "run docs-1, started at …, never ended"},
              "runGoing": {"id": "docs-2", "startedAt": \(now - 5)}}}}
            """)
        try FileManager.default.createDirectory(atPath: fixture.directory.path + "/mirror", withIntermediateDirectories: true)
        let config = fixture.directory.write("weavedid.json", """
            {"stateDirectory": "\(fixture.state)", "sync": {"jobs": [{"name": "docs", "source": "\(fixture.directory.path)/source",
              "destination": "\(fixture.directory.path)/mirror", "interval": 3600, "runAtStart": \(runAtStart)}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: fixture.directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains("error   sync: docs: its runs docs-1 and docs-2 both never ended: the job's runs stopped the "
            + "daemon twice in a row (a run that crashes it?); it is not run again at once, but at its interval (1h 00m); "
            + "weavedictl run-job docs runs it now"), "\(daemon.log)")
        #expect(!daemon.log.contains("it runs again now"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let job = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        let next = job?[member: "nextRunIn"]?.numberValue ?? -1
        #expect(next > 3000 && next <= 3600, "\(job.map { "\($0)" } ?? "no job")")
        #expect(job?[member: "running"]?.boolValue == false, "\(job.map { "\($0)" } ?? "no job")")
        #expect(job?[member: "consecutiveFailures"]?.intValue == 2, "\(job.map { "\($0)" } ?? "no job")")
        let health = try client.call("io.weavedi.Daemon.RunChecks", [("tags", .array([.string("sync")]))])
            .parameter("health")?[member: "checks"]?.arrayValue?.first { $0[member: "name"]?.stringValue == "job.docs" }
        let message = health?[member: "message"]?.stringValue ?? ""
        #expect(message.hasPrefix("last run failed: run docs-2, started at ") && message.hasSuffix("; run docs-1 before it never "
            + "ended either: the job's runs stopped the daemon twice in a row (a run that crashes it?), so it does not run "
            + "again at once after a start, but at its interval"), "\(health.map { "\($0)" } ?? "no check")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(!daemon.log.contains("run docs-3"), "\(daemon.log)")
    }

    /// The job's entry in the state file.
    func savedEntry(_ fixture: Fixture) throws -> JSONValue? {
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: fixture.stateFile))))
        return saved[member: "jobs"]?[member: "docs"]
    }

    /// A run that never ended keeps its job due at once until a run of it does work: the state
    /// file says so (`unfinished`), so that a write before the run again starts (here the fix of
    /// `sync.stateFile`, the job paused meanwhile) and a second restart do not lose it: resumed
    /// after that restart, the job runs at once. Before, the second start saw a plain failed run
    /// and waited up to an interval, the destination half done. (The write is not the resume:
    /// a job due at once starts its run as it is resumed, before any signal could stop it.)
    @Test func aRunThatNeverEnded_isRunAgain_afterAWriteAndASecondRestart() throws {
        let fixture = Fixture()
        var (daemon, start, release) = try startWithARunGoing(fixture)
        defer { release() }
        // Paused during its run: the start after the kill does not run it.
        _ = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.PauseJob", [("name", .string("docs"))])
        daemon.send(.kill)
        #expect(daemon.wait() == .signaled(.kill), "\(daemon.log)")
        try #require(!daemon.log.contains("run docs-1 success"), "the run ended before the kill: \(daemon.log)")

        daemon = try start(false)
        try #require(daemon.log.contains("warning sync: docs: run docs-1, started at "), "\(daemon.log)")
        // Paused, it does not run, and the log does not say it does.
        #expect(daemon.log.contains("notice  sync: docs: its last run docs-1 never ended (the destination may be behind); it "
            + "stays paused"), "\(daemon.log)")
        #expect(!daemon.log.contains("it runs again"), "\(daemon.log)")
        // The file is written again before any run of the job starts.
        let fix = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Fix", [("check", .string("sync.stateFile"))])
            .parameter("fixes")?.arrayValue?.first
        #expect(fix?[member: "outcome"]?.stringValue == "succeeded", "\(fix.map { "\($0)" } ?? "no fix")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        try #require(!daemon.log.contains("run docs-2"), "\(daemon.log)")
        var entry = try savedEntry(fixture)
        #expect(entry?[member: "runGoing"]?.isNull == true, "\(entry.map { "\($0)" } ?? "no entry")")
        #expect(entry?[member: "lastRun"]?[member: "result"]?.stringValue == "failed", "\(entry.map { "\($0)" } ?? "no entry")")
        #expect(entry?[member: "unfinished"] == .bool(true), "\(entry.map { "\($0)" } ?? "no entry")")

        // Still due at once after the second restart: resumed, it runs now, not an interval
        // after docs-1 started.
        daemon = try start(false)
        #expect(daemon.log.contains("notice  sync: docs: its last run docs-1 never ended (the destination may be behind); it "
            + "stays paused"), "\(daemon.log)")
        _ = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ResumeJob", [("name", .string("docs"))])
        #expect(daemon.waitForLog("docs: run docs-2 success"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        // A run that did its work ends it.
        entry = try savedEntry(fixture)
        #expect(entry?[member: "lastRun"]?[member: "id"]?.stringValue == "docs-2", "\(entry.map { "\($0)" } ?? "no entry")")
        #expect(entry?[member: "unfinished"] == .bool(false), "\(entry.map { "\($0)" } ?? "no entry")")
    }

    /// A clean shutdown during a run ends it, cancelled, and that run is the job's last run in
    /// the state file: after the restart `ListJobs` shows it (not the success before it), the
    /// job's check is degraded (its destination may be behind), nothing is said never ended,
    /// and the job runs again at once, not an interval later. Before, the file kept the run
    /// before it, the job looked healthy and waited a whole interval.
    @Test func aRunEndedByACleanShutdown_isTheJobsLastRun_andTheJobRunsAgainAtTheStart() throws {
        let fixture = Fixture()
        var (daemon, start, release) = try startWithARunGoing(fixture)
        defer { release() }
        daemon.send(.terminate)
        // Held until the shutdown is stopping the run: it ends cancelled, not copied.
        try #require(daemon.waitForLog("stopping sync"), "\(daemon.log)")
        release()
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: fixture.stateFile))))
        let entry = saved[member: "jobs"]?[member: "docs"]
        #expect(entry?[member: "runGoing"]?.isNull == true, "\(saved)")
        #expect(entry?[member: "lastRun"]?[member: "id"]?.stringValue == "docs-1", "\(saved)")
        #expect(entry?[member: "lastRun"]?[member: "result"]?.stringValue == "cancelled", "\(saved)")

        // Its next run is held in its copy: what the restart shows is the cancelled run's.
        daemon = try start(true)
        #expect(!daemon.log.contains("never ended"), "\(daemon.log)")
        #expect(daemon.log.contains("notice  sync: docs: its last run docs-1 was cancelled (the destination may be behind): it runs "
            + "again now"), "\(daemon.log)")
        try #require(daemon.waitForLog("docs: run docs-2 started"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let job = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        let last = job?[member: "lastRun"]
        #expect(last?[member: "id"]?.stringValue == "docs-1", "\(job.map { "\($0)" } ?? "no job")")
        #expect(last?[member: "result"]?.stringValue == "cancelled", "\(job.map { "\($0)" } ?? "no job")")
        let message = last?[member: "message"]?.stringValue ?? ""
        #expect(message.hasPrefix("the daemon is stopping"), "\(message)")
        #expect(job?[member: "consecutiveFailures"]?.intValue == 0, "\(job.map { "\($0)" } ?? "no job")")
        let health = try client.call("io.weavedi.Daemon.RunChecks", [("tags", .array([.string("sync")]))])
            .parameter("health")?[member: "checks"]?.arrayValue?.first { $0[member: "name"]?.stringValue == "job.docs" }
        #expect(health?[member: "status"]?.stringValue == "degraded", "\(health.map { "\($0)" } ?? "no check")")
        #expect(health?[member: "message"]?.stringValue == "last run cancelled: " + message
            + "; the destination may be behind until the next run", "\(health.map { "\($0)" } ?? "no check")")
        release()
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A state file whose job `docs` last started a run `age` seconds ago (interval 3600).
    func writeLastRun(_ fixture: Fixture, startedAgo age: Double) {
        let started = Date().timeIntervalSince1970 - age
        fixture.directory.write("state/jobs.json", #"{"lastRunNumber": 41, "jobs": {"docs": {"consecutiveFailures": 0, "#
            + #""lastRun": {"id": "docs-41", "job": "docs", "result": "success", "startedAt": \#(started), "#
            + #""endedAt": \#(started + 1)}}}}"#)
    }

    /// A schedule whose backoff grows from 1 s to about 115 days: a wait drawn at a level of 20
    /// is more than a second but once in millions, one at level 1 never is.
    static let longBackoff = #""interval": 1, "backoffCap": 10000000"#

    /// A state file whose job `docs` failed its last run `docs-41`, ended `endedAgo` seconds
    /// ago, after 19 failures in a row before it; `members`, more members of its entry
    /// (`"backoffLevel": 3, `).
    func writeFailedRun(_ fixture: Fixture, endedAgo age: Double, with members: String) {
        let ended = Date().timeIntervalSince1970 - age
        fixture.directory.write("state/jobs.json", #"{"lastRunNumber": 41, "jobs": {"docs": {"consecutiveFailures": 20, "#
            + #"\#(members)"lastRun": {"id": "docs-41", "job": "docs", "result": "failed", "startedAt": \#(ended - 1), "#
            + #""endedAt": \#(ended), "message": "source missing"}}}}"#)
    }

    /// The backoff a job's failures built up outlives a restart: the state file keeps its level
    /// (`backoffLevel`; a file without it, written before it was kept, takes the failures in a
    /// row; so does one no run writes, logged and dropped alone), the next failure backs off
    /// further, and the file says so. A level of 0 (the job's fix reset it, its failures still
    /// counted) starts over at the interval. Before, every start began again at the interval:
    /// `retrying in 447 ms (backoff after 21 failed runs in a row)`.
    @Test(arguments: [("", 21), (#""backoffLevel": 20, "#, 21), (#""backoffLevel": 0, "#, 1), (#""backoffLevel": -1, "#, 21)])
    func theBackoff_goesOnAfterARestart(level: String, after: Int) throws {
        let fixture = Fixture()
        // Its backoff passed long ago, whatever was drawn: it runs at once.
        writeFailedRun(fixture, endedAgo: 20_000_000, with: level)
        let daemon = try fixture.start(schedule: Self.longBackoff)
        try #require(daemon.waitForLog("docs: retrying in "), "\(daemon.log)")
        #expect(daemon.log.contains(#"job "docs": backoffLevel: expected an integer from 0 to 2147483647, got -1; that field is "#
            + "dropped, the job keeps the rest of its previous results") == level.contains("-1"), "\(daemon.log)")
        let retry = daemon.log.split(separator: "\n").first { $0.contains("sync: docs: retrying in ") }.map(String.init) ?? ""
        #expect(retry.hasSuffix(" (backoff after 21 failed runs in a row)"), "\(daemon.log)")
        // At most the interval at level 1; more than a second at level 21 but once in millions.
        let withinASecond = retry.contains(#/retrying in (\d+ ms|1\.0 s) /#)
        #expect(withinASecond == (after == 1), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(try savedEntry(fixture)?[member: "backoffLevel"] == .int(after))
        #expect(try savedEntry(fixture)?[member: "consecutiveFailures"] == .int(21))
    }

    /// A job whose last run failed waits out its backoff after a restart, counted from that
    /// run's end (drawn anew), as it would have without the restart, and the log says so as at
    /// the run's end; it does not run at once because its interval has passed since the run's
    /// start. `ListJobs` shows the wait. A paused job stays paused, and the log says so; resumed,
    /// it keeps the backoff.
    @Test(arguments: [false, true])
    func aBackoffBeingWaitedOut_isWaitedOutAfterARestart(paused: Bool) throws {
        let fixture = Fixture()
        writeFailedRun(fixture, endedAgo: 1, with: paused ? #""paused": true, "# : "")
        let daemon = try fixture.start(schedule: Self.longBackoff)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let retry = daemon.log.split(separator: "\n").first { $0.contains("sync: docs: retrying in ") }.map(String.init) ?? ""
        #expect(retry.contains("notice  sync: docs: retrying in ")
            && retry.hasSuffix(" (backoff after 20 failed runs in a row, counted from the end of its last run docs-41)"
                + (paused ? "; it stays paused" : "")),
            "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        if paused { _ = try client.call("io.weavedi.Daemon.ResumeJob", [("name", .string("docs"))]) }
        let job = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        // Drawn up to about 6 days at level 20: less than 10 s but once in tens of thousands.
        #expect((job?[member: "nextRunIn"]?.numberValue ?? 0) > 10, "\(job.map { "\($0)" } ?? "no job")")
        #expect(job?[member: "lastRun"]?[member: "id"]?.stringValue == "docs-41", "\(job.map { "\($0)" } ?? "no job")")
        #expect(!daemon.log.contains("overdue"), "\(daemon.log)")
        if paused {
            #expect(daemon.waitForLog("notice  sync: docs resumed; next run in "), "\(daemon.log)")
            #expect(daemon.log.contains(" (backoff after 20 failed runs in a row)\n"), "\(daemon.log)")
        }
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Counters at the most the state file takes (a file edited, or years of failures) stay
    /// there: one more failure and one more run write what the next start reads again, and the
    /// job keeps its previous results. Before, the daemon wrote 2147483648 failures in a row,
    /// and the next start refused the job's entry (`expected an integer from 0 to 2147483647`).
    @Test func countersAtTheirMaximum_stayThere_andTheFileIsReadAgain() throws {
        let fixture = Fixture()
        let most = (failures: 2_147_483_647, run: 9_007_199_254_740_991)
        fixture.directory.write("state/jobs.json", #"{"lastRunNumber": \#(most.run), "jobs": {"docs": {"#
            + #""consecutiveFailures": \#(most.failures), "backoffLevel": \#(most.failures), "firstSeenAt": \#(Self.recently)}}}"#)
        let first = try fixture.start()
        try #require(first.waitForLog("ready;"), "\(first.log)")
        #expect(try runAndCheck(first).run == "failed", "\(first.log)")
        first.send(.terminate)
        #expect(first.wait() == .exited(0), "\(first.log)")
        #expect(first.log.contains("docs: run docs-\(most.run) failed"), "\(first.log)")
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: fixture.stateFile))))
        #expect(saved[member: "lastRunNumber"] == .int(most.run), "\(saved.serialized.prefix(2000))")
        #expect(try savedEntry(fixture)?[member: "consecutiveFailures"] == .int(most.failures))
        #expect(try savedEntry(fixture)?[member: "backoffLevel"] == .int(most.failures))

        let second = try fixture.start()
        try #require(second.waitForLog("ready;"), "\(second.log)")
        #expect(!second.log.contains(fixture.stateFile), "\(second.log)")
        let job = try VarlinkClient(path: second.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(job?[member: "consecutiveFailures"]?.intValue == most.failures, "\(job.map { "\($0)" } ?? "no job")")
        second.send(.terminate)
        #expect(second.wait() == .exited(0), "\(second.log)")
    }

    /// A job whose interval has passed since its last run started while the daemon was down
    /// (a weekly job on a host restarted nightly) is overdue at the start: it runs at once, and
    /// the log says why. Before, every start waited a whole interval again, and it never ran.
    @Test func aJobOverdueAtTheStart_runsAtOnce() throws {
        let fixture = Fixture()
        writeLastRun(fixture, startedAgo: 7200)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.waitForLog("docs: run docs-42 started"), "\(daemon.log)")
        #expect(daemon.log.contains("notice  sync: docs: overdue: its last run docs-41 started 2h 00m ago, more than its "
            + "interval (1h 00m): it runs now"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A job stale at the start (its last success more than 3 intervals ago, the daemon down
    /// meanwhile) is unhealthy, and its check says what comes next: at the start a run due now
    /// (or going, or, once that run has failed, its next run's time).
    @Test func aJobStaleAtTheStart_saysWhatComesNext() throws {
        let fixture = Fixture()
        let started = Date().timeIntervalSince1970 - 20_000
        fixture.directory.write("state/jobs.json", #"{"lastRunNumber": 41, "jobs": {"docs": {"consecutiveFailures": 0, "#
            + #""lastSuccess": \#(started + 1), "lastRun": {"id": "docs-41", "job": "docs", "result": "success", "#
            + #""startedAt": \#(started), "endedAt": \#(started + 1)}}}}"#)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog(#""job.docs": unknown -> unhealthy: "#), "\(daemon.log)")
        let line = daemon.log.split(separator: "\n").first { $0.contains(#""job.docs": unknown -> unhealthy: "#) }.map(String.init) ?? ""
        #expect(line.contains("unhealthy: no successful run for ") && line.contains(" s (more than 3 intervals); "), "\(daemon.log)")
        // Which depends on when the check first ran: before the run started, while it went, or
        // after it failed (the source is missing).
        let next = line.components(separatedBy: "intervals); ").last ?? ""
        #expect(["a run is due now", "run docs-42 is going"].contains(next) || next.hasPrefix("next run in "), "\(daemon.log)")
        try #require(daemon.waitForLog("docs: run docs-42 failed"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let message = try client.check("job.docs")?[member: "message"]?.stringValue ?? ""
        // Its backoff after the failure: full jitter over the interval.
        #expect(message.hasPrefix("no successful run for ") && message.contains("; next run in "), "\(message)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A job not yet due at the start waits what is left of its interval, counted from its
    /// last run's start (600 s ago: about 3000 s more), not a whole interval from the start.
    @Test func theNextRunAfterARestart_isCountedFromTheLastRunsStart() throws {
        let fixture = Fixture()
        writeLastRun(fixture, startedAgo: 600)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        let next = job?[member: "nextRunIn"]?.numberValue ?? -1
        // 3000 s less the time the start took; far from 3600 however slow the machine.
        #expect(next > 2000 && next <= 3000, "\(job.map { "\($0)" } ?? "no job")")
        #expect(!daemon.log.contains("run docs-42 started"), "\(daemon.log)")
        // The last run the file keeps is the metrics' too, with no run in this process.
        let metrics = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.GetMetrics").parameter("text")?.stringValue ?? ""
        #expect(metrics.contains(#"weavedi_sync_last_run_result{job="docs",result="success"} 1"#), "\(metrics)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A last run that started in the future (the clock was set back, or the file was edited)
    /// has the next run counted from now: it waits an interval at most, the log says why, and
    /// the run's own times stay in the file as they were (they are its history).
    @Test func aLastRunStartedInTheFuture_isCountedFromNow() throws {
        let fixture = Fixture()
        // 2 h and a half minute ahead: still "2h 00m" once the start has taken its time.
        writeLastRun(fixture, startedAgo: -7230)
        let written = fixture.directory.read("state/jobs.json")
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains(#"warning sync: \#(fixture.stateFile): job "docs": lastRun.startedAt is 2h 00m in the future "#
            + "(the clock was set back?); its next run is counted from now"), "\(daemon.log)")
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        let next = job?[member: "nextRunIn"]?.numberValue ?? -1
        #expect(next > 2000 && next <= 3600, "\(job.map { "\($0)" } ?? "no job")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(daemon.log.components(separatedBy: "in the future").count == 2, "\(daemon.log)")
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: fixture.stateFile))))
        let before = try JSONValue.parse(Array(try #require(written).utf8))
        for time in ["startedAt", "endedAt"] {
            let run = (saved: saved[member: "jobs"]?[member: "docs"]?[member: "lastRun"], before: before[member: "jobs"]?[member: "docs"]?[member: "lastRun"])
            #expect(run.saved?[member: time]?.numberValue == run.before?[member: time]?.numberValue, "\(time)")
        }
    }

    /// A job that never ran, first seen in the future (a clock set back), is taken as first
    /// seen now: its first run waits an interval at most, the log says why, and the state file
    /// says now at once. Before, the time stayed, and every start counted from it again.
    @Test func aJobFirstSeenInTheFuture_isFirstSeenNow() throws {
        let fixture = Fixture()
        let ahead = Date().timeIntervalSince1970.rounded(.down) + 7230
        fixture.directory.write("state/jobs.json", #"{"jobs": {"docs": {"consecutiveFailures": 0, "firstSeenAt": \#(ahead)}}}"#)
        let before = Date().timeIntervalSince1970.rounded(.down)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains(#"warning sync: \#(fixture.stateFile): job "docs": firstSeenAt is 2h 00m in the future "#
            + "(the clock was set back?); its next run is counted from now"), "\(daemon.log)")
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        let next = job?[member: "nextRunIn"]?.numberValue ?? -1
        #expect(next > 2000 && next <= 3600, "\(job.map { "\($0)" } ?? "no job")")
        // Written at the start, with no run (none is due for an hour): a daemon killed keeps it.
        let deadline = ContinuousClock.now + .seconds(30)
        while (try firstSeenAt(fixture) ?? ahead) >= ahead, ContinuousClock.now < deadline { usleep(20_000) }
        daemon.send(.kill)
        _ = daemon.wait()
        let seen = try #require(try firstSeenAt(fixture))
        #expect(seen >= before && seen <= Date().timeIntervalSince1970, "\(seen)")
    }

    /// The time the daemon first had the job, as the state file says it (`firstSeenAt`).
    func firstSeenAt(_ fixture: Fixture) throws -> Double? {
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: fixture.stateFile))))
        return saved[member: "jobs"]?[member: "docs"]?[member: "firstSeenAt"]?.numberValue
    }

    /// A job that has never run has its first run counted from when the daemon first had it
    /// (`firstSeenAt`): first seen two hours ago, with an interval of one, it is overdue at the
    /// start, runs at once, and the log says why; the time stays in the file. Before, every
    /// start waited a whole interval again: a weekly job on a host restarted nightly never ran.
    @Test func aJobThatNeverRan_isCountedFromWhenItWasFirstSeen() throws {
        let fixture = Fixture()
        let seen = Double(Int(Date().timeIntervalSince1970) - 7200)
        fixture.directory.write("state/jobs.json", #"{"jobs": {"docs": {"consecutiveFailures": 0, "firstSeenAt": \#(seen)}}}"#)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.waitForLog("docs: run docs-1 started"), "\(daemon.log)")
        #expect(daemon.log.contains("notice  sync: docs: overdue: it has never run, and was first seen 2h 00m ago, more than its "
            + "interval (1h 00m): it runs now"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(try firstSeenAt(fixture) == seen)
    }

    /// A job the daemon has not had before is first seen at the start, and the state file says
    /// so at once, with no run (a daemon killed then keeps it): the next start counts the
    /// job's first run from that time, not from its own, and writes it again unchanged.
    @Test func aNewJob_isFirstSeenAtTheStart_andKeepsThatTimeAcrossRestarts() throws {
        let fixture = Fixture()
        let before = Date().timeIntervalSince1970.rounded(.down)
        let first = try fixture.start()
        try #require(first.waitForLog("ready;"), "\(first.log)")
        #expect(fixture.directory.read("state/jobs.json", once: "firstSeenAt") != nil, "\(first.log)")
        first.send(.kill)
        _ = first.wait()
        let seen = try #require(try firstSeenAt(fixture))
        #expect(seen >= before && seen <= Date().timeIntervalSince1970, "\(seen)")

        let second = try fixture.start()
        try #require(second.waitForLog("ready;"), "\(second.log)")
        #expect(!second.log.contains("overdue"), "\(second.log)")
        second.send(.terminate)
        #expect(second.wait() == .exited(0), "\(second.log)")
        #expect(try firstSeenAt(fixture) == seen)
    }

    /// An entry without `firstSeenAt` (a file written before it was kept), or with one no run
    /// writes (said in the log, that field alone dropped), has the job first seen at this
    /// start: it waits an interval, and the file says when. So does one with an `unfinished`
    /// no run writes, dropped alone likewise.
    @Test(arguments: [
        (#""paused": false"#, nil),
        (#""firstSeenAt": -1"#, "firstSeenAt: expected a time in seconds since 1970, got -1"),
        (#""firstSeenAt": "yesterday""#, #"firstSeenAt: expected a time in seconds since 1970, got "yesterday""#),
        (#""unfinished": "yes""#, #"unfinished: expected true or false, got "yes""#),
    ] as [(String, String?)])
    func anEntryWithoutAFirstSeenTime_isFirstSeenNow(field: String, problem: String?) throws {
        let fixture = Fixture()
        fixture.directory.write("state/jobs.json", #"{"jobs": {"docs": {"consecutiveFailures": 2, \#(field)}}}"#)
        let before = Date().timeIntervalSince1970.rounded(.down)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        if let problem {
            #expect(daemon.log.contains(#"warning sync: \#(fixture.stateFile): job "docs": \#(problem); that field is dropped, "#
                + "the job keeps the rest of its previous results"), "\(daemon.log)")
        }
        #expect(!daemon.log.contains("overdue"), "\(daemon.log)")
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(job?[member: "consecutiveFailures"]?.intValue == 2, "\(job.map { "\($0)" } ?? "no job")")
        #expect((job?[member: "nextRunIn"]?.numberValue ?? 0) > 2000, "\(job.map { "\($0)" } ?? "no job")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        let seen = try #require(try firstSeenAt(fixture))
        #expect(seen >= before && seen <= Date().timeIntervalSince1970, "\(seen)")
    }

    /// A count of `changingFiles` no run writes is dropped with that field alone, and the log
    /// names it by its path, quoted as every message quotes one: a name of the mirrored tree
    /// (a newline in it here) can forge no line. Before, the path stood raw in the line.
    @Test(arguments: [
        (#""a\nb": -1"#, #"changingFiles.files["a\nb"]: expected an integer from 0 to 2147483647, got -1"#),
        (#""x": 0"#, #"changingFiles.files["x"]: expected an integer from 1, got 0"#),
    ])
    func aChangingFilesCountNoRunWrites_isDropped_namedByItsQuotedPath(files: String, problem: String) throws {
        let fixture = Fixture()
        fixture.directory.write("state/jobs.json", #"""
            {"jobs": {"docs": {"consecutiveFailures": 2, "changingFiles": {"source": "\#(fixture.directory.path)/source",
              "destination": "\#(fixture.directory.path)/mirror", "files": {\#(files)}}}}}
            """#)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains(#"warning sync: \#(fixture.stateFile): job "docs": \#(problem); that field is dropped, "#
            + "the job keeps the rest of its previous results"), "\(daemon.log)")
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(job?[member: "consecutiveFailures"]?.intValue == 2, "\(job.map { "\($0)" } ?? "no job")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A pause or a resume the state file cannot take (here a directory in its place, which
    /// fails as root too, as a full file system does) is reported: weavedictl prints the change,
    /// then a warning naming the file and the error, and exits 75; the change holds in the
    /// daemon. Before, it said `paused` and exited 0, and a restart resumed the job.
    @Test(arguments: [("pause-job", "paused", "a restart would resume the job"),
                      ("resume-job", "resumed", "a restart would pause the job again")])
    func aPauseOrResumeThatCannotBeSaved_isReported(command: String, verb: String, undo: String) throws {
        let fixture = Fixture()
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        if command == "resume-job" {
            _ = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.PauseJob", [("name", .string("docs"))])
        }
        // The start writes the file as it first sees the job, off the scheduler: that write
        // (and the pause above, answered once written) is over before a directory takes the
        // file's place, or it would put the file back in the way of the directory.
        let deadline = ContinuousClock.now + .seconds(30)
        while !(FileManager.default.contents(atPath: fixture.stateFile).map { String(decoding: $0, as: UTF8.self).contains("firstSeenAt") } ?? false),
            ContinuousClock.now < deadline
        {
            usleep(10_000)
        }
        // The pause above wrote the file: a directory takes its place.
        try? FileManager.default.removeItem(atPath: fixture.stateFile)
        try FileManager.default.createDirectory(atPath: fixture.stateFile + "/in-the-way", withIntermediateDirectories: true)
        let ctl = try CtlRun.run(["--socket", daemon.defaultSocket, command, "docs"])
        #expect(ctl.code == 75, "\(ctl.all)")
        #expect(ctl.output == "job docs: \(verb)\n", "\(ctl.all)")
        #expect(ctl.error.hasPrefix("weavedictl: warning: job docs is \(verb), but not saved: cannot write the jobs' state file "
            + "\"\(fixture.stateFile)\": "), "\(ctl.all)")
        #expect(ctl.error.contains("; it holds until the daemon stops, but \(undo)"), "\(ctl.all)")
        let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
        #expect(job?[member: "paused"] == .bool(command == "pause-job"), "\(job.map { "\($0)" } ?? "no job")")

        // Once the way is clear, asking again saves it, and says nothing more.
        try FileManager.default.removeItem(atPath: fixture.stateFile)
        let again = try CtlRun.run(["--socket", daemon.defaultSocket, command, "docs"])
        #expect(again.code == 0 && again.error.isEmpty, "\(again.all)")
        let saved = try JSONValue.parse(Array(try #require(FileManager.default.contents(atPath: fixture.stateFile))))
        #expect(saved[member: "jobs"]?[member: "docs"]?[member: "paused"] == .bool(command == "pause-job"), "\(saved)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A damaged state file is kept aside as `jobs.json.corrupt` before anything replaces it,
    /// and the warning names that copy and says that pauses are lost too; a later damaged file
    /// replaces the copy (one at most). Before, the next write destroyed it.
    @Test func aDamagedStateFile_isKeptAside_andTheWarningSaysPausesAreLost() throws {
        let fixture = Fixture()
        let copy = fixture.state + "/jobs.json.corrupt"
        for round in 1...2 {
            let whole = #"{"lastRunNumber": \#(round), "jobs": {"docs": {"consecutiveFailures": 0, "paused": true}}}"#
            let damaged = String(whole.dropLast(3))
            fixture.directory.write("state/jobs.json", damaged)
            let daemon = try fixture.start()
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            #expect(daemon.log.contains("warning sync: \(fixture.stateFile): "), "\(daemon.log)")
            #expect(daemon.log.contains("; starting without the jobs' previous results (their last runs, and their pauses: a job "
                + "paused before is scheduled again), and run ids start again at NAME-1 (they may repeat ids in older logs); the "
                + "damaged file is kept as \"\(copy)\" (replacing an earlier copy, if any)"), "\(daemon.log)")
            #expect(fixture.directory.read("state/jobs.json.corrupt") == damaged)
            #expect(try runID(daemon) == "docs-1", "\(daemon.log)")
            daemon.send(.terminate)
            #expect(daemon.wait() == .exited(0), "\(daemon.log)")
            #expect(fixture.directory.read("state/jobs.json.corrupt") == damaged)
            #expect(fixture.directory.read("state/jobs.json")?.contains(#""lastRunNumber":1"#) == true)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.state).filter { $0.hasPrefix("jobs.json") }.sorted()
        #expect(names == ["jobs.json", "jobs.json.corrupt"], "\(names)")
    }

    /// `sync.stateFile`'s advice fits what became of the file: one that could not be parsed is
    /// kept as `jobs.json.corrupt`, nothing stands in the way and nothing is to mend, so the
    /// check says where the copy is and that the jobs started afresh; one that could not be read
    /// (here a directory in its place) stays, and the check says to move it away or mend the
    /// permissions. Before, the damaged file got the advice for an unreadable one.
    @Test func theStateFileCheck_givesAdviceThatFits_aDamagedFile_andAnUnreadableOne() throws {
        func health(_ daemon: DaemonProcess) throws -> (status: String?, message: String, data: JSONValue?) {
            let check = try stateFileCheck(daemon)
            return (check?[member: "status"]?.stringValue, check?[member: "message"]?.stringValue ?? "", check?[member: "data"])
        }
        let damaged = Fixture()
        damaged.directory.write("state/jobs.json", "{broken")
        var daemon = try damaged.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        var found = try health(daemon)
        let copy = damaged.state + "/jobs.json.corrupt"
        #expect(found.status == "degraded", "\(found)")
        #expect(found.message.hasPrefix("could not use the jobs' state file \"\(damaged.stateFile)\" at the start: "), "\(found)")
        #expect(found.message.contains(
            "; it was kept as \"\(copy)\", and the jobs started without their last results and pauses (a job paused before is "
                + "scheduled again), and run ids started again at NAME-1 (they may repeat ids in older logs); a write makes a new "
                + "file (at the next run's start, or now: weavedictl fix sync.stateFile); the kept copy is not read again"), "\(found)")
        #expect(!found.message.contains("permissions"), "\(found)")
        #expect(!found.message.contains("stands in the file's place"), "\(found)")
        #expect(found.data?[member: "copy"]?.stringValue == copy, "\(found)")
        #expect(damaged.directory.read("state/jobs.json.corrupt") == "{broken")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")

        let unreadable = Fixture()
        try FileManager.default.createDirectory(atPath: unreadable.stateFile, withIntermediateDirectories: true)
        daemon = try unreadable.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        found = try health(daemon)
        #expect(found.status == "degraded", "\(found)")
        #expect(found.message.hasPrefix("could not read the jobs' state file \"\(unreadable.stateFile)\" at the start: "), "\(found)")
        #expect(found.message.contains(
            "; the jobs started without their last results and pauses (a job paused before is scheduled again), and run ids "
                + "started again at NAME-1 (they may repeat ids in older logs): move away what stands in the file's place, or mend "
                + "its directory's permissions; a write replaces the file (at the next run's start, or now: weavedictl fix "
                + "sync.stateFile)"), "\(found)")
        #expect(!found.message.contains("corrupt"), "\(found)")
        #expect(!fileExists(unreadable.state + "/jobs.json.corrupt"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A state file that is JSON of another shape (not an object, or `jobs` not one) is damaged
    /// too: logged, and kept aside as `jobs.json.corrupt`. Before, it was taken for an empty
    /// file, silently, and the next write destroyed it.
    @Test(arguments: [
        ("[]", "expected an object, got []"),
        (#"{"lastRunNumber": 3, "jobs": []}"#, "jobs: expected an object, got []"),
        (#"{"jobs": "docs"}"#, #"jobs: expected an object, got "docs""#),
    ])
    func aStateFileOfAnotherShape_isDamaged_andKeptAside(contents: String, problem: String) throws {
        let fixture = Fixture()
        fixture.directory.write("state/jobs.json", contents)
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains("warning sync: \(fixture.stateFile): \(problem); starting without the jobs' previous results"),
                "\(daemon.log)")
        #expect(daemon.log.contains("; the damaged file is kept as "), "\(daemon.log)")
        #expect(fixture.directory.read("state/jobs.json.corrupt") == contents)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A file without `lastRunNumber` (as written before it was kept) has the ids go on after
    /// the highest of its jobs' last runs; a `lastRunNumber` no run writes is reported and
    /// left behind.
    @Test(arguments: [
        (#""jobs": {"docs": \#(Self.lastRun("docs-41")), "gone": \#(Self.lastRun("gone-7", job: "gone"))}"#, "docs-42", nil),
        (#""lastRunNumber": 99, "jobs": {"docs": \#(Self.lastRun("docs-41"))}"#, "docs-100", nil),
        (#""lastRunNumber": 7, "jobs": {"docs": \#(Self.lastRun("docs-41"))}"#, "docs-42", nil),
        (#""jobs": {"docs": \#(Self.lastRun("docs-x41")), "other": \#(Self.lastRun("docs-50"))}"#, "docs-1", nil),
        (#""lastRunNumber": -5, "jobs": {"docs": \#(Self.lastRun("docs-41"))}"#, "docs-42",
         "lastRunNumber: expected an integer from 0 to 9007199254740991, got -5; run ids go on after the highest of the jobs' last runs (the next is NAME-42)"),
        (#""lastRunNumber": 9223372036854775807, "jobs": {}"#, "docs-1",
         "lastRunNumber: expected an integer from 0 to 9007199254740991, got 9223372036854775807; run ids go on after the highest of the jobs' last runs (the next is NAME-1)"),
        (#""lastRunNumber": "12", "jobs": {"docs": \#(Self.lastRun("docs-99999999999999999999"))}"#, "docs-1",
         #"lastRunNumber: expected an integer from 0 to 9007199254740991, got "12"; run ids go on after the highest of the jobs' last runs (the next is NAME-1)"#),
    ])
    func runIDs_goOnFromTheStateFile(contents: String, next: String, problem: String?) throws {
        let fixture = Fixture()
        fixture.directory.write("state/jobs.json", "{\(contents)}")
        let daemon = try fixture.start()
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(try runID(daemon) == next, "\(daemon.log)")
        if let problem {
            #expect(daemon.log.contains("warning sync: \(fixture.stateFile): \(problem)"), "\(daemon.log)")
        } else {
            #expect(!daemon.log.contains("lastRunNumber"), "\(daemon.log)")
        }
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A job's entry whose last run has the id `id`.
    static func lastRun(_ id: String, job: String = "docs") -> String {
        #"{"consecutiveFailures": 0, "lastRun": {"id": "\#(id)", "job": "\#(job)", "result": "success", "startedAt": \#(recently), "endedAt": \#(recently + 1)}}"#
    }

    /// A few seconds ago: a last run that started then is not overdue (interval 3600), and no
    /// run starts at the start beside the test's.
    static var recently: Int { Int(Date().timeIntervalSince1970) - 10 }
}
