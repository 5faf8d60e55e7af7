import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// Paths in a sync job's messages, a root's as configured and a name met in a tree alike, are
/// quoted and escaped as everywhere in the daemon's messages (`JSONValue.quotedPathForMessage`):
/// a newline, an escape sequence or a bidirectional control in one can neither start a line of
/// its own in the log, nor colour or reorder what follows, in the run's message, its failed
/// items' reasons, the job's fix, or the log.
@Suite struct DaemonMessagePathQuotingTests {
    /// What a path's part holds: a forged log line, a colour, a right-to-left override.
    static let hostile = "\nerror   sync: forged\u{1B}[31m\u{202E}"
    /// The same as JSON writes it in the configuration, and as the messages quote it.
    static let escaped = #"\nerror   sync: forged\u001b[31m\u202e"#

    @Test func aRootAndAFileNameWithControls_areQuotedAndEscaped_inTheRunsMessages_theFix_andTheLog() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let source = d + "/source" + Self.hostile
        let destination = d + "/mirror" + Self.hostile
        let name = "a" + Self.hostile + ".txt"
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: source + "/" + name, contents: Data("a".utf8)))
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(d)/source\(Self.escaped)", \
            "destination": "\(d)/mirror\(Self.escaped)", "delete": false, "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let quotedDestination = "\"\(d)/mirror\(Self.escaped)\""

        // The missing destination: the run's message, and the log's line of its end.
        let failed = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
        #expect(failed?[member: "result"]?.stringValue == "failed", "\(String(describing: failed))")
        #expect(failed?[member: "message"]?.stringValue?.hasPrefix(quotedDestination + ": the destination does not exist; ") == true,
                "\(String(describing: failed))")
        #expect(daemon.waitForLog("docs: run docs-1 failed"), "\(daemon.log)")
        #expect(daemon.log.contains(": " + quotedDestination + ": the destination does not exist; "), "\(daemon.log)")

        // The fix by hand creates it, and says which.
        let fix = try client.call("io.weavedi.Daemon.Fix", [("check", .string("job.docs"))]).parameter("fixes")?.arrayValue?.first
        #expect(fix?[member: "outcome"]?.stringValue == "succeeded", "\(String(describing: fix))")
        #expect(fix?[member: "message"]?.stringValue?.hasPrefix("created the destination root \(quotedDestination); reset the backoff") == true,
                "\(String(describing: fix))")

        // A file whose copy a directory stands in the way of (delete is off): the message and the
        // log quote its name; its failed item has the name as its path, and a reason without it.
        let inTheWay = destination + "/" + name
        try? FileManager.default.removeItem(atPath: inTheWay)
        try FileManager.default.createDirectory(atPath: inTheWay + "/kept", withIntermediateDirectories: true)
        let partial = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
        let quotedName = "\"a\(Self.escaped).txt\""
        #expect(partial?[member: "result"]?.stringValue == "partial", "\(String(describing: partial))")
        #expect(partial?[member: "message"]?.stringValue
            == "1 item(s) failed; first: \(quotedName): a directory is in the way and delete is off", "\(String(describing: partial))")
        let item = partial?[member: "failedItems"]?.arrayValue?.first
        #expect(item?[member: "path"]?.stringValue == name, "\(String(describing: item))")
        #expect(item?[member: "reason"]?.stringValue == "a directory is in the way and delete is off", "\(String(describing: item))")
        #expect(daemon.waitForLog(": 1 item(s) failed; first: \(quotedName): a directory is in the way"), "\(daemon.log)")

        // Nothing raw reached the log: no forged line, no escape sequence, no override.
        #expect(!daemon.log.contains("\nerror   sync: forged"), "\(daemon.log)")
        #expect(!daemon.log.contains("\u{1B}") && !daemon.log.contains("\u{202E}"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func aSourceThatCannotBeResolved_isQuotedAndEscaped_inTheRunsMessage() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(d)/gone\(Self.escaped)", "destination": "\(d)/mirror", "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let run = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))])
            .parameter("run")
        #expect(run?[member: "result"]?.stringValue == "failed", "\(String(describing: run))")
        #expect(run?[member: "message"]?.stringValue
            == "\"\(d)/gone\(Self.escaped)\": the source cannot be resolved: No such file or directory (ENOENT)",
            "\(String(describing: run))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
