import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Paths the daemon and weavedictl get from outside as bytes that are not UTF-8 (a working
/// directory, an environment variable): held as text, they would name another path, so they
/// are used as relative paths, ignored with a warning, or refused, never repaired.
@Suite struct DaemonTextPathTests {
    /// A library flag that is not UTF-8 is said once, by the library, as not valid UTF-8 (with
    /// what it accepts); a variable of the daemon's own that holds no path is said ignored,
    /// without the reason a path has.
    @Test func variablesThatAreNotUTF8_areSaidOnce_withTheirOwnReason() throws {
        let daemon = try DaemonProcess(
            ["--check-config"],
            prefix: #"export WEAVEDI_REGISTRY_AUTO_FIX="$(printf 'on\377')" WEAVEDID_LOG="$(printf 'x\377')";"#)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        let autoFix = daemon.log.split(separator: "\n").filter { $0.contains("WEAVEDI_REGISTRY_AUTO_FIX") }
        #expect(autoFix.count == 1, "\(daemon.log)")
        #expect(autoFix.first?.hasSuffix(
            #"WEAVEDI_REGISTRY_AUTO_FIX="on\#u{FFFD}" is not valid UTF-8 (\#u{FFFD} stands for its bytes that are not) (accepted: 1, true, yes, on, 0, false, no or off (any case)); using the current setting (on)"#)
            == true, "\(daemon.log)")
        #expect(daemon.log.contains("environment variable WEAVEDID_LOG is not valid UTF-8: ignored\n"), "\(daemon.log)")
    }

    @Test func aWorkingDirectoryThatIsNotUTF8_isUsedItself_notASiblingWithARepairedName() throws {
        let directory = TemporaryDirectory("weavedid-cwd")
        // The built-in default, under the working directory; STATE_DIRECTORY is not UTF-8.
        let daemon = try DaemonProcess(
            [], environment: ["RUNTIME_DIRECTORY": "", "STATE_DIRECTORY": ""], directory: directory,
            prefix: #"mkdir "$(printf 'a\377b')" && cd "$(printf 'a\377b')" && ln -s "$PWD" ../link && export STATE_DIRECTORY="$(printf '/tmp/s\377')";"#)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains("environment variable STATE_DIRECTORY is not valid UTF-8: ignored"), "\(daemon.log)")
        #expect(daemon.log.contains("the working directory cannot be read as UTF-8 text"), "\(daemon.log)")
        // Everything is in the directory itself (reached here through a link of UTF-8 name).
        let client = try VarlinkClient(path: directory.path + "/link/.weavedi/run/control.sock")
        #expect(try client.call("io.weavedi.Daemon.Ping").parameters.isEmpty == false)
        #expect(!daemon.log.contains("PWD"), "\(daemon.log)")  // not one weavedid reads
        #expect(FileManager.default.fileExists(atPath: directory.path + "/link/.weavedi/example/source"))
        // A mirror works on real paths, which are not text here: its run fails, and says why.
        // The example job runs at start; its run is the one looked at (a RunJob meanwhile
        // would be skipped as one is running).
        var run: JSONValue?
        let deadline = ContinuousClock.now + .seconds(20)
        while run == nil || run?.isNull == true, ContinuousClock.now < deadline {
            let jobs = try client.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue ?? []
            run = jobs.first { $0[member: "name"]?.stringValue == "example" }?[member: "lastRun"]
            if run == nil || run?.isNull == true { usleep(20_000) }
        }
        #expect(run?[member: "result"]?.stringValue == "failed")
        #expect(run?[member: "message"]?.stringValue?.hasSuffix(
            "the source cannot be resolved: its real path is not valid UTF-8 (EILSEQ): as text it would name another path") == true,
            "\(run.map { "\($0)" } ?? "no run")")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/a\u{FFFD}b"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/s\u{FFFD}"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func weavedictl_aSocketVariableThatIsNotUTF8_isRefused_unlessSocketIsGiven() throws {
        for name in ["WEAVEDI_SOCKET", "RUNTIME_DIRECTORY", "XDG_RUNTIME_DIR"] {
            let run = try CtlRun.execute(["/bin/sh", "-c", #"\#(name)="$(printf '/tmp/x\377')" exec "$0" ping"#, CtlRun.binary])
            #expect(run.code == 64, "\(name): \(run.all)")
            #expect(run.error.hasPrefix("weavedictl: the environment variable \(name) is not valid UTF-8"), "\(name): \(run.all)")
        }
        let given = try CtlRun.execute(["/bin/sh", "-c", #"WEAVEDI_SOCKET="$(printf '/tmp/x\377')" exec "$0" --socket /nonexistent/control.sock ping"#, CtlRun.binary])
        #expect(given.code == 69, "\(given.all)")
    }
}
