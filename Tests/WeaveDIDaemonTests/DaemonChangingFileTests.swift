import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
@testable import WeaveDIDaemon
import WeaveDIPosix

/// A file that changes while being copied is skipped with a warning, which the run's message
/// and a metric tell; skipped so in `ChangingFiles.runsBeforeError` runs in a row (a file
/// written all the time, never in the backup), it is an error of the run, across a restart,
/// until a run copies it. The copy is made to see a change by a preloaded `openat`: creating
/// the copy's temporary file appends a byte to the source file while `change` exists. Each
/// place that says so says whether the backup has an earlier copy: not in the first runs (the
/// destination never had the file), so none is said to be kept; and the run's last progress
/// counts the file skipped, its bytes not copied, as the run's summary does.
@Suite struct DaemonChangingFileTests {
    @Test func aFileChangingInEveryRun_isSaidSkipped_thenAnErrorFromTheThirdRun_untilARunCopiesIt() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let change = d + "/change"
        let shim = try PreloadLibrary.holdingOpenat(#"""
            static void hold(const char *path) {
              const char *change = getenv("WEAVEDI_TEST_CHANGE"), *grow = getenv("WEAVEDI_TEST_GROW");
              if (!change || !grow || !strstr(path, ".weavedi-tmp.grow.") || access(change, F_OK) != 0) return;
              int file = open(grow, O_WRONLY | O_APPEND);
              if (file >= 0) { (void)!write(file, "x", 1); close(file); }
            }
            """#, in: directory)
        directory.write("source/grow", "start")
        directory.write("source/fine.txt", "fine")
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"stateDirectory": "\(d)/state", "sync": {"jobs": [{"name": "j", "source": "\(d)/source",
              "destination": "\(d)/mirror", "interval": 3600, "durable": false}]}}
            """)
        directory.write("change", "")
        let environment = ["LD_PRELOAD": shim, "WEAVEDI_TEST_CHANGE": change, "WEAVEDI_TEST_GROW": d + "/source/grow",
                           "WEAVEDI_REGISTRY_AUTO_FIX": "0"]
        func start() throws -> DaemonProcess {
            let daemon = try DaemonProcess(["--config", config], environment: environment, directory: directory)
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            return daemon
        }
        var waited = ""
        func run(_ daemon: DaemonProcess) throws -> JSONValue? {
            waited = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", "j", "--wait"]).output
            let job = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
            return job?[member: "lastRun"]
        }
        func skippedMetric(_ daemon: DaemonProcess) throws -> String? {
            let text = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.GetMetrics").parameter("text")?.stringValue
            return text?.split(separator: "\n").first { $0.hasPrefix("weavedi_sync_files_skipped_total{job=\"j\"}") }.map(String.init)
        }
        let skippedReason = "changed while being copied; the destination has no copy of it yet (the source changed during the run; not an error)"
        let keptReason = "changed while being copied; the previous version is kept (the source changed during the run; not an error)"
        let tooOften = { (runs: Int) in
            "changed while being copied in each of the last \(runs) runs, so the backup has no copy of it at all; a file "
                + "written all the time cannot be copied whole: stop its writer during the run, or mirror a snapshot (LVM, "
                + "btrfs) of its file system"
        }

        var daemon = try start()
        // The first two runs: a success each, which says what it skipped.
        for runs in 1...2 {
            let last = try run(daemon)
            #expect(last?[member: "result"]?.stringValue == "success", "\(String(describing: last))\n\(daemon.log)")
            #expect(last?[member: "filesSkipped"]?.intValue == 1)
            #expect(last?[member: "message"]?.stringValue == "skipped 1 item(s); first: \"grow\": \(skippedReason)", "\(String(describing: last))")
            #expect(try skippedMetric(daemon) == "weavedi_sync_files_skipped_total{job=\"j\"} \(runs)")
            // weavedictl run-job --wait: its last progress, whose bytes are the summary's (fine.txt
            // copied in the first run; grow in neither), and the run's end.
            let (copied, bytes) = runs == 1 ? (1, "4 B") : (0, "0 B")
            let lines = waited.split(separator: "\n").map(String.init)
            #expect(lines.last { $0.hasPrefix("progress: ") } == "progress: 2/2 files (1 skipped), \(bytes) / \(bytes) (100%)", "\(waited)")
            #expect(lines.last?.contains("(copied \(copied), updated 0, deleted 0, skipped 1, errors 0, \(bytes))") == true, "\(waited)")
            #expect(lines.last?.contains("\"grow\": \(skippedReason)") == true, "\(waited)")
            #expect(!waited.contains("previous version"), "\(waited)")
        }
        #expect(daemon.log.contains("skipped \"grow\": \(skippedReason)"), "\(daemon.log)")
        #expect(!daemon.log.contains("previous version"), "\(daemon.log)")
        let jobs = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs", "j"]).output
        #expect(jobs.contains("\"grow\": changed while being copied; the destination has no copy of it yet"), "\(jobs)")
        #expect(!jobs.contains("previous version"), "\(jobs)")
        #expect(!fileExists(d + "/mirror/grow"))
        #expect(directory.read("mirror/fine.txt") == "fine")
        // The third: an error, the run partial.
        var last = try run(daemon)
        #expect(last?[member: "result"]?.stringValue == "partial", "\(String(describing: last))\n\(daemon.log)")
        #expect(last?[member: "filesSkipped"]?.intValue == 0 && last?[member: "errors"]?.intValue == 1)
        #expect(last?[member: "message"]?.stringValue == "1 item(s) failed; first: \"grow\": \(tooOften(3))", "\(String(describing: last))")
        #expect(last?[member: "failedItems"]?.arrayValue?.first?[member: "reason"]?.stringValue == tooOften(3))
        #expect(try skippedMetric(daemon) == "weavedi_sync_files_skipped_total{job=\"j\"} 2")
        // Its last progress says so too: the file failed, not done and skipped, as in the summary.
        let third = waited.split(separator: "\n").map(String.init)
        #expect(third.last { $0.hasPrefix("progress: ") }?.hasPrefix("progress: 1/2 files (1 failed), ") == true, "\(waited)")
        #expect(third.last?.contains("skipped 0, errors 1") == true, "\(waited)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")

        // A restart does not count again from 0.
        daemon = try start()
        last = try run(daemon)
        #expect(last?[member: "result"]?.stringValue == "partial", "\(String(describing: last))\n\(daemon.log)")
        #expect(last?[member: "failedItems"]?.arrayValue?.first?[member: "reason"]?.stringValue == tooOften(4))

        // Its writer stopped, a run copies it, and the count is forgotten.
        try FileManager.default.removeItem(atPath: change)
        last = try run(daemon)
        #expect(last?[member: "result"]?.stringValue == "success", "\(String(describing: last))\n\(daemon.log)")
        #expect(last?[member: "message"] == .null)
        #expect(fileExists(d + "/mirror/grow"))
        // Changing again, it is a warning again: the count starts anew; the copy made stays.
        directory.write("source/grow", "written again")
        directory.write("change", "")
        last = try run(daemon)
        #expect(last?[member: "result"]?.stringValue == "success", "\(String(describing: last))\n\(daemon.log)")
        #expect(last?[member: "filesSkipped"]?.intValue == 1)
        #expect(last?[member: "message"]?.stringValue == "skipped 1 item(s); first: \"grow\": \(keptReason)", "\(String(describing: last))")
        #expect(fileExists(d + "/mirror/grow"))
        // In 3 runs in a row: an error again, which says that the backup has an older copy.
        _ = try run(daemon)
        last = try run(daemon)
        let tooOftenKept = "changed while being copied in each of the last 3 runs, so the backup has no copy of it as it is now "
            + "(only an older one); a file written all the time cannot be copied whole: stop its writer during the run, or "
            + "mirror a snapshot (LVM, btrfs) of its file system"
        #expect(last?[member: "result"]?.stringValue == "partial", "\(String(describing: last))\n\(daemon.log)")
        #expect(last?[member: "failedItems"]?.arrayValue?.first?[member: "reason"]?.stringValue == tooOftenKept)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// The memory counts the files skipped so in this run one run more, forgets the others,
    /// and keeps at most `pathLimit`, those counted longest first.
    @Test func theMemory_countsRunsInARow_forgetsTheOthers_andIsBounded() throws {
        let before = ChangingFiles(source: "/s", destination: "/d", runs: ["a": 2, "gone": 5])
        #expect(before.after(["a", "b"]).runs == ["a": 3, "b": 1])
        let many = (0..<(ChangingFiles.pathLimit + 10)).map { "f\($0)" }
        let after = ChangingFiles(source: "/s", destination: "/d", runs: ["f59": 1]).after(many)
        #expect(after.runs.count == ChangingFiles.pathLimit)
        #expect(after.runs["f59"] == 2 && after.runs["f0"] == 1 && after.runs["f50"] == nil)
        #expect(before.after([String(repeating: "x", count: ChangingFiles.pathByteLimit + 1)]).runs.isEmpty)
        let read = try ChangingFiles(json: after.json)
        #expect(read == after)
    }

    /// A file rewritten during its copy with the same size, its modification time put back (as
    /// some tools that keep times do), is told changed by its status change time: not copied
    /// half old, half new.
    @Test func aFileRewrittenInPlace_withItsTimesPutBack_isSeenChanged() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let shim = try PreloadLibrary.holdingOpenat(#"""
            #include <sys/stat.h>
            static void hold(const char *path) {
              const char *same = getenv("WEAVEDI_TEST_SAME");
              if (!same || !strstr(path, ".weavedi-tmp.same.")) return;
              struct stat status;
              if (stat(same, &status) != 0) return;
              int file = open(same, O_WRONLY);
              if (file >= 0) { (void)!pwrite(file, "START", 5, 0); close(file); }
              struct timespec times[2] = { status.st_atim, status.st_mtim };
              utimensat(AT_FDCWD, same, times, 0);
            }
            """#, in: directory)
        directory.write("source/same", "start")
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"stateDirectory": "\(d)/state", "sync": {"jobs": [{"name": "j", "source": "\(d)/source",
              "destination": "\(d)/mirror", "interval": 3600, "durable": false}]}}
            """)
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["LD_PRELOAD": shim, "WEAVEDI_TEST_SAME": d + "/source/same"], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let waited = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", "j", "--wait"]).output
        #expect(waited.contains("skipped 1 item(s); first: \"same\": changed while being copied"), "\(waited)")
        #expect(!fileExists(d + "/mirror/same"))
        #expect(directory.read("source/same") == "START")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
