import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// The real daemon with a mirror whose source tree stops answering part way down, after the
/// run has started (`DeadMount` on a subdirectory `z/dead` of the source: the roots open, the
/// walk copies `a`, and a worker then waits on `z/dead` for ever): the run fails after 5 s
/// naming the path, the worker's thread is left behind and counted, and the daemon goes on
/// answering and stops normally.
@Suite struct DaemonDeadMountWalkTests {
    final class Setup {
        let directory = TemporaryDirectory()
        let daemon: DaemonProcess
        let mount: DeadMount
        var d: String { directory.path }
        /// The tree, `src` or `dst`, whose `z/dead` stops answering.
        let deadTree: String
        /// The path the walk gets stuck on.
        var dead: String { d + "/\(deadTree)/z/dead" }

        /// Where no dead mount can be made, cancels the test (skipped), saying why.
        init(deadTree: String = "src") throws {
            self.deadTree = deadTree
            try DeadMount.requireSupport()
            let wrapper = try #require(MountNamespace.wrapper())
            let d = directory.path
            for index in 0..<20 { directory.write("src/a/file-\(index).txt", String(repeating: "\(index) ", count: 100 * index)) }
            directory.write("src/z/before.txt", "before")
            directory.write("src/z/dead/inside.txt", "inside")
            try FileManager.default.createDirectory(atPath: "\(d)/dst/z/dead", withIntermediateDirectories: true)
            let config = directory.write("weavedid.json", """
                {"sync": {"jobs": [
                  {"name": "walk", "source": "\(d)/src", "destination": "\(d)/dst", "interval": 3600, "workers": 2}]}}
                """)
            daemon = try DaemonProcess(
                ["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory, wrapper: wrapper)
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            mount = try DeadMount(at: "\(d)/\(deadTree)/z/dead", inNamespaceOf: daemon.pid, scratch: directory)
        }


        /// Every file under `dst` with a final name holds its source's whole content.
        func destinationFilesAreWhole() -> Bool {
            let files = FileManager.default.enumerator(atPath: d + "/dst")?.compactMap { $0 as? String } ?? []
            return files.allSatisfy { file in
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: "\(d)/dst/\(file)", isDirectory: &isDirectory), !isDirectory.boolValue,
                    !file.split(separator: "/").last!.hasPrefix(".weavedi-tmp.")
                else { return true }
                return FileManager.default.contents(atPath: "\(d)/dst/\(file)") == FileManager.default.contents(atPath: "\(d)/src/\(file)")
            }
        }
    }

    static func sanitized(_ text: String?) -> String? {
        text?.replacing(/for [0-9]+ s/) { _ in "for N s" }
    }

    @Test func aRunWhoseSourceStopsAnsweringDuringTheWalk_failsNamingThePath_andARetryFailsAtOnce() throws {
        let setup = try Setup()
        let d = setup.d
        let started = ContinuousClock.now
        let run = try setup.daemon.sendCall("RunJob", #"{"name": "walk"}"#).varlinkReply(timeout: .seconds(30))?.parameter("run")
        let took = ContinuousClock.now - started
        #expect(run?[member: "result"]?.stringValue == "failed", "\(setup.daemon.log)")
        #expect(run?[member: "message"]?.stringValue
            == "\"\(setup.dead)\": reading the source entry did not answer within 5 s (is its file system responding?)")
        #expect(took >= .seconds(5), "\(took)")
        // What the walk did before it stopped counts: `a`'s 20 files are in the destination.
        #expect(run?[member: "filesCopied"]?.intValue == 20 && run?[member: "errors"]?.intValue == 1, "\(String(describing: run))")
        #expect(setup.daemon.log.contains("a thread is stuck on \"\(setup.dead)\" (a mirror run's walk) and left behind; 1 stuck in all"),
                "\(setup.daemon.log)")
        #expect(setup.daemon.log.contains("walk: run walk-1 failed in "), "\(setup.daemon.log)")
        // What was copied is whole: every final name holds its source's content.
        #expect(setup.destinationFilesAreWhole())
        // The daemon answers.
        let ping = try setup.daemon.sendCall("Ping").varlinkReply(timeout: .seconds(20))
        #expect(ping != nil && ping?.error == nil, "\(setup.daemon.log)")
        // A retry does not try the path a thread is stuck on: it fails saying so, no other
        // thread left stuck there.
        let retry = try setup.daemon.sendCall("RunJob", #"{"name": "walk"}"#).varlinkReply(timeout: .seconds(20))?.parameter("run")
        #expect(retry?[member: "result"]?.stringValue == "failed", "\(setup.daemon.log)")
        #expect(Self.sanitized(retry?[member: "message"]?.stringValue)
            == "\"\(setup.dead)\": reading the source entry was not tried: an earlier thread (a mirror run's walk) has been stuck on "
                + "\"\(setup.dead)\" for N s (is its file system responding?)")
        #expect(!setup.daemon.log.contains("2 stuck in all"), "\(setup.daemon.log)")
        // The mount answers at last (with an error): the thread returns, and the log says so.
        setup.mount.revive()
        #expect(setup.daemon.waitForLog("a thread stuck on \"\(d)/src/z/dead\" (a mirror run's walk) returned after "),
                "\(setup.daemon.log)")
        #expect(setup.destinationFilesAreWhole())
        // The daemon stops normally: within its shutdown timeout (10 s), or it would exit 1.
        setup.daemon.send(.terminate)
        #expect(setup.daemon.wait(timeout: .seconds(20)) == .exited(0), "\(setup.daemon.log)")
    }

    /// The same with the destination's `z/dead` dead: the run fails naming it, and the
    /// destination's own step.
    @Test func aRunWhoseDestinationStopsAnsweringDuringTheWalk_failsNamingThePath() throws {
        let setup = try Setup(deadTree: "dst")
        let run = try setup.daemon.sendCall("RunJob", #"{"name": "walk"}"#).varlinkReply(timeout: .seconds(30))?.parameter("run")
        #expect(run?[member: "result"]?.stringValue == "failed", "\(setup.daemon.log)")
        #expect(run?[member: "message"]?.stringValue
            == "\"\(setup.dead)\": reading the destination entry did not answer within 5 s (is its file system responding?)",
            "\(setup.daemon.log)")
        #expect(setup.daemon.log.contains("a thread is stuck on \"\(setup.dead)\" (a mirror run's walk) and left behind; 1 stuck in all"),
                "\(setup.daemon.log)")
        #expect(setup.destinationFilesAreWhole())
        #expect(setup.directory.read("dst/a/file-3.txt") == setup.directory.read("src/a/file-3.txt"))
        #expect(run?[member: "filesCopied"]?.intValue == 20 && run?[member: "errors"]?.intValue == 1, "\(String(describing: run))")
        // A retry does not try the path a thread is stuck on.
        let retry = try setup.daemon.sendCall("RunJob", #"{"name": "walk"}"#).varlinkReply(timeout: .seconds(20))?.parameter("run")
        #expect(Self.sanitized(retry?[member: "message"]?.stringValue)
            == "\"\(setup.dead)\": reading the destination entry was not tried: an earlier thread (a mirror run's walk) has been "
                + "stuck on \"\(setup.dead)\" for N s (is its file system responding?)", "\(setup.daemon.log)")
        // The daemon stops normally, its thread still stuck: within its shutdown timeout (10 s),
        // or it would exit 1.
        setup.daemon.send(.terminate)
        #expect(setup.daemon.wait(timeout: .seconds(20)) == .exited(0), "\(setup.daemon.log)")
    }

    @Test func aShutdownDuringAWalkStuckOnADeadMount_exitsPromptly() throws {
        let setup = try Setup()
        let run = try setup.daemon.sendCall("RunJob", #"{"name": "walk"}"#)
        #expect(setup.daemon.waitForLog("run walk-1 started"), "\(setup.daemon.log)")
        // The walk reaches the dead mount (in milliseconds).
        #expect(DeadMount.threadsWaiting(in: setup.daemon.pid, expected: 1) == 1, "\(setup.daemon.log)")
        // The daemon stops normally, the walk's thread still stuck: within its shutdown timeout,
        // or it would exit 1.
        setup.daemon.send(.terminate)
        #expect(setup.daemon.wait() == .exited(0), "\(setup.daemon.log)")
        // Cancelled (the worker is let go after 2 s), or failed if its 5 s ran out first.
        #expect(setup.daemon.log.contains("walk: run walk-1 cancelled") || setup.daemon.log.contains("walk: run walk-1 failed"),
                "\(setup.daemon.log)")
        #expect(setup.destinationFilesAreWhole())
        withExtendedLifetime(run) {}
    }
}
