import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
@testable import WeaveDIDaemon
import WeaveDIPosix

/// Every failed item of a run can be seen, not only the first: the log has a line for each
/// (up to 20, then how many more), the run's `failedItems` (`RunJob`, `ListJobs`' `lastRun`,
/// kept across a restart in `jobs.json`) lists the first 20, and `weavedictl run-job --wait`
/// prints them below its summary. The daemon runs as `nobody` (through `setpriv`), for whom
/// source files of mode 000 cannot be read.
@Suite struct DaemonFailedItemsTests {
    static let unreadable = 25

    /// A failed item's path and reason are kept to 1 KiB each (a path may be 4 KiB, and 20 of
    /// them for every job go into `jobs.json`, which is not read past 16 MiB), cut at a character.
    @Test func aFailedItemsPathAndReason_areKeptTo1KiB_cutAtACharacter() {
        let long = SyncItemError(path: String(repeating: "é", count: 1000), reason: String(repeating: "r", count: 5000))
        #expect(long.path.utf8.count <= 1024 && long.path.hasSuffix("…") && long.path.hasPrefix("éé"), "\(long.path.utf8.count)")
        #expect(long.path.dropLast().allSatisfy { $0 == "é" })
        #expect(long.reason.utf8.count <= 1024 && long.reason.hasSuffix("…"))
        let short = SyncItemError(path: "a/b.txt", reason: "open: Permission denied (EACCES)")
        #expect(short.path == "a/b.txt" && short.reason == "open: Permission denied (EACCES)")
    }

    @Test func everyFailedItem_isInTheLog_theRunsFailedItems_andRunJobWait() throws {
        try ChildAsNobody.requirePossible()
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("source/fine.txt", "fine")
        for index in 0..<Self.unreadable { directory.write("source/closed-\(index).txt", "closed") }
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        let owned = try Subprocess.run("/bin/chown", arguments: ["-R", "65534:65534", d], environment: [:])
        try #require(owned.status == .exited(0), "\(owned.standardErrorText)")
        for index in 0..<Self.unreadable { #expect(chmod(d + "/source/closed-\(index).txt", 0) == 0) }
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(d)/source", "destination": "\(d)/mirror", "interval": 3600}]}}
            """)
        let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        let daemon = try DaemonProcess(["--config", config], directory: directory, wrapper: asNobody)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")

        let shown = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", "docs", "--wait"], wrapper: asNobody)
        #expect(shown.code == 1, "\(shown.all)")
        let lines = shown.output.split(separator: "\n").map(String.init)
        let items = lines.filter { $0.hasPrefix("  closed-") }
        #expect(items.count == 20, "\(shown.all)")
        #expect(items.allSatisfy { $0.hasSuffix(": open: Permission denied (EACCES)") }, "\(items)")
        #expect(lines.last == "  … and 5 more (the daemon keeps the first 20)", "\(shown.all)")
        #expect(directory.read("mirror/fine.txt") == "fine")
        // `weavedictl jobs NAME` shows the last run with the same items.
        let job = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs", "docs"], wrapper: asNobody)
        let jobLines = job.output.split(separator: "\n").map(String.init)
        #expect(jobLines.contains { $0.hasPrefix("Last run:     ended ") && $0.contains(" ago: run docs-1 partial in ") }, "\(job.all)")
        #expect(jobLines.filter { $0.hasPrefix("  closed-") } == items, "\(job.all)")
        #expect(jobLines.last == "  … and 5 more (the daemon keeps the first 20)", "\(job.all)")

        // The log: a line for each of the first 20, then the count of the rest.
        let logged = daemon.log.split(separator: "\n").filter { $0.contains("sync: docs: docs-1: \"closed-") }
        #expect(logged.count == 20, "\(daemon.log)")
        #expect(daemon.log.contains("sync: docs: docs-1: 5 more item(s) failed"), "\(daemon.log)")

        // ListJobs' last run, and again after a restart (from jobs.json).
        func lastRunItems(_ daemon: DaemonProcess) throws -> [JSONValue] {
            let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
            return job?[member: "lastRun"]?[member: "failedItems"]?.arrayValue ?? []
        }
        let listed = try lastRunItems(daemon)
        #expect(listed.count == 20)
        #expect(listed.first?[member: "reason"]?.stringValue == "open: Permission denied (EACCES)", "\(listed)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        let again = try DaemonProcess(["--config", config], directory: directory, wrapper: asNobody)
        try #require(again.waitForLog("ready;"), "\(again.log)")
        #expect(try lastRunItems(again) == listed, "\(again.log)")
        again.send(.terminate)
        #expect(again.wait() == .exited(0), "\(again.log)")
    }
}
