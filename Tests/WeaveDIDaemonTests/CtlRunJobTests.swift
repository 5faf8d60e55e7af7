import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// `weavedictl run-job` against the real daemon, on a run that lasts: without `--wait` it
/// answers once the run has started, with `--wait` it follows it; interrupted or cut short by
/// a reload, it says what became of the run.
@Suite struct CtlRunJobTests {
    /// A daemon whose job `big` copies a sparse file of `size` bytes when run (seconds of work:
    /// the copy's zeros are written out), and `smallFiles` small ones (whose copies make
    /// progress updates while the large one is copied), with `control.callTimeout` at
    /// `callTimeout`.
    func bigJobDaemon(size: Int = 2 << 30, smallFiles: Int = 0, callTimeout: Double = 10) throws -> (DaemonProcess, TemporaryDirectory) {
        let directory = TemporaryDirectory()
        let big = directory.write("source/big.bin", "")
        for index in 0..<smallFiles { directory.write("source/small/\(index).txt", "\(index)\n") }
        directory.write("little-source/a.txt", "a\n")
        for mirror in ["mirror", "little-mirror"] {
            try FileManager.default.createDirectory(atPath: directory.path + "/" + mirror, withIntermediateDirectories: true)
        }
        try #require(truncate(big, off_t(size)) == 0, "truncate: \(Errno.current)")
        let config = directory.write("weavedid.json", """
            {"control": {"callTimeout": \(callTimeout)}, "sync": {"jobs": [{"name": "big", "source": "\(directory.path)/source",
              "destination": "\(directory.path)/mirror", "interval": 3600},
              {"name": "little", "source": "\(directory.path)/little-source", "destination": "\(directory.path)/little-mirror",
              "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        return (daemon, directory)
    }

    /// Without `--wait`, a run longer than the daemon's call time limit is no failure: the
    /// answer comes as soon as the run has started, with its id, and the run goes on.
    @Test func runJob_withoutWait_answersOnceStarted_andTheRunGoesOn() throws {
        let (daemon, _) = try bigJobDaemon(callTimeout: 1)
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "run-job", "big"])
        #expect(run.code == 0, "\(run.all)\n\(daemon.log)")
        #expect(run.output == "job big: run big-1 started; it goes on in the daemon (`weavedictl jobs` shows how it ends)\n", "\(run.all)")
        #expect(daemon.waitForLog("big: run big-1 success", timeout: .seconds(180)), "\(daemon.log)")
    }

    /// The varlink side: with `more`, the first reply names the run as soon as it has started;
    /// `detach` answers with the run's id in `runId` while the run goes on; a job already
    /// running is a `skipped` run, as without it; `detach` with `more` is refused.
    @Test func runJob_namesTheRun_andDetachAnswersOnceStarted() throws {
        let (daemon, _) = try bigJobDaemon()
        let follower = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        try follower.send(VarlinkCall(method: "io.weavedi.Daemon.RunJob", parameters: [("name", .string("big"))], more: true))
        let first = try follower.receive()
        #expect(first.continues && first.parameter("runId") == .string("big-1"), "\(first)")
        #expect(first.parameter("run") == nil && first.parameter("progress") == nil, "\(first)")  // both null

        let client = try VarlinkClient(path: daemon.defaultSocket, timeout: .seconds(30))
        let started = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("little")), ("detach", .bool(true))])
        #expect(started.parameter("runId") == .string("little-2"), "\(started)")
        #expect(started.parameter("run") == nil)
        #expect(daemon.waitForLog("little: run little-2 success"), "\(daemon.log)")
        let again = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("big")), ("detach", .bool(true))])
        #expect(again.parameter("runId") == nil)
        #expect(again.parameter("run")?[member: "result"] == .string("skipped"), "\(again)")
        do {
            try client.call(VarlinkCall(
                method: "io.weavedi.Daemon.RunJob", parameters: [("name", .string("big")), ("detach", .bool(true))], more: true))
            Issue.record("detach with more was taken")
        } catch let failure as VarlinkFailure {
            #expect(failure.name == "org.varlink.service.InvalidParameter", "\(failure)")
            #expect(failure.parameters.first { $0.0 == "parameter" }?.1 == .string("detach"), "\(failure)")
        }
    }
}
