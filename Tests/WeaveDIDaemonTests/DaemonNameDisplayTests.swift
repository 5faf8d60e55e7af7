import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// A file name that is not valid UTF-8 is shown with its bytes escaped (`bad\xFFname`), not
/// repaired into `bad\u{FFFD}name`: in the log, in the run's failed items (over the socket and
/// in jobs.json, as that text) and in weavedictl's output, so the operator can tell which file.
@Suite struct DaemonNameDisplayTests {
    @Test func aNameThatIsNotUTF8_isShownWithItsBytesEscaped_everywhere() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("source/fine.txt", "fine")
        let badName = Array((d + "/source/bad").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF)] + Array("name".utf8CString)
        let made = open(badName, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(made >= 0, "cannot create a file with a name that is not UTF-8: errno \(errno)")
        close(made)
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [{"name": "docs", "source": "\(d)/source", "destination": "\(d)/mirror", "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let shown = #"bad\xFFname"#
        let run = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
        let items = run?[member: "failedItems"]?.arrayValue ?? []
        #expect(items.first?[member: "path"]?.stringValue == shown, "\(items)")
        #expect(run?[member: "message"]?.stringValue?.contains("\"bad\\\\xFFname\": the name is not valid UTF-8") == true, "\(String(describing: run))")
        #expect(daemon.log.contains("\"bad\\\\xFFname\": the name is not valid UTF-8"), "\(daemon.log)")
        #expect(!daemon.log.contains("\u{FFFD}"), "\(daemon.log)")
        let ctl = try CtlRun.run(["--socket", daemon.defaultSocket, "jobs", "docs"])
        #expect(ctl.output.contains("\"bad\\\\xFFname\": the name is not valid UTF-8"), "\(ctl.all)")
        #expect(!ctl.output.contains("\u{FFFD}"), "\(ctl.all)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        // Kept in jobs.json as that text.
        let state = try String(contentsOfFile: d + "/state/jobs.json", encoding: .utf8)
        #expect(state.contains(#""bad\\xFFname""#), "\(state)")
    }
}
