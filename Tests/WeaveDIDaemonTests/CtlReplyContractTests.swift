import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIDaemon
@testable import weavedictl

/// A reply that lacks a member the daemon always sends (one the interface does not mark `?`),
/// or has one of the wrong type, is no valid reply: exit 69, the member named by its path,
/// nothing on standard output, rather than empty results and exit 0 (`No issues`, `healthy`,
/// `configuration reloaded`).
@Suite struct CtlReplyContractTests {
    /// A reply's parameters, written as JSON, served for `method` by a fake daemon; weavedictl
    /// run with `arguments` must refuse it with `reason`.
    private func expectRefused(_ arguments: [String], method: String, parameters: String, reason: String) throws {
        let fake = try FakeDaemon(raw: [method: [Array(#"{"parameters":\#(parameters)}"#.utf8) + [0]]])
        for json in [false, true] {
            let run = try CtlRun.run(["--socket", fake.socket] + (json ? ["--json"] : []) + arguments)
            #expect(run.code == 69, "\(arguments) \(parameters): \(run.all)")
            #expect(run.output.isEmpty, "\(arguments) \(parameters): \(run.all)")
            #expect(run.error.hasPrefix("weavedictl: the reply of io.weavedi.Daemon.\(method) from \(fake.socket) is not a valid reply to it: "
                + reason + "\n"), "\(arguments) \(parameters): \(run.error)")
        }
    }

    /// `health` and `check` (a `Health`), the cases of the hostile-reply review among them.
    @Test func health_anIncompleteOrIllTypedHealth_exits69() throws {
        // A Check whole but for its status, with `members` added.
        func check(_ members: String = #","status":"healthy""#) -> String {
            #"{"name":"a","tags":[],"message":"","data":{},"duration":0.1,"lastRun":1000,"lastSuccess":1000,"lastFailure":null,"#
                + #""consecutiveFailures":0,"fixable":false,"fixesTried":0,"breaker":"closed"\#(members)}"#
        }
        func health(checks: String) -> String {
            #"{"health":{"status":"healthy","score":100,"takenAt":1000,"checks":\#(checks)}}"#
        }
        let cases: [(String, String)] = [
            ("{}", #""health" must be a Health object, it is missing"#),
            (#"{"health":[]}"#, #""health" must be a Health object, got array"#),
            (#"{"health":{"status":"healthy"}}"#, #""health.score" must be an integer from 0 to 100, it is missing"#),
            (#"{"health":{"status":"healthy","score":1e400,"takenAt":"x","checks":[1,2,null]}}"#,
                #""health.score" must be an integer from 0 to 100, got 1e400"#),
            (#"{"health":{"status":"healthy","score":100,"takenAt":"x","checks":[1,2,null]}}"#,
                #""health.takenAt" must be a number, got string"#),
            (#"{"health":{"status":"healthy","score":100,"takenAt":1,"checks":[1,2,null]}}"#,
                #""health.checks[0]" must be a Check object, got 1"#),
            (#"{"health":{"status":"great","score":100,"takenAt":1,"checks":[]}}"#,
                #""health.status" must be "healthy", "degraded" or "unhealthy", got "great""#),
            (#"{"health":{"status":"healthy","score":101,"takenAt":1,"checks":[]}}"#,
                #""health.score" must be an integer from 0 to 100, got 101"#),
            (health(checks: "[\(check()),null]"), #""health.checks[1]" must be a Check object, got null"#),
            (health(checks: "[\(check(#","status":"fine""#))]"),
                #""health.checks[0].status" must be "healthy", "degraded" or "unhealthy" or null, got "fine""#),
            (health(checks: #"[{"name":"a","status":"healthy"}]"#), #""health.checks[0].tags" must be an array, it is missing"#),
            (health(checks: "[\(check().replacing(#""data":{}"#, with: #""data":{"k":1}"#))]"), #""health.checks[0].data["k"]" must be a string, got 1"#),
            (health(checks: "[\(check().replacing(#""fixable":false"#, with: #""fixable":"no""#))]"), #""health.checks[0].fixable" must be a boolean, got string"#),
        ]
        for (parameters, reason) in cases {
            try expectRefused(["health"], method: "GetHealth", parameters: parameters, reason: reason)
        }
        try expectRefused(["check"], method: "RunChecks", parameters: "{}", reason: #""health" must be a Health object, it is missing"#)
        // Whole, it is shown; a check not run yet (null status) is pending, and a status that
        // contradicts the checks is the daemon's to answer for, not weavedictl's to mend.
        let whole = try FakeDaemon(raw: ["GetHealth": [Array(#"{"parameters":\#(health(checks: "[\(check(#","status":null"#))]"))}"#.utf8) + [0]]])
        let pending = try CtlRun.run(["--socket", whole.socket, "health"])
        #expect(pending.code == 0 && pending.output.contains("pending"), "\(pending.all)")
        let contradicting = try FakeDaemon(raw: ["GetHealth": [
            Array(#"{"parameters":\#(health(checks: "[\(check(#","status":"unhealthy""#))]"))}"#.utf8) + [0],
        ]])
        let run = try CtlRun.run(["--socket", contradicting.socket, "health"])
        #expect(run.code == 0 && run.output.hasPrefix("Health: healthy"), "\(run.all)")
    }

    /// `check-cycles` and `diagnose-components`: a reply without its findings is no finding of
    /// none.
    @Test func findings_anIncompleteOrIllTypedReport_exits69() throws {
        let cases: [([String], String, String, String)] = [
            (["check-cycles"], "CheckCycles", "{}", #""componentCount" must be an integer, it is missing"#),
            (["check-cycles"], "CheckCycles", #"{"componentCount":1,"edgeCount":0}"#, #""cycles" must be an array, it is missing"#),
            (["check-cycles"], "CheckCycles", #"{"componentCount":1,"edgeCount":0,"cycles":[[1]]}"#, #""cycles[0][0]" must be a string, got 1"#),
            (["check-cycles"], "CheckCycles", #"{"componentCount":1,"edgeCount":0,"cycles":[],"notBuilt":null}"#,
                #""notBuilt" must be an array, got null"#),
            (["diagnose-components"], "DiagnoseComponents", "{}", #""issues" must be an array, it is missing"#),
            (["diagnose-components"], "DiagnoseComponents", #"{"issues":[{"type":"A"}]}"#, #""issues[0].kind" must be a string, it is missing"#),
        ]
        for (arguments, method, parameters, reason) in cases {
            try expectRefused(arguments, method: method, parameters: parameters, reason: reason)
        }
    }

    /// The lists (`fix`, `fixes`, `jobs`, `jobs NAME`, `sessions`, `registrations`): a reply
    /// without its list, or with an element that lacks what every element has.
    @Test func lists_anIncompleteOrIllTypedList_exits69() throws {
        let cases: [([String], String, String, String)] = [
            (["fix"], "Fix", "{}", #""fixes" must be an array, it is missing"#),
            (["fixes"], "ListFixes", "{}", #""fixes" must be an array, it is missing"#),
            (["fixes"], "ListFixes", #"{"fixes":[{"check":"a","outcome":"succeeded"}]}"#, #""fixes[0].time" must be a number, it is missing"#),
            (["jobs"], "ListJobs", "{}", #""jobs" must be an array, it is missing"#),
            (["jobs", "docs"], "ListJobs", #"{"jobs":[{"name":"docs"}]}"#, #""jobs[0].kind" must be a string, it is missing"#),
            (["jobs"], "ListJobs", #"{"jobs":[\#(Self.job),"lastRun":{"id":"x","result":"success"}}]}"#,
                #""jobs[0].lastRun.job" must be a string, it is missing"#),
            (["jobs"], "ListJobs", #"{"jobs":[\#(Self.job),"queued":{"runsGoing":"2"}}]}"#,
                #""jobs[0].queued.runsGoing" must be an integer, got string"#),
            (["sessions"], "ListSessions", "{}", #""sessions" must be an array, it is missing"#),
            (["sessions"], "ListSessions", #"{"sessions":[{"id":"s1","age":1}]}"#, #""sessions[0].kind" must be a string, it is missing"#),
            (["registrations"], "ListRegistrations", "{}", #""registrations" must be an array, it is missing"#),
        ]
        for (arguments, method, parameters, reason) in cases {
            try expectRefused(arguments, method: method, parameters: parameters, reason: reason)
        }
    }

    /// A `Job` whole but for the closing brace, to add members to.
    private static let job = #"{"name":"docs","kind":"mirror","enabled":true,"paused":false,"running":false,"interval":300,"#
        + #""consecutiveFailures":0,"skippedRuns":0"#

    /// The replies that only say what was done or what is set (`reload`, `log-level`,
    /// `metrics`, `ping`, `pause-job`, `resume-job`): a reply without it says nothing was done.
    @Test func simpleReplies_anIncompleteOrIllTypedReply_exits69() throws {
        let cases: [([String], String, String, String)] = [
            (["reload"], "Reload", "{}", #""status" must be a string, it is missing"#),
            (["reload"], "Reload", #"{"status":5}"#, #""status" must be a string, got 5"#),
            (["log-level"], "GetLogLevel", "{}", #""level" must be a string, it is missing"#),
            (["log-level", "all"], "SetLogLevel", #"{"level":"all"}"#, #""filter" must be a string, it is missing"#),
            (["metrics"], "GetMetrics", "{}", #""text" must be a string, it is missing"#),
            (["ping"], "Ping", "{}", #""version" must be a string, it is missing"#),
            (["ping"], "Ping", #"{"version":"1","pid":1,"uptime":1e400}"#, #""uptime" must be a number of seconds, 0 or more, got 1e400"#),
            (["pause-job", "docs"], "PauseJob", #"{"notSaved":false}"#, #""notSaved" must be a string or null, got boolean"#),
            (["resume-job", "docs"], "ResumeJob", #"{"notSaved":1}"#, #""notSaved" must be a string or null, got 1"#),
        ]
        for (arguments, method, parameters, reason) in cases {
            try expectRefused(arguments, method: method, parameters: parameters, reason: reason)
        }
        // `version` says the daemon sent no valid reply, and still exits 0.
        let fake = try FakeDaemon(raw: ["Ping": [Array(#"{"parameters":{}}"#.utf8) + [0]]])
        let version = try CtlRun.run(["--socket", fake.socket, "version"])
        #expect(version.code == 0 && version.output.contains(#"is not a valid reply to it: "version" must be a string, it is missing)"#),
            "\(version.all)")
    }

    /// `run-job`: a run without what every run has is no success; a last reply without its run,
    /// or a start answered with neither the run's id nor a run that did not start, says
    /// nothing of the run.
    @Test func runJob_anIncompleteRun_exits69() throws {
        let cases: [([String], String, String)] = [
            (["run-job", "docs", "--wait"], #"{"run":{"id":"x","result":"success"}}"#, #""run.job" must be a string, it is missing"#),
            (["run-job", "docs", "--wait"], "{}", #""run" must be a JobRun object, it is missing"#),
            (["run-job", "docs", "--wait"], #"{"run":null,"progress":null}"#, #""run" must be a JobRun object, got null"#),
            (["run-job", "docs", "--wait"], #"{"run":null,"progress":{"filesDone":1}}"#, #""progress.filesTotal" must be an integer, it is missing"#),
            (["run-job", "docs"], "{}", #""run" must be a JobRun object when there is no "runId", it is missing"#),
            (["run-job", "docs"], #"{"runId":5}"#, #""runId" must be a string or null, got 5"#),
            (["run-job", "docs"], #"{"runId":"docs-1","queued":{"runsGoing":1}}"#, #""queued.maxConcurrentRuns" must be an integer, it is missing"#),
        ]
        for (arguments, parameters, reason) in cases {
            try expectRefused(arguments, method: "RunJob", parameters: parameters, reason: reason)
        }
    }
}

/// The contract itself, read from the interface description.
@Suite struct CtlReplyContractUnitTests {
    /// What a real daemon answers to every method weavedictl calls passes the contract: the
    /// encoders send every member the interface does not mark optional, of its type (the fakes
    /// above are written by hand; this reads the daemon's own replies, a run of its example job's
    /// among them).
    @Test func aRealDaemonsReplies_passTheContract() throws {
        let daemon = try readyDaemon()
        let calls: [(String, String)] = [
            ("Ping", "{}"), ("GetHealth", "{}"), ("RunChecks", "{}"), ("ListFixes", "{}"), ("ListSessions", "{}"),
            ("ListRegistrations", "{}"), ("DiagnoseComponents", "{}"), ("CheckCycles", "{}"), ("GetLogLevel", "{}"),
            ("SetLogLevel", #"{"level":"all"}"#), ("GetMetrics", "{}"), ("Reload", "{}"), ("Fix", "{}"),
            ("RunJob", #"{"name":"example","detach":true}"#), ("PauseJob", #"{"name":"example"}"#),
            ("ResumeJob", #"{"name":"example"}"#), ("RunJob", #"{"name":"example"}"#), ("ListJobs", "{}"),
        ]
        for (method, parameters) in calls {
            let reply = try #require(daemon.sendCall(method, parameters).varlinkReply(), "\(method): no reply")
            #expect(reply.error == nil, "\(method): \(reply)")
            let problem = ReplyContract.daemon.problem(inReplyTo: method, .object(reply.parameters))
            #expect(problem == nil, "\(method): \(problem ?? "") in \(reply)")
        }
    }

    /// Every method a subcommand calls is in the description, so its replies are checked; and
    /// the objects the fakes send whole pass.
    @Test func everyMethodCalled_hasAReplyContract_andWholeObjectsPass() throws {
        let contract = ReplyContract.daemon
        for method in ["Ping", "GetHealth", "RunChecks", "Fix", "ListFixes", "ListJobs", "RunJob", "PauseJob", "ResumeJob",
            "ListSessions", "ListRegistrations", "DiagnoseComponents", "CheckCycles", "GetLogLevel", "SetLogLevel", "GetMetrics", "Reload"]
        {
            #expect(contract.replies[method] != nil, "\(method)")
        }
        let wholes: [(String, [(String, JSONValue)])] = [
            ("GetHealth", [("health", .health([.check]))]), ("ListJobs", [("jobs", .array([.job.with([("lastRun", .jobRun)])]))]),
            ("ListSessions", [("sessions", .array([.session]))]), ("ListFixes", [("fixes", .array([.fix]))]),
            ("ListRegistrations", [("registrations", .array([.registration]))]), ("DiagnoseComponents", [("issues", .array([.issue]))]),
            ("RunJob", [("run", .jobRun), ("progress", .null)]),
            // A daemon older than notBuilt does not send it.
            ("CheckCycles", [("componentCount", .int(1)), ("edgeCount", .int(0)), ("cycles", .array([]))]),
        ]
        for (method, parameters) in wholes {
            #expect(contract.problem(inReplyTo: method, .object(parameters)) == nil, "\(method)")
        }
        // An integer written as a float is that integer, as for the daemon.
        #expect(contract.problem(inReplyTo: "Ping", .object([("version", .string("1")), ("pid", .double(812)), ("uptime", .int(0))])) == nil)
        // Types the description does not use are read too.
        let other = ReplyContract(description: """
            interface com.example.T
            type Color (red, green)
            method M() -> (c: Color, o: object, m: [string]?int, s: (x: ?Color))
            """)
        #expect(other.problem(inReplyTo: "M", .object([
            ("c", .string("red")), ("o", .object([])), ("m", .object([("a", .null)])), ("s", .object([])),
        ])) == nil)
        #expect(other.problem(inReplyTo: "M", .object([("c", .string("blue"))])) == #""c" must be "red" or "green", got "blue""#)
        #expect(other.problem(inReplyTo: "M", .object([("c", .string("red")), ("o", .object([])), ("m", .object([])), ("s", .object([("x", .int(1))]))]))
            == #""s.x" must be "red" or "green" or null, got 1"#)
    }
}

/// A reply whole but for a name weavedictl does not know (a status a newer daemon added) is
/// still no valid reply (exit 69); from what says it is weavedid (`GetInfo`), the hint is the
/// versions of the two, not whether this is weavedid's socket.
@Suite struct CtlReplyVersionTests {
    /// `org.varlink.service.GetInfo`'s reply, written as JSON.
    private static func info(product: String = "weavedid", version: String, interfaces: [String] = ["org.varlink.service", DaemonInterface.name]) -> [UInt8] {
        let names = interfaces.map { JSONValue.string($0).serialized }.joined(separator: ",")
        return Array(#"{"parameters":{"vendor":"WeaveDI","product":"\#(product)","version":"\#(version)","url":"file:///","interfaces":[\#(names)]}}"#.utf8) + [0]
    }

    /// `GetHealth`'s reply, whole, with `health` (its status `recovering` by default) and a check.
    private static func health(status: String = "recovering", checkStatus: String = "healthy", score: String = #""score":100,"#) -> [UInt8] {
        let check = JSONValue.check.with([("status", .string(checkStatus))]).serialized
        return Array(#"{"parameters":{"health":{"status":"\#(status)",\#(score)"takenAt":1000,"checks":[\#(check)]}}}"#.utf8) + [0]
    }

    private static let statuses = #""healthy", "degraded" or "unhealthy""#

    /// The first line of the error for a reply of GetHealth from `fake`.
    private static func refusal(_ fake: FakeDaemon, _ reason: String) -> String {
        "weavedictl: the reply of io.weavedi.Daemon.GetHealth from \(fake.socket) is not a valid reply to it: \(reason)\n"
    }

    private static let socketHint = "Is this weavedid's control socket? Pass the socket's path with --socket PATH (control.socket in its configuration).\n"

    @Test func anUnknownStatus_fromAWeavedidOfAnotherVersion_namesBothVersions() throws {
        let cases: [([UInt8], String)] = [
            (Self.health(), #""health.status" must be \#(Self.statuses), got "recovering""#),
            (Self.health(status: "healthy", checkStatus: "recovering"), #""health.checks[0].status" must be \#(Self.statuses) or null, got "recovering""#),
        ]
        for (reply, reason) in cases {
            let fake = try FakeDaemon(raw: ["GetHealth": [reply], "GetInfo": [Self.info(version: "9.1.0")]])
            for json in [false, true] {
                let run = try CtlRun.run(["--socket", fake.socket, "health"] + (json ? ["--json"] : []))
                #expect(run.code == 69 && run.output.isEmpty, "\(run.all)")
                #expect(run.error == Self.refusal(fake, reason)
                    + "weavedid 9.1.0 answers there, and this is weavedictl \(DaemonVersion.current): a weavedid of another version may send "
                    + "values this weavedictl does not know (a newer one may add some): use the weavedictl built with that weavedid "
                    + "(weavedictl 9.1.0).\n", "\(run.error)")
            }
        }
        // Of the same version, one of the two is built from other sources.
        let same = try FakeDaemon(raw: ["GetHealth": [Self.health()], "GetInfo": [Self.info(version: DaemonVersion.current)]])
        let run = try CtlRun.run(["--socket", same.socket, "health"])
        #expect(run.code == 69, "\(run.all)")
        #expect(run.error == Self.refusal(same, #""health.status" must be \#(Self.statuses), got "recovering""#)
            + "weavedid \(DaemonVersion.current) answers there, the version of this weavedictl too, yet sends a value this weavedictl "
            + "does not know: one of the two is likely built from other sources than the other. Use the weavedictl built with that weavedid.\n",
            "\(run.error)")
    }

    /// What does not say it is weavedid, or a reply that lacks more than a known name, keeps
    /// the question whether this is weavedid's socket.
    @Test func anUnknownStatus_fromWhatIsNotWeavedid_orInAReplyNotWhole_asksWhetherItIsItsSocket() throws {
        let unknown = #""health.status" must be \#(Self.statuses), got "recovering""#
        let cases: [(String, [String: [[UInt8]]], String)] = [
            ("no GetInfo", ["GetHealth": [Self.health()]], unknown),
            ("another product", ["GetHealth": [Self.health()], "GetInfo": [Self.info(product: "other", version: "9.1.0")]], unknown),
            ("without the interface", ["GetHealth": [Self.health()], "GetInfo": [Self.info(version: "9.1.0", interfaces: ["org.varlink.service"])]], unknown),
            ("GetInfo without its version",
                ["GetHealth": [Self.health()], "GetInfo": [Array(#"{"parameters":{"product":"weavedid","interfaces":["io.weavedi.Daemon"]}}"#.utf8) + [0]]], unknown),
            // From weavedid, but lacking a member as well: no reply of another version only.
            ("a member missing too", ["GetHealth": [Self.health(score: "")], "GetInfo": [Self.info(version: "9.1.0")]], unknown),
            ("a member missing", ["GetHealth": [Self.health(status: "healthy", score: "")], "GetInfo": [Self.info(version: "9.1.0")]],
                #""health.score" must be an integer from 0 to 100, it is missing"#),
            ("a member of the wrong type", ["GetHealth": [Self.health(status: "healthy", score: #""score":"100","#)], "GetInfo": [Self.info(version: "9.1.0")]],
                #""health.score" must be an integer from 0 to 100, got string"#),
        ]
        for (name, replies, reason) in cases {
            let fake = try FakeDaemon(raw: replies)
            let run = try CtlRun.run(["--socket", fake.socket, "health"])
            #expect(run.code == 69 && run.output.isEmpty, "\(name): \(run.all)")
            #expect(run.error == Self.refusal(fake, reason) + Self.socketHint, "\(name): \(run.error)")
        }
    }

    /// The contract tells a reply whole but for an unknown name from any other problem.
    @Test func theContract_tellsUnknownNamesFromOtherProblems() {
        let contract = ReplyContract.daemon
        let health = JSONValue.health([.check])
        func check(_ health: JSONValue) -> ReplyContract.Problem? { contract.check(.object([("health", health)]), inReplyTo: "GetHealth") }
        #expect(check(health) == nil)
        #expect(check(health.with([("status", .string("new"))]))?.onlyUnknownNames == true)
        #expect(check(.health([JSONValue.check.with([("status", .string("new"))])]))?.onlyUnknownNames == true)
        #expect(check(health.with([("status", .int(1))]))?.onlyUnknownNames == false)
        #expect(check(health.with([("score", .int(101))]))?.onlyUnknownNames == false)
        #expect(check(health.with([("status", .string("new")), ("score", .int(101))]))?.onlyUnknownNames == false)
        let other = ReplyContract(description: """
            interface com.example.T
            type Color (red, green)
            method M() -> (c: Color, s: (x: (red, green)))
            """)
        let blue = other.check(.object([("c", .string("blue")), ("s", .object([("x", .string("red"))]))]), inReplyTo: "M")
        #expect(blue == ReplyContract.Problem(text: #""c" must be "red" or "green", got "blue""#, onlyUnknownNames: true))
        #expect(other.check(.object([("c", .string("red")), ("s", .object([("x", .string("blue"))]))]), inReplyTo: "M")?.onlyUnknownNames == true)
        #expect(other.check(.object([("c", .string("blue"))]), inReplyTo: "M")?.onlyUnknownNames == false)
    }
}

/// `run-job --wait`: a reply weavedictl cannot read, more to follow, ends the following but not
/// the run, and says so, as Ctrl-C does; a last reply it cannot read says nothing of a run going on.
@Suite struct CtlRunJobInvalidReplyTests {
    private static func reply(_ parameters: String, continues: Bool) -> [UInt8] {
        Array(#"{"parameters":\#(parameters)\#(continues ? #","continues":true"# : "")}"#.utf8) + [0]
    }

    private static let socketHint = "Is this weavedid's control socket? Pass the socket's path with --socket PATH (control.socket in its configuration).\n"

    @Test func anInvalidReplyAmidTheRun_saysTheRunGoesOn() throws {
        let started = Self.reply(#"{"runId":"docs-1"}"#, continues: true)
        let invalid = Self.reply(#"{"run":null,"progress":{"filesDone":"1"}}"#, continues: true)
        let fake = try FakeDaemon(raw: ["RunJob": [started, invalid, Self.reply(#"{"run":\#(JSONValue.jobRun.serialized)}"#, continues: false)]])
        for json in [false, true] {
            let run = try CtlRun.run(["--socket", fake.socket, "run-job", "docs", "--wait"] + (json ? ["--json"] : []))
            #expect(run.code == 69, "\(run.all)")
            #expect(run.output == (json ? #"{"runId":"docs-1"}"# + "\n" : "job docs: run docs-1 started\n"), "\(run.all)")
            #expect(run.error == "weavedictl: the reply of io.weavedi.Daemon.RunJob from \(fake.socket) is not a valid reply to it: "
                + #""progress.filesDone" must be an integer, got string"# + "\n" + Self.socketHint
                + "The run docs-1 goes on in the daemon (`weavedictl jobs` shows how it ends).\n", "\(run.error)")
        }
        // The first reply invalid: the run is not named, but may have started.
        let first = try FakeDaemon(raw: ["RunJob": [Self.reply(#"{"runId":5}"#, continues: true)]])
        let run = try CtlRun.run(["--socket", first.socket, "run-job", "docs", "--wait"])
        #expect(run.code == 69 && run.output.isEmpty, "\(run.all)")
        #expect(run.error == "weavedictl: the reply of io.weavedi.Daemon.RunJob from \(first.socket) is not a valid reply to it: "
            + #""runId" must be a string or null, got 5"# + "\n" + Self.socketHint
            + "A run of docs the daemon started goes on there (`weavedictl jobs` shows whether and how it ends).\n", "\(run.error)")
    }

    /// `--timeout` run out while the run is followed ends the following, not the run: said so.
    @Test func aTimeoutAmidTheRun_saysTheRunGoesOn() throws {
        let fake = try FakeDaemon(raw: ["RunJob": [Self.reply(#"{"runId":"docs-1"}"#, continues: true)]])
        let run = try CtlRun.run(["--socket", fake.socket, "--timeout", "1", "run-job", "docs", "--wait"])
        #expect(run.code == 69, "\(run.all)")
        #expect(run.output == "job docs: run docs-1 started\n", "\(run.all)")
        #expect(run.error.contains("no reply to io.weavedi.Daemon.RunJob from \(fake.socket) within 1 s"), "\(run.error)")
        #expect(run.error.hasSuffix("\nThe run docs-1 goes on in the daemon (`weavedictl jobs` shows how it ends).\n"), "\(run.error)")
    }

    /// The last reply says the run ended: one weavedictl cannot read says nothing of a run going on.
    @Test func anInvalidLastReply_saysNothingOfTheRunGoingOn() throws {
        let started = Self.reply(#"{"runId":"docs-1"}"#, continues: true)
        let last = Self.reply(#"{"run":{"id":"docs-1","result":"success"}}"#, continues: false)
        let fake = try FakeDaemon(raw: ["RunJob": [started, last]])
        let run = try CtlRun.run(["--socket", fake.socket, "run-job", "docs", "--wait"])
        #expect(run.code == 69, "\(run.all)")
        #expect(run.error == "weavedictl: the reply of io.weavedi.Daemon.RunJob from \(fake.socket) is not a valid reply to it: "
            + #""run.job" must be a string, it is missing"# + "\n" + Self.socketHint, "\(run.error)")
    }
}
