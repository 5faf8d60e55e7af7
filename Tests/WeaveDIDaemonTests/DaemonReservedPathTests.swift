import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// The real daemon keeps mirror destinations off its own paths beyond the configured control
/// socket and the state directory: the socket systemd passed, bound at another path, and the
/// metrics file (`sync.metricsFile`), at the load and at each run's start.
@Suite struct DaemonReservedPathTests {
    static let passedSocketConsequence = "; the daemon serves it in place of control.socket, and the job would delete or "
        + "overwrite it; choose another destination, or another path for the socket unit's ListenStream="
    static let metricsConsequence = "; the daemon writes it after each run, and the job would delete or overwrite it, "
        + "or keep it from being written; set sync.metricsFile outside every destination"

    /// A deleting job `docs` from `@/source` into `destination`, with `extra` members in `sync`.
    static func config(_ directory: TemporaryDirectory, destination: String, sync extra: String = "") -> String {
        directory.write("weavedid.json", """
            {"sync": {\(extra)"jobs": [
              {"name": "docs", "source": "\(directory.path)/source", "destination": "\(destination)", "delete": true, "interval": 3600}]}}
            """)
    }

    /// Runs the job `docs` over `client`; the run's record.
    static func run(_ client: VarlinkClient) throws -> JSONValue? {
        try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))]).parameter("run")
    }

    @Test func checkConfig_refusesADestinationHoldingTheMetricsFile_exit78() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let config = Self.config(directory, destination: d + "/textfile", sync: #""metricsFile": "\#(d)/textfile/weavedi.prom", "#)
        let check = try DaemonProcess(["--check-config", "--config", config], directory: directory)
        #expect(check.wait() == .exited(78), "\(check.log)")
        #expect(check.log.contains(#"\#(config): sync.jobs[0].destination: the destination "\#(d)/textfile" contains the metrics file "\#(d)/textfile/weavedi.prom""#
            + Self.metricsConsequence), "\(check.log)")
    }

    /// Through a link that exists when the daemon starts: the start is refused, naming the link
    /// and where it leads.
    @Test func start_refusesADestinationHoldingTheMetricsFile_throughALink() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        try FileManager.default.createDirectory(atPath: d + "/textfile", withIntermediateDirectories: true)
        try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: d + "/link", pointingTo: "textfile")
        let metrics = d + "/textfile/weavedi.prom"
        let config = Self.config(directory, destination: d + "/link", sync: #""metricsFile": "\#(metrics)", "#)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        #expect(daemon.wait() == .exited(78), "\(daemon.log)")
        #expect(daemon.log.contains(#"\#(config): sync.jobs[0].destination: the destination "\#(d)/link" of job "docs" contains the metrics file "\#(metrics)" through symbolic links ("\#(d)/link" resolves to "\#(d)/textfile", "\#(metrics)" to "\#(metrics)")"#
            + Self.metricsConsequence), "\(daemon.log)")
    }

    /// The metrics file in `other/mirror/textfile`, clear of the destination `box/mirror` when
    /// the daemon starts; `box` then becomes a link to `other`: the next run, which would delete
    /// the metrics file's directory, is refused, and the file stays.
    @Test func aRunOverTheMetricsFile_throughALinkMadeAfterTheStart_isRefused() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        try directory.makeBoxAndOther(holding: "textfile")
        let metrics = d + "/other/mirror/textfile/weavedi.prom"
        let config = Self.config(directory, destination: d + "/box/mirror", sync: #""metricsFile": "\#(metrics)", "#)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        #expect(try Self.run(client)?[member: "result"]?.stringValue == "success")
        try #require(DaemonStateDirectoryLockTests.waitForFile(metrics), "\(daemon.log)")

        try directory.turnBoxIntoALinkToOther()
        let run = try Self.run(client)
        #expect(run?[member: "result"]?.stringValue == "failed")
        #expect(run?[member: "message"]?.stringValue == "\"\(d)/box/mirror\": the destination \"\(d)/box/mirror\" of job \"docs\" "
            + "contains the metrics file \"\(metrics)\" through symbolic links (\"\(d)/box/mirror\" resolves to "
            + "\"\(d)/other/mirror\", \"\(metrics)\" to \"\(metrics)\")" + Self.metricsConsequence)
        // Nothing was copied there, and the metrics file is where it was.
        #expect(directory.read("other/mirror/a.txt") == nil)
        #expect(directory.read("other/mirror/textfile/weavedi.prom")?.contains("weavedi_sync_runs_total") == true)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Under socket activation the socket served is bound where the socket unit says, not at
    /// `control.socket`: a destination that holds it is refused at the start, as the
    /// configured socket's would be, and the socket is left alone.
    @Test func start_refusesADestinationHoldingThePassedSocket() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        try FileManager.default.createDirectory(atPath: d + "/served", withIntermediateDirectories: true)
        let socket = d + "/served/ctl.sock"
        let config = Self.config(directory, destination: d + "/served")
        let daemon = try DaemonProcess(
            ["--config", config], directory: directory, wrapper: SocketActivationTests().activationWrapper([socket], names: ["control"]))
        #expect(daemon.wait() == .exited(78), "\(daemon.log)")
        #expect(daemon.log.contains(#"\#(config): sync.jobs[0].destination: the destination "\#(d)/served" of job "docs" contains the control socket passed by systemd "\#(socket)""#
            + Self.passedSocketConsequence + "\n"), "\(daemon.log)")
        #expect(fileExists(socket))
    }

    /// The passed socket in `other/mirror/s`, clear of the destination `box/mirror` when the
    /// daemon starts; `box` then becomes a link to `other`: the next run, which would delete
    /// the socket the daemon serves, is refused, and the socket still answers.
    @Test func aRunOverThePassedSocket_throughALinkMadeAfterTheStart_isRefused() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        try directory.makeBoxAndOther(holding: "s")
        let socket = d + "/other/mirror/s/ctl.sock"
        let config = Self.config(directory, destination: d + "/box/mirror")
        let daemon = try DaemonProcess(
            ["--config", config], directory: directory, wrapper: SocketActivationTests().activationWrapper([socket], names: ["control"]))
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try VarlinkClient(path: socket)
        #expect(try Self.run(client)?[member: "result"]?.stringValue == "success")

        try directory.turnBoxIntoALinkToOther()
        let run = try Self.run(client)
        #expect(run?[member: "result"]?.stringValue == "failed")
        #expect(run?[member: "message"]?.stringValue == "\"\(d)/box/mirror\": the destination \"\(d)/box/mirror\" of job \"docs\" "
            + "contains the control socket passed by systemd \"\(socket)\" through symbolic links (\"\(d)/box/mirror\" resolves "
            + "to \"\(d)/other/mirror\", \"\(socket)\" to \"\(socket)\")" + Self.passedSocketConsequence)
        // Nothing was copied there, and the socket still takes new connections.
        #expect(directory.read("other/mirror/a.txt") == nil)
        #expect(try VarlinkClient(path: socket).call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
