import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// A running job's progress counts the files that failed (`filesFailed`), as they fail, not
/// only the done ones. The run is held at known points by the copy gate (`CopyGate`).
@Suite struct MirrorFailedProgressTests {
    @Test func aFileThatFails_countsInTheProgress_whileTheRunGoesOn() throws {
        let directory = TemporaryDirectory()
        let gate = try CopyGate.build(in: directory)
        let d = directory.path
        // Two large files (each a batch of its own), copied one after the other (one worker),
        // and a file whose name is not valid UTF-8: an error of the scan of the root.
        let large = String(repeating: "x", count: 2 << 20)
        directory.write("source/slow-1.bin", large)
        directory.write("source/slow-2.bin", large)
        let badName = Array((d + "/source/bad-").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF), 0]
        let made = open(badName, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(made >= 0, "cannot create a file with a name that is not UTF-8: errno \(errno)")
        close(made)
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(d)/source", "destination": "\(d)/mirror",
              "interval": 3600, "workers": 1}]}}
            """)
        let daemon = try DaemonProcess(
            ["--config", config], environment: gate.environment, directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")

        let client = try RawClient(daemon.defaultSocket)
        try client.send(call("io.weavedi.Daemon.RunJob", #"{"name":"docs"}"#, extra: #","more":true"#))
        // One large file is being copied (which comes first is the file system's listing
        // order: tmpfs lists the newest first): the scan of the root, its error among it, is
        // done. The meter sends progress at most once per interval (50 ms, a lower bound the
        // wait below passes whatever the load), so the end of that file's batch sends
        // progress; the other file then holds the run, so that progress reaches us.
        let firstName = try #require(gate.waitForAny(["slow-1.bin", "slow-2.bin"]), "\(daemon.log)")
        let secondName = firstName == "slow-1.bin" ? "slow-2.bin" : "slow-1.bin"
        Thread.sleep(forTimeInterval: 0.2)
        gate.release(firstName)
        try #require(gate.waitForReached(secondName), "\(daemon.log)")
        // The progress that counts the first file done (sent as its batch ended) came after the
        // scan's error: it counts that too.
        var seen: [JSONValue] = []
        var afterFirst: JSONValue?
        while afterFirst == nil, let reply = client.varlinkReply() {
            guard let progress = reply.parameter("progress"), !progress.isNull else { continue }
            seen.append(progress)
            if progress[member: "filesDone"]?.intValue == 1 { afterFirst = progress }
        }
        let progress = try #require(afterFirst, "no progress counted the first file: \(seen)\n\(daemon.log)")
        #expect(progress[member: "filesFailed"]?.intValue == 1, "\(progress)")
        #expect(progress[member: "filesTotal"]?.intValue == 3, "\(progress)")
        gate.release(secondName)
        var run: JSONValue?
        while run == nil, let reply = client.varlinkReply() {
            if let value = reply.parameter("run"), !value.isNull { run = value }
        }
        #expect(run?[member: "result"]?.stringValue == "partial", "\(String(describing: run))")
        #expect(run?[member: "errors"]?.intValue == 1, "\(String(describing: run))")
        #expect(fileExists(d + "/mirror/slow-1.bin") && fileExists(d + "/mirror/slow-2.bin"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
