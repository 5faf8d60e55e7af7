import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// The calls of one connection run one after another, in the order sent, as varlink has it:
/// a call starts only once the call before it on the connection has ended, whether either is
/// answered on the I/O thread or runs as a task, `oneway` or not. Each test pipelines its calls
/// in one write, many times over, so that calls run at the same time would show.
@Suite struct ControlCallOrderTests {
    /// A daemon with one job (`docs`, of an empty tree, not run by its timer during the test).
    func started(in directory: TemporaryDirectory = TemporaryDirectory()) throws -> DaemonProcess {
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: directory.path + "/source")
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: directory.path + "/copy")
        let config = directory.write("weavedid.json", """
            {"control": {"idleTimeout": 120}, "sync": {"jobs": [
              {"name": "docs", "source": "\(directory.path)/source", "destination": "\(directory.path)/copy", "interval": 3600}]}}
            """)
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        return daemon
    }

    static let d = "io.weavedi.Daemon."

    /// A message refused whole (too large) behind a `oneway` call answered on the I/O thread,
    /// itself behind a call run as a task: the refusal is sent once their turn is over, and the
    /// connection closed, though the `oneway` call wrote nothing that would have brought it out.
    @Test func aRefusalQueuedBehindAOnewayInlineCall_isSent_andTheConnectionClosed() throws {
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", #"{"control": {"maxMessageBytes": 1024, "idleTimeout": 120}, "sync": {"jobs": []}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try RawClient(daemon.defaultSocket)
        try client.send(call(Self.d + "SetLogLevel", #"{"level":"all"}"#, extra: #","oneway":true"#)
            + call(Self.d + "Ping", extra: #","oneway":true"#) + String(repeating: "x", count: 2000))
        let reply = client.varlinkReply(timeout: .seconds(20))
        #expect(reply?.error == "io.weavedi.Daemon.LimitExceeded", "\(String(describing: reply))")
        #expect(client.closedByPeer(timeout: .seconds(20)))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }
    static let levels = ["all", "registration", "optimization", "errors"]

    /// `PauseJob` then `ResumeJob` then `ListJobs`, all run as tasks: the listing sees the job
    /// resumed, and so does a later look.
    @Test func pauseThenResume_leavesTheJobRunning_andTheListingSeesIt() throws {
        let daemon = try started()
        let client = try RawClient(daemon.defaultSocket)
        var wrong: [String] = []
        let round = call(Self.d + "PauseJob", #"{"name":"docs"}"#) + call(Self.d + "ResumeJob", #"{"name":"docs"}"#)
            + call(Self.d + "ListJobs")
        // 100 writes of 10 rounds each: run at the same time, about one round in 100 went wrong.
        for write in 0..<100 {
            try client.send(String(repeating: round, count: 10))
            for index in 0..<10 {
                _ = client.reply()
                _ = client.reply()
                let jobs = client.varlinkReply()?.parameter("jobs")?.arrayValue?.first
                if jobs?[member: "paused"]?.boolValue != false { wrong.append("write \(write), round \(index): \(jobs.map { "\($0)" } ?? "no reply")") }
            }
        }
        #expect(wrong.isEmpty, "\(wrong.count) of 1000 listings saw the job paused: \(wrong.prefix(3))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// `SetLogLevel` twice (tasks) then `GetLogLevel` (answered on the I/O thread): the level
    /// read is the second one set, never the first nor the one before.
    @Test func setLogLevelTwice_thenGetLogLevel_readsTheLastOneSet() throws {
        let daemon = try started()
        let client = try RawClient(daemon.defaultSocket)
        var wrong: [String] = []
        for round in 0..<50 {
            let level = Self.levels[round % Self.levels.count]
            try client.send(call(Self.d + "SetLogLevel", #"{"level":"off"}"#) + call(Self.d + "SetLogLevel", #"{"level":"\#(level)"}"#)
                + call(Self.d + "GetLogLevel"))
            _ = client.reply()
            _ = client.reply()
            let read = client.varlinkReply()?.parameter("level")?.stringValue
            if read != level { wrong.append("round \(round): \(level) set, \(read ?? "no reply") read") }
        }
        #expect(wrong.isEmpty, "\(wrong.count) of 50 rounds read another level: \(wrong.prefix(3))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A `oneway` `SetLogLevel` (no reply) then `GetLogLevel`: the call that gets no reply has
    /// its turn all the same, and has ended before the next call starts.
    @Test func onewaySetLogLevel_thenGetLogLevel_readsTheLevelSet() throws {
        let daemon = try started()
        let client = try RawClient(daemon.defaultSocket)
        var wrong: [String] = []
        for round in 0..<50 {
            let level = Self.levels[round % Self.levels.count]
            try client.send(call(Self.d + "SetLogLevel", #"{"level":"\#(level)"}"#, extra: #","oneway":true"#) + call(Self.d + "GetLogLevel"))
            let read = client.varlinkReply()?.parameter("level")?.stringValue
            if read != level { wrong.append("round \(round): \(level) set, \(read ?? "no reply") read") }
        }
        #expect(wrong.isEmpty, "\(wrong.count) of 50 rounds read another level: \(wrong.prefix(3))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// `RunJob` twice, then a detached one: each run starts once the run before has ended, so
    /// neither of the first two is skipped for a run another call of the connection started.
    @Test func runJobsPipelined_runOneAfterAnother_noneSkipped() throws {
        let daemon = try started()
        let client = try RawClient(daemon.defaultSocket)
        var wrong: [String] = []
        let run = call(Self.d + "RunJob", #"{"name":"docs"}"#)
        for round in 0..<20 {
            try client.send(run + run)
            for index in 0..<2 {
                let result = client.varlinkReply()?.parameter("run")?[member: "result"]?.stringValue
                if result != "success" { wrong.append("round \(round), call \(index): \(result ?? "no reply")") }
            }
        }
        try client.send(run + run + call(Self.d + "RunJob", #"{"name":"docs","detach":true}"#))
        for index in 0..<2 {
            let result = client.varlinkReply()?.parameter("run")?[member: "result"]?.stringValue
            if result != "success" { wrong.append("last round, call \(index): \(result ?? "no reply")") }
        }
        #expect(client.varlinkReply()?.error == nil)
        #expect(wrong.isEmpty, "\(wrong.count) runs did not succeed: \(wrong.prefix(3))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// `SetLogLevel` calls from two connections at once each set their level and filter
    /// together: every reply shows one call's pair, never one's level with the other's filter,
    /// and so does the level in effect at the end.
    @Test func setLogLevelFromTwoConnections_neverMixesTheirPairs() throws {
        let daemon = try started()
        let pairs = [("errors", "warning"), ("off", "debug")]
        let clients = try pairs.map { _ in try RawClient(daemon.defaultSocket) }
        // Rounds of 300 calls pipelined on each connection. A race: with the pairs set apart,
        // this test caught a mixed one in about half of its runs.
        var mixed: [String] = []
        for _ in 0..<10 {
            for (client, pair) in zip(clients, pairs) {
                try client.send(String(repeating: call(Self.d + "SetLogLevel", #"{"level":"\#(pair.0)","filter":"\#(pair.1)"}"#), count: 300))
            }
            for client in clients {
                for _ in 0..<300 {
                    let reply = client.varlinkReply()
                    let seen = (reply?.parameter("level")?.stringValue ?? "?", reply?.parameter("filter")?.stringValue ?? "?")
                    if !pairs.contains(where: { $0 == seen }) { mixed.append("\(seen)") }
                }
            }
        }
        #expect(mixed.isEmpty, "\(mixed.count) of 6000 replies mixed two calls' level and filter: \(mixed.prefix(3))")
        let last = try daemon.sendCall("GetLogLevel").varlinkReply()
        let seen = (last?.parameter("level")?.stringValue ?? "?", last?.parameter("filter")?.stringValue ?? "?")
        #expect(pairs.contains { $0 == seen }, "\(seen)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }
}
