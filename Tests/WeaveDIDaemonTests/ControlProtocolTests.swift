import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// io.weavedi.Daemon over the real socket of the real daemon.
@Suite struct ControlProtocolTests {
    func started(config: String? = nil, openDirectory: Bool = false) throws -> DaemonProcess {
        let directory = TemporaryDirectory()
        if openDirectory { chmod(directory.path, 0o755) }  // so that another user can reach run/
        var arguments: [String] = []
        if let config { arguments = ["--config", directory.write("weavedid.json", config)] }
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(arguments, directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        return daemon
    }

    func socket(_ daemon: DaemonProcess, config: String?) -> String { daemon.defaultSocket }

    @Test func everyMethod_answers() throws {
        let daemon = try started()
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let d = "io.weavedi.Daemon."
        #expect(try client.call(d + "Ping").parameter("version")?.stringValue == "0.1.0")
        #expect(try client.call(d + "GetHealth").parameter("health")?[member: "score"]?.intValue != nil)
        let checked = try client.call(d + "RunChecks").parameter("health")
        let names = checked?[member: "checks"]?.arrayValue?.compactMap { $0[member: "name"]?.stringValue } ?? []
        #expect(Set(names).isSuperset(of: ["container.graph", "container.singletons", "container.sessions", "daemon.configuration", "control.socket"]))
        #expect(try client.call(d + "Fix").parameter("fixes")?.arrayValue != nil)
        #expect(try client.call(d + "ListFixes", [("limit", .int(5))]).parameter("fixes")?.arrayValue != nil)
        #expect(try client.call(d + "ListJobs").parameter("jobs")?.arrayValue != nil)
        let sessions = try client.call(d + "ListSessions").parameter("sessions")?.arrayValue ?? []
        let mine = sessions.first { $0[member: "pid"]?.intValue == Int(CurrentProcess.id) }
        #expect(mine?[member: "kind"]?.stringValue == "control")
        #expect(mine?[member: "instances"]?.intValue == 1)  // its ControlConnectionState
        #expect(mine?[member: "requests"]?.intValue == 1)  // the ListSessions call's own request
        #expect(mine?[member: "uid"]?.intValue == Int(CurrentProcess.userID))
        let registrations = try client.call(d + "ListRegistrations").parameter("registrations")?.arrayValue ?? []
        let server = registrations.first { $0[member: "type"]?.stringValue == "ControlServer" }
        #expect(server?[member: "module"]?.stringValue == "control")
        #expect(server?[member: "dependencies"]?.arrayValue?.contains(.string("VarlinkService")) == true)
        #expect(try client.call(d + "DiagnoseComponents").parameter("issues")?.arrayValue == [])
        #expect(try client.call(d + "CheckCycles").parameter("cycles")?.arrayValue == [])
        #expect(try client.call(d + "GetLogLevel").parameter("filter")?.stringValue == "info")
        let set = try client.call(d + "SetLogLevel", [("level", .string("errors")), ("filter", .string("info,control=debug"))])
        #expect(set.parameter("level")?.stringValue == "errors" && set.parameter("filter")?.stringValue == "info,control=debug")
        let metrics = try client.call(d + "GetMetrics").parameter("text")?.stringValue ?? ""
        #expect(metrics.contains("# TYPE weavedi_up gauge\nweavedi_up 1\n"))
        #expect(metrics.contains("weavedi_control_calls_total{method=\"io.weavedi.Daemon.Ping\"} 1"))
        #expect(try client.call(d + "Reload").parameter("status")?.stringValue == "configuration reloaded")
        let info = try client.call("org.varlink.service.GetInfo")
        #expect(info.parameter("interfaces")?.arrayValue == [.string("org.varlink.service"), .string("io.weavedi.Daemon")])
        let description = try client.call("org.varlink.service.GetInterfaceDescription", [("interface", .string("io.weavedi.Daemon"))])
        #expect(description.parameter("description")?.stringValue == DaemonInterface.description)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func errors_areVarlinkErrors_namingWhatIsWrong() throws {
        let daemon = try started()
        let client = try RawClient(daemon.defaultSocket)
        let cases: [(String, String)] = [
            (call("io.weavedi.Daemon.Nope"), #"{"error":"org.varlink.service.MethodNotFound","parameters":{"method":"io.weavedi.Daemon.Nope"}}"#),
            (call("com.example.Other.Ping"), #"{"error":"org.varlink.service.InterfaceNotFound","parameters":{"interface":"com.example.Other"}}"#),
            (call("io.weavedi.Daemon.ListFixes", #"{"limit":"ten"}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"limit","reason":"expected an integer from 1 to 500, got \"ten\""}}"#),
            (call("io.weavedi.Daemon.ListFixes", #"{"limit":1000000}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"limit","reason":"expected an integer from 1 to 500, got 1000000"}}"#),
            // Integer parameters follow the configuration's rule: a fraction is refused, a whole
            // number written with an exponent is shown as the integer it is.
            (call("io.weavedi.Daemon.ListFixes", #"{"limit":5.5}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"limit","reason":"expected an integer from 1 to 500, got 5.5"}}"#),
            (call("io.weavedi.Daemon.ListFixes", #"{"limit":1e3}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"limit","reason":"expected an integer from 1 to 500, got 1000"}}"#),
            // Numbers neither Int nor Double holds are quoted as the client wrote them.
            (call("io.weavedi.Daemon.ListFixes", #"{"limit":123456789012345678901234567890}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"limit","reason":"expected an integer from 1 to 500, got 123456789012345678901234567890"}}"#),
            (call("io.weavedi.Daemon.ListFixes", #"{"limit":1e400}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"limit","reason":"expected an integer from 1 to 500, got 1e400"}}"#),
            (call("io.weavedi.Daemon.RunJob", #"{"name":-1e-400}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"name","reason":"expected a string, got -1e-400"}}"#),
            (call("io.weavedi.Daemon.ListFixes", "{\"limit\":\(String(repeating: "7", count: 5000))}"), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"limit","reason":"expected an integer from 1 to 500, got 7777777777777777777777777777777777777... (a number of 5000 characters)"}}"#),
            (call("io.weavedi.Daemon.GetHealth", #"{"tags":["a",1]}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"tags","reason":"expected an array of strings, got 1 among them"}}"#),
            (call("io.weavedi.Daemon.Ping", #"{"loud":true}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"loud","reason":"unknown parameter (the method takes none)"}}"#),
            (call("io.weavedi.Daemon.ListFixes", #"{"limit":1,"loud":true}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"loud","reason":"unknown parameter (accepted: limit)"}}"#),
            (call("io.weavedi.Daemon.RunJob", #"{"name":7}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"name","reason":"expected a string, got 7"}}"#),
            (call("io.weavedi.Daemon.Fix", #"{"check":"nope"}"#), #"{"error":"io.weavedi.Daemon.NoSuchCheck","parameters":{"name":"nope"}}"#),
            // A tag no check has (alone, or beside one that some have; each named once) would
            // leave checks out unseen, and an empty list all of them: a probe would pass.
            (call("io.weavedi.Daemon.GetHealth", #"{"tags":["readyness"]}"#), #"{"error":"io.weavedi.Daemon.NoSuchTag","parameters":{"tags":["readyness"],"known":["liveness","readiness","sync"]}}"#),
            (call("io.weavedi.Daemon.RunChecks", #"{"tags":["x","sync","y","x"]}"#), #"{"error":"io.weavedi.Daemon.NoSuchTag","parameters":{"tags":["x","y"],"known":["liveness","readiness","sync"]}}"#),
            (call("io.weavedi.Daemon.GetHealth", #"{"tags":[]}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"tags","reason":"an empty list selects no check; leave tags out to select every check"}}"#),
            (call("io.weavedi.Daemon.RunChecks", #"{"tags":[]}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"tags","reason":"an empty list selects no check; leave tags out to select every check"}}"#),
            (call("io.weavedi.Daemon.RunJob", #"{"name":"nope"}"#), #"{"error":"io.weavedi.Daemon.NoSuchJob","parameters":{"name":"nope"}}"#),
            (call("io.weavedi.Daemon.SetLogLevel", #"{"level":"loud"}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"level","reason":"expected one of all, registration, optimization, errors, off, got \"loud\""}}"#),
            (call("io.weavedi.Daemon.SetLogLevel", #"{"filter":"info,sync=loud"}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"filter","reason":"\"sync=loud\": unknown level \"loud\" (expected a default level and subsystem=level entries, such as \"info,sync=debug\")"}}"#),
            (call("org.varlink.service.GetInterfaceDescription", #"{"interface":"x.y"}"#), #"{"error":"org.varlink.service.InterfaceNotFound","parameters":{"interface":"x.y"}}"#),
            (call("org.varlink.service.Nope"), #"{"error":"org.varlink.service.MethodNotFound","parameters":{"method":"org.varlink.service.Nope"}}"#),
            (call("org.varlink.service.GetInterfaceDescription", #"{"interface":"io.weavedi.Daemon.Ping"}"#), #"{"error":"org.varlink.service.InterfaceNotFound","parameters":{"interface":"io.weavedi.Daemon.Ping"}}"#),
            (call("org.varlink.service.GetInterfaceDescription", #"{"interface":"xy"}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"interface","reason":"\"xy\" is no interface name (two or more parts joined by dots, of ASCII letters, digits and '-', the first part starting with a letter, none starting or ending with '-', such as \"io.weavedi.Daemon\")"}}"#),
            (call("org.varlink.service.GetInterfaceDescription", #"{"interface":"io.weavedi.\u001b[31mDaemon"}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"interface","reason":"\"io.weavedi.\\u001b[31mDaemon\" is no interface name (two or more parts joined by dots, of ASCII letters, digits and '-', the first part starting with a letter, none starting or ending with '-', such as \"io.weavedi.Daemon\")"}}"#),
            (call("io.weavedi.Daemon.ping"), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"message","reason":"\"method\" must be an interface name and a method name joined by a dot, such as \"io.weavedi.Daemon.Ping\": \"io.weavedi.Daemon.ping\" is no method: the method name \"ping\" is none (an ASCII capital letter, then ASCII letters and digits, such as \"Ping\")"}}"#),
            (call("org.varlink.service.GetInterfaceDescription"), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"interface","reason":"missing: the interface's name is required"}}"#),
            (call("org.varlink.service.GetInterfaceDescription", #"{"interface":5}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"interface","reason":"expected a string, got 5"}}"#),
            (call("org.varlink.service.GetInterfaceDescription", #"{"interface":"io.weavedi.Daemon","verbose":true}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"verbose","reason":"unknown parameter (accepted: interface)"}}"#),
            (call("org.varlink.service.GetInfo", #"{"verbose":true}"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"verbose","reason":"unknown parameter (the method takes none)"}}"#),
            (call("org.varlink.service.GetInfo", extra: #","upgrade":true"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"upgrade","reason":"no method of this service upgrades its connection to another protocol"}}"#),
            (call("io.weavedi.Daemon.Ping", extra: #","upgrade":true"#), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"upgrade","reason":"no method of this service upgrades its connection to another protocol"}}"#),
        ]
        for (request, expected) in cases {
            try client.send(request)
            #expect(client.reply() == expected, "\(request)")
        }
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// JSON has one number type: `5.0` and `5e0` are the integer 5 to a varlink parameter, as
    /// to the configuration's integer fields; a number whose value as written is not whole is
    /// refused, however close to one (a Double would round it to one), and quoted as written,
    /// a negative zero with its sign.
    @Test func anIntegerParameter_takesAWholeNumberWrittenWithAFractionOrAnExponent() throws {
        let daemon = try started()
        let client = try RawClient(daemon.defaultSocket)
        for limit in ["5.0", "5e0", "50e-1", "0.5e1", "500.000"] {
            try client.send(call("io.weavedi.Daemon.ListFixes", #"{"limit":\#(limit)}"#))
            let reply = client.reply() ?? ""
            #expect(reply.hasPrefix(#"{"parameters":{"fixes":["#), "\(limit): \(reply)")
        }
        let refused = [
            ("-0.0e0 ", "-0"), ("-0", "-0"), ("0", "0"), ("0.99999999999999999", "0.99999999999999999"),
            ("4.9999999999999999999", "4.9999999999999999999"), ("500.00000000000001", "500.00000000000001"),
        ]
        for (limit, shown) in refused {
            try client.send(call("io.weavedi.Daemon.ListFixes", #"{"limit":\#(limit)}"#))
            #expect(client.reply() == #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"limit","#
                + #""reason":"expected an integer from 1 to 500, got \#(shown)"}}"#, "\(limit)")
        }
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// The parser's limits on a call: 64 levels of nesting, `VarlinkCall.maximumValues` values
    /// (`"tags":[0,0,…]` filling the message size held 240,000, each message costing the I/O
    /// thread every connection waits on tens of milliseconds). A call past either is a
    /// malformed message, answered with its reason, and the connection and the daemon go on; a
    /// call at either limit is read.
    @Test func aCallTooDeepOrOfTooManyValues_isAnswered_andTheConnectionGoesOn() throws {
        let daemon = try started()
        let client = try RawClient(daemon.defaultSocket)
        let malformed = #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"message","reason":"not a valid JSON object: "#
        let tagsRead = #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"tags","reason":"expected an array of strings, got "#
        // The call is level 1, its parameters level 2: tags may nest 62 levels.
        let nested = { (levels: Int) in #"{"tags":"# + String(repeating: "[", count: levels) + String(repeating: "]", count: levels) + "}" }
        try client.send(call("io.weavedi.Daemon.GetHealth", nested(62)))
        #expect(client.reply() == tagsRead + #"an array among them"}}"#)
        try client.send(call("io.weavedi.Daemon.GetHealth", nested(63)))
        #expect(client.reply() == malformed + #"line 1, column 124: nesting deeper than 64 levels"}}"#)
        // The call, its method, its parameters and the tags: 4 values beside the tags' elements.
        let zeros = { (count: Int) in #"{"tags":["# + Array(repeating: "0", count: count).joined(separator: ",") + "]}" }
        try client.send(call("io.weavedi.Daemon.GetHealth", zeros(VarlinkCall.maximumValues - 4)))
        #expect(client.reply() == tagsRead + #"0 among them"}}"#)
        try client.send(call("io.weavedi.Daemon.GetHealth", zeros(VarlinkCall.maximumValues - 3)))
        #expect(client.reply() == malformed + #"line 1, column \#(63 + 2 * 16_380): more than 16384 values in the document"}}"#)
        try client.send(call("io.weavedi.Daemon.Ping"))
        #expect(client.reply()?.contains(#""version":"#) == true)
        let other = try VarlinkClient(path: daemon.defaultSocket)
        #expect(try other.call("io.weavedi.Daemon.Ping").parameter("pid")?.intValue == Int(daemon.pid))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func getHealth_showsTheLatestReport_andEachCallsOwnTime() throws {
        let daemon = try started()
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let d = "io.weavedi.Daemon."
        func lastRuns(_ health: JSONValue?) -> [Double] {
            health?[member: "checks"]?.arrayValue?.compactMap { $0[member: "lastRun"]?.numberValue } ?? []
        }
        // The example job's run at start ends by running its check, and the first write of the
        // state file (as that run starts) runs sync.stateFile's: once both are in, nothing runs a
        // check until RunChecks below (the health loop is off in tests, and the writes after the
        // first end as it did).
        func ranBoth(_ health: JSONValue?) -> Bool {
            let ran = health?[member: "checks"]?.arrayValue?.filter { $0[member: "lastRun"]?.numberValue != nil }
                .compactMap { $0[member: "name"]?.stringValue } ?? []
            return ran.contains("job.example") && ran.contains("sync.stateFile")
        }
        let deadline = ContinuousClock.now + .seconds(30)
        var first = try client.call(d + "GetHealth").parameter("health")
        while !ranBoth(first), ContinuousClock.now < deadline {
            usleep(10_000)
            first = try client.call(d + "GetHealth").parameter("health")
        }
        try #require(ranBoth(first), "job.example's and sync.stateFile's checks did not both run: \(String(describing: first))\n\(daemon.log)")
        // The clock past the first reply's time: a reply taken when asked for is later.
        let firstTaken = first?[member: "takenAt"]?.numberValue ?? 0
        while Date().timeIntervalSince1970 <= firstTaken, ContinuousClock.now < deadline { usleep(1_000) }
        let again = try client.call(d + "GetHealth").parameter("health")
        #expect(again?[member: "checks"] == first?[member: "checks"])
        let firstTime = first?[member: "takenAt"]?.numberValue ?? 0, againTime = again?[member: "takenAt"]?.numberValue ?? 0
        #expect(againTime > firstTime, "each reply is taken when it is asked for")
        let checked = try client.call(d + "RunChecks").parameter("health")
        let after = try client.call(d + "GetHealth").parameter("health")
        #expect(!lastRuns(checked).isEmpty && lastRuns(after) == lastRuns(checked))
        #expect(lastRuns(after).count > lastRuns(first).count, "the checks ran again, and GetHealth shows it")
        let tagged = try client.call(d + "GetHealth", [("tags", .array([.string(HealthCheck.liveness)]))]).parameter("health")
        let names = tagged?[member: "checks"]?.arrayValue?.compactMap { $0[member: "name"]?.stringValue } ?? []
        #expect(names.contains("control.socket") && !names.contains("container.graph"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func methodNamesFromClients_cannotGrowOrForgeMetrics() throws {
        let daemon = try started()
        let client = try RawClient(daemon.defaultSocket)
        // Any name gets its error; none of them becomes a counter of its own, and a line feed in
        // one (inside "\r\n", a single Swift Character) cannot start a line of the metrics.
        for i in 0..<20 { try client.send(call("x\(i).y.Ping")); _ = client.reply() }
        try client.send(call(#"x\r\nweavedi_health_score 100\r\n#.Ping"#))
        #expect(client.reply()?.contains(#"the interface name \"x\\r\\nweavedi_health_score 100\\r\\n#\" is none"#) == true)
        try client.send(call("x.y.Ping"))
        #expect(client.reply()?.contains("InterfaceNotFound") == true)
        try client.send(call("io.weavedi.Daemon.NoSuchMethod"))
        #expect(client.reply()?.contains("MethodNotFound") == true)
        let metrics = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.GetMetrics").parameter("text")?.stringValue ?? ""
        let calls = metrics.split(separator: "\n").filter { $0.hasPrefix("weavedi_control_calls_total{") }
        #expect(calls.contains(#"weavedi_control_calls_total{method="(unknown)"} 22"#), "\(calls)")
        #expect(calls.contains(#"weavedi_control_calls_total{method="(malformed)"} 1"#), "\(calls)")
        #expect(!metrics.contains("x0.y.Ping") && !metrics.contains("NoSuchMethod"))
        #expect(metrics.split(separator: "\n").filter { $0.hasPrefix("weavedi_health_score") }.count == 1)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func pipelinedCalls_areAnsweredInOrder_andOnewayGetsNoReply() throws {
        let daemon = try started()
        let client = try RawClient(daemon.defaultSocket)
        var batch = ""
        // Answered on the I/O thread (GetLogLevel, Ping, ListFixes) and in tasks (ListJobs), mixed.
        for i in 0..<60 {
            batch += i % 3 == 0 ? call("io.weavedi.Daemon.GetLogLevel")
                : i % 3 == 1 ? call("io.weavedi.Daemon.Ping", "{}", extra: #","oneway":true"#)
                : i % 2 == 0 ? call("io.weavedi.Daemon.ListFixes", #"{"limit":\#(i)}"#) : call("io.weavedi.Daemon.ListJobs")
        }
        try client.send(batch)
        for i in 0..<60 where i % 3 != 1 {
            let reply = client.reply() ?? ""
            let expected = i % 3 == 0 ? #""filter":"info""# : i % 2 == 0 ? #"{"parameters":{"fixes":"# : #"{"parameters":{"jobs":"#
            #expect(reply.contains(expected), "reply \(i): \(reply)")
        }
        try client.send(call("io.weavedi.Daemon.Ping"))
        #expect(client.reply()?.contains(#""version":"#) == true)  // nothing was left over from the oneway calls
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func malformedInput_isAnswered_andTheDaemonIsUnharmed() throws {
        let daemon = try started()
        let inputs: [[UInt8]] = [
            Array("not json\0".utf8), Array("[1,2,3]\0".utf8), Array(#"{"method":42}"#.utf8) + [0],
            Array(#"{"method":"io.weavedi.Daemon.Ping","parameters":[]}"#.utf8) + [0],
            Array(#"{"method":"io.weavedi.Daemon.Ping","more":"yes"}"#.utf8) + [0],
            [0xFF, 0xFE, 0x00], Array(#"{"parameters":{}}"#.utf8) + [0], Array("\u{0}".utf8),
        ]
        for input in inputs {
            let client = try RawClient(daemon.defaultSocket)
            try client.send(bytes: input)
            let reply = client.reply() ?? ""
            #expect(reply.hasPrefix(#"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"message","reason":"#), "\(input): \(reply)")
        }
        // A message without its NUL, then gone; binary garbage with no NUL at all.
        try RawClient(daemon.defaultSocket).send(#"{"method":"io.weavedi.Daemon.Ping""#)
        try RawClient(daemon.defaultSocket).send(bytes: (0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) })
        let client = try VarlinkClient(path: daemon.defaultSocket)
        #expect(try client.call("io.weavedi.Daemon.Ping").parameter("pid")?.intValue == Int(daemon.pid))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aMessageCutShortByEndOfInput_isAnswered_afterTheCallsBeforeIt() throws {
        let daemon = try started()
        let partial = #"{"method":"io.weavedi.Daemon.Ping""#
        let expected = #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"message","reason":"#
            + #""the input ended inside a message: 34 bytes without the NUL byte that ends each message"}}"#
        // Alone; behind a call answered at once and one answered by a task, in call order; and
        // behind more calls than may be in flight at once (the rest waits, unread, at first).
        let jobs = call("io.weavedi.Daemon.ListJobs")
        for (before, jobReplies) in [("", 0), (call("io.weavedi.Daemon.GetLogLevel") + jobs, 1), (String(repeating: jobs, count: 40), 40)] {
            let client = try RawClient(daemon.defaultSocket)
            try client.send(before + partial)
            try client.descriptor.shutdown(.write)
            if before.hasPrefix(call("io.weavedi.Daemon.GetLogLevel")) { #expect(client.reply()?.contains(#""filter":"info""#) == true) }
            for _ in 0..<jobReplies { #expect(client.reply()?.hasPrefix(#"{"parameters":{"jobs":"#) == true) }
            #expect(client.reply() == expected)
            #expect(client.closedByPeer())
        }
        // Only whitespace after the last message is no message.
        let trailing = try RawClient(daemon.defaultSocket)
        try trailing.send(call("io.weavedi.Daemon.GetLogLevel") + " \n")
        try trailing.descriptor.shutdown(.write)
        #expect(trailing.reply()?.contains(#""filter":"info""#) == true)
        #expect(trailing.closedByPeer())
        #expect(trailing.reply() == nil)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aMessageTooLarge_isRefusedAfterTheCallsBeforeItAreAnswered() throws {
        let daemon = try started(config: #"{"control": {"maxMessageBytes": 1024}}"#)
        let client = try RawClient(daemon.defaultSocket)
        // A call answered by a task, one answered at once behind it, then too large a message,
        // all in one piece: the refusal is the third reply, not the first, and the others come.
        try client.send(call("io.weavedi.Daemon.RunChecks") + call("io.weavedi.Daemon.GetLogLevel")
            + call("io.weavedi.Daemon.Ping", #"{"pad":"\#(String(repeating: "x", count: 2000))"}"#))
        #expect(client.reply()?.hasPrefix(#"{"parameters":{"health":"#) == true)
        #expect(client.reply()?.contains(#""filter":"info""#) == true)
        #expect(client.reply() == #"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"message size","value":1024}}"#)
        #expect(client.closedByPeer())
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func limits_areAnsweredWithAClearError_beforeClosing() throws {
        // A job whose run takes seconds (a 1 GiB copy, written and flushed) makes a call that
        // surely outlasts the time limit.
        let files = TemporaryDirectory()
        let big = files.write("source/big.bin", "")
        try #require(try Subprocess.run("/usr/bin/fallocate", arguments: ["-l", "1G", big], environment: [:]).status == .exited(0))
        try FileManager.default.createDirectory(atPath: files.path + "/mirror", withIntermediateDirectories: true)
        let daemon = try started(config: """
            {"control": {"maxMessageBytes": 1024, "maxClients": 4, "idleTimeout": 0.5, "callTimeout": 0.3},
             "sync": {"jobs": [{"name": "big", "source": "\(files.path)/source", "destination": "\(files.path)/mirror", "interval": 3600}]}}
            """)
        // Message size.
        let large = try RawClient(daemon.defaultSocket)
        try large.send(call("io.weavedi.Daemon.Ping", #"{"pad":"\#(String(repeating: "x", count: 2000))"}"#))
        #expect(large.reply() == #"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"message size","value":1024}}"#)
        #expect(large.closedByPeer())
        // Time per call: answered while the run goes on, not once it has ended (and logged so).
        let slow = try RawClient(daemon.defaultSocket)
        try slow.send(call("io.weavedi.Daemon.RunJob", #"{"name":"big"}"#))
        #expect(slow.reply() == #"{"error":"io.weavedi.Daemon.CallTimedOut","parameters":{"method":"io.weavedi.Daemon.RunJob","seconds":0.3}}"#)
        #expect(!["success", "partial", "failed", "cancelled"].contains { daemon.log.contains("big: run big-1 \($0) in ") }, "\(daemon.log)")
        // Idle time, counted from the connection's accept, which follows `idleStart`.
        let idleStart = ContinuousClock.now
        let idle = try RawClient(daemon.defaultSocket)
        #expect(idle.reply(timeout: .seconds(20)) == #"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"idle","value":0}}"#)
        #expect(ContinuousClock.now - idleStart >= .milliseconds(400))
        #expect(idle.closedByPeer())
        // Clients at once: four stay, the fifth is told and closed.
        let four = try (0..<4).map { _ in try RawClient(daemon.defaultSocket) }
        for client in four { try client.send(call("io.weavedi.Daemon.GetLogLevel")); _ = client.reply() }
        let fifth = try RawClient(daemon.defaultSocket)
        #expect(fifth.reply() == #"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"clients","value":4}}"#)
        #expect(fifth.closedByPeer())
        _ = four
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func sixtyFourClients_andTheSixtyFifthRefused() throws {
        let daemon = try started()
        var clients: [RawClient] = []
        for _ in 0..<64 {
            let client = try RawClient(daemon.defaultSocket)
            try client.send(call("io.weavedi.Daemon.Ping"))
            clients.append(client)
        }
        for client in clients { #expect(client.reply()?.contains(#""version""#) == true) }
        let extra = try RawClient(daemon.defaultSocket)
        #expect(extra.reply() == #"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"clients","value":64}}"#)
        #expect(extra.closedByPeer())
        clients.removeAll()
        var answered = false  // room again once the daemon has seen them leave
        let deadline = ContinuousClock.now + .seconds(30)
        while !answered, ContinuousClock.now < deadline {
            answered = (try? VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Ping")) != nil
            if !answered { usleep(10_000) }
        }
        #expect(answered)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func stalledOrVanishingClients_neverDelayOthers() throws {
        let daemon = try started()
        // A client that asks for a lot and never reads.
        let stalled = try RawClient(daemon.defaultSocket)
        try stalled.send(String(repeating: call("io.weavedi.Daemon.GetMetrics"), count: 500))
        // A client that vanishes mid-reply.
        for _ in 0..<20 {
            let gone = try RawClient(daemon.defaultSocket)
            try gone.send(String(repeating: call("io.weavedi.Daemon.ListRegistrations"), count: 20))
        }
        // Answered at all: the stalled client never reads, so a daemon it held would never answer
        // (the limit only keeps a failing test from hanging; a busy machine may take seconds).
        let other = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(20))
        #expect(try other.call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        _ = stalled
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func thousandConnectDisconnectCycles_leaveNothingBehind() throws {
        let daemon = try started()
        func descriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/fd").count) ?? -1 }
        func residentKB() -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
        }
        let warm = try VarlinkClient(path: daemon.defaultSocket)
        _ = try warm.call("io.weavedi.Daemon.ListSessions")
        let fdBefore = descriptors(), rssBefore = residentKB()
        for i in 0..<1000 {
            let client = try RawClient(daemon.defaultSocket)
            if i % 2 == 0 { try client.send(call("io.weavedi.Daemon.Ping")); _ = client.reply() }
        }
        var sessions: [JSONValue] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {  // accepting the backlog and closing are asynchronous: give the daemon a moment
            sessions = try warm.call("io.weavedi.Daemon.ListSessions").parameter("sessions")?.arrayValue ?? []
            if sessions.count == 1, descriptors() <= fdBefore + 1 { break }
            usleep(20_000)
        }
        #expect(sessions.count == 1, "\(sessions.count) sessions left")
        #expect(descriptors() <= fdBefore + 1, "descriptors \(fdBefore) -> \(descriptors())")
        #expect(residentKB() - rssBefore < 8_192, "resident \(rssBefore) kB -> \(residentKB()) kB")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// The reference client, the Python `varlink` package, which checks each reply against the
    /// interface's description: it takes what the daemon says. `ListFixes` and `Fix` among it,
    /// whose `FixAttempt` replies it once refused (a type named like a method): `ListFixes` with
    /// no attempt yet, then the fix of `control.socket` (in place: it has nothing to do, and
    /// leaves the socket alone), then `ListFixes` with that attempt, in full and with `limit`.
    @Test func referencePythonVarlinkClient_works() throws {
        let probe = try Subprocess.run("python3", arguments: ["-c", "import varlink"], environment: ProcessInfo.processInfo.environment)
        guard probe.status == .exited(0) else {
            try Test.cancel("the Python varlink package is not installed (pip install varlink)")
        }
        let daemon = try started()
        let script = """
            import sys, varlink
            with varlink.Client("unix:" + sys.argv[1]) as client:
                with client.open("org.varlink.service") as service:
                    info = service.GetInfo()
                    print("info", info["product"], ",".join(info["interfaces"]))
                with client.open("io.weavedi.Daemon") as daemon:
                    print("ping", daemon.Ping()["version"])
                    print("health", daemon.GetHealth()["health"]["status"])
                    print("fixes", len(daemon.ListFixes()["fixes"]))
                    fix = daemon.Fix(check="control.socket")["fixes"][0]
                    print("fix", fix["check"], fix["trigger"], fix["outcome"], fix["message"])
                    fixes = daemon.ListFixes()["fixes"]
                    print("fixes", len(fixes), fixes[0]["check"], fixes[0]["outcome"], fixes[0] == fix)
                    print("limit", len(daemon.ListFixes(limit=1)["fixes"]))
            """
        let result = try Subprocess.run("python3", arguments: ["-c", script, daemon.defaultSocket], environment: ProcessInfo.processInfo.environment)
        #expect(result.status == .exited(0), "\(result.standardErrorText)")
        #expect(result.standardOutputText == """
            info weavedid org.varlink.service,io.weavedi.Daemon
            ping 0.1.0
            health healthy
            fixes 0
            fix control.socket manual notApplicable "\(daemon.defaultSocket)" is in place and listening: nothing to do
            fixes 1 control.socket notApplicable True
            limit 1

            """, "\(result.standardErrorText)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func nonAdmin_isRefusedChanges_butMayRead() throws {
        guard CurrentProcess.effectiveUserID == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            try Test.cancel("needs root and setpriv to run a client as nobody")
        }
        func asNobody(_ daemon: DaemonProcess, _ method: String) throws -> String {
            let script = """
                import socket, sys
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                s.sendall(('{"method":"' + sys.argv[2] + '"}').encode() + b"\\0")
                data = b""
                while not data.endswith(b"\\0"): data += s.recv(65536)
                print(data[:-1].decode())
                """
            let result = try Subprocess.run(
                "/usr/bin/setpriv", arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, daemon.defaultSocket, method],
                environment: ["PATH": "/usr/bin:/bin"])
            return result.standardOutputText + result.standardErrorText
        }
        let plain = try started(config: #"{"control": {"socketGroup": 65534}}"#, openDirectory: true)
        #expect(try asNobody(plain, "io.weavedi.Daemon.Ping").contains(#""version":"0.1.0""#))
        #expect(try asNobody(plain, "io.weavedi.Daemon.Reload")
            == #"{"error":"io.weavedi.Daemon.PermissionDenied","parameters":{"method":"io.weavedi.Daemon.Reload","uid":65534}}"# + "\n")
        #expect(plain.waitForLog("denied io.weavedi.Daemon.Reload to uid 65534"))
        plain.send(.terminate)
        #expect(plain.wait() == .exited(0))
        let admin = try started(config: #"{"control": {"socketGroup": "nogroup", "adminGroups": ["nogroup"]}}"#, openDirectory: true)
        #expect(try asNobody(admin, "io.weavedi.Daemon.Reload").contains(#""status":"configuration reloaded""#))
        admin.send(.terminate)
        #expect(admin.wait() == .exited(0))
    }

    @Test func deletedOrReplacedSocket_isBoundAgainByItsFix() throws {
        let daemon = try started()
        let client = try VarlinkClient(path: daemon.defaultSocket)  // connected before the file goes
        func socketCheck() throws -> JSONValue? {
            let health = try client.call("io.weavedi.Daemon.RunChecks", [("tags", .array([.string("liveness")]))])
            return health.parameter("health")?[member: "checks"]?.arrayValue?.first { $0[member: "name"]?.stringValue == "control.socket" }
        }
        #expect(try socketCheck()?[member: "status"]?.stringValue == "healthy")
        // In place: the fix (by hand) has nothing to do (notApplicable, which weavedictl's exit
        // status says too), and leaves the socket as it is.
        let idle = try client.call("io.weavedi.Daemon.Fix", [("check", .string("control.socket"))]).parameter("fixes")?.arrayValue?.first
        #expect(idle?[member: "outcome"]?.stringValue == "notApplicable", "\(idle.map { "\($0)" } ?? "no fix")")
        #expect(idle?[member: "message"]?.stringValue == "\"\(daemon.defaultSocket)\" is in place and listening: nothing to do")
        let ctl = try CtlRun.run(["--socket", daemon.defaultSocket, "fix", "control.socket"])
        #expect(ctl.code == 1 && ctl.output.contains("notApplicable"), "\(ctl.all)")
        #expect(try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        // Deleted: nobody can connect, until the check's fix binds it again.
        try FileDescriptor.currentWorkingDirectory.unlink(at: daemon.defaultSocket)
        #expect(throws: VarlinkClient.ConnectionError.self) { try VarlinkClient(path: daemon.defaultSocket) }
        #expect(try socketCheck()?[member: "status"]?.stringValue == "unhealthy")  // RunChecks only looks
        func fix() throws -> String? {
            try client.call("io.weavedi.Daemon.Fix", [("check", .string("control.socket"))])
                .parameter("fixes")?.arrayValue?.first?[member: "outcome"]?.stringValue
        }
        #expect(try fix() == "succeeded")
        let fixed = try socketCheck()
        #expect(fixed?[member: "status"]?.stringValue == "healthy")
        #expect(fixed?[member: "fixesTried"]?.intValue == 3)
        #expect(try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        // Replaced by another (dead) socket file: the fix replaces it in turn.
        try FileDescriptor.currentWorkingDirectory.unlink(at: daemon.defaultSocket)
        try UnixSocket.listen(at: UnixSocketAddress(path: daemon.defaultSocket)).close()
        #expect(throws: VarlinkClient.ConnectionError.self) { try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Ping") }
        #expect(try fix() == "succeeded")
        #expect(try socketCheck()?[member: "fixesTried"]?.intValue == 4)
        #expect(try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        #expect(!fileExists(daemon.defaultSocket))
    }

    /// A fix asked for of a check that has none (`container.graph`) is refused, as the reply and
    /// weavedictl's exit status say, but it is no attempt: the fix history (`ListFixes`,
    /// `weavedictl fixes`) does not record it, while a real attempt beside it is recorded.
    @Test func aFixOfACheckWithoutOne_isRefused_butNotRecorded() throws {
        let daemon = try started()
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let refused = try client.call("io.weavedi.Daemon.Fix", [("check", .string("container.graph"))]).parameter("fixes")?.arrayValue
        #expect(refused?.first?[member: "outcome"]?.stringValue == "refused", "\(refused.map { "\($0)" } ?? "no fix")")
        #expect(refused?.first?[member: "message"]?.stringValue == #""container.graph" offers no fix"#)
        let ctl = try CtlRun.run(["--socket", daemon.defaultSocket, "fix", "container.graph"])
        #expect(ctl.code == 1, "\(ctl.all)")
        #expect(try client.call("io.weavedi.Daemon.ListFixes").parameter("fixes")?.arrayValue == [])
        // A fix that runs is recorded as before.
        _ = try client.call("io.weavedi.Daemon.Fix", [("check", .string("control.socket"))])
        let history = try client.call("io.weavedi.Daemon.ListFixes").parameter("fixes")?.arrayValue
        #expect(history?.map { $0[member: "check"]?.stringValue } == ["control.socket"], "\(history.map { "\($0)" } ?? "none")")
        let listed = try CtlRun.run(["--socket", daemon.defaultSocket, "fixes"])
        #expect(!listed.output.contains("container.graph"), "\(listed.all)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }
}
