import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// A `control.socketGroup` this machine does not know is a configuration error, said as every
/// other one, with the file's path first: at the start, at a reload and by `--check-config` alike.
@Suite struct SocketGroupErrorTests {
    static let group = "no-such-group-weavedi-\(getpid())"

    static func problem(_ config: String) -> String {
        "\(config): control.socketGroup: no group named \"\(group)\" on this machine: create it (the package's weavedi group "
            + "comes with systemd/sysusers.d/weavedi.conf), name another group, or remove the field"
    }

    @Test func anUnknownGroup_atTheStart_namesTheFile() throws {
        let directory = TemporaryDirectory("weavedid-group")
        let config = directory.write("weavedid.json", #"{"control": {"socketGroup": "\#(Self.group)"}, "sync": {"jobs": []}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        // 78, as the check's: the unit does not restart on it.
        #expect(daemon.wait() == .exited(78), "\(daemon.log)")
        #expect(daemon.log.contains("control: \(Self.problem(config))"), "\(daemon.log)")
        // The check says the same, once.
        let check = try Subprocess.run(
            DaemonProcess.binary, arguments: ["--config", config, "--check-config"],
            environment: DaemonProcess.childEnvironment([:], directory: directory.path))
        #expect(check.status == .exited(78))
        #expect(check.standardErrorText == "weavedid: \(Self.problem(config))\n", "\(check.standardErrorText)")
    }

    @Test func anUnknownGroup_atAReload_namesTheFile_inTheReplyAndTheLog() throws {
        let directory = TemporaryDirectory("weavedid-group")
        let config = directory.write("weavedid.json", #"{"sync": {"jobs": []}}"#)
        let daemon = try readyDaemon(["--config", config], directory: directory)
        directory.write("weavedid.json", #"{"control": {"socketGroup": "\#(Self.group)"}, "sync": {"jobs": []}}"#)
        let refusal = try reloadFailure(daemon.defaultSocket)
        #expect(refusal?.name == "io.weavedi.Daemon.ReloadRefused", "\(daemon.log)")
        #expect(refusal?.reply.parameter("reason")?.stringValue == Self.problem(config), "\(daemon.log)")
        #expect(daemon.waitForLog("reload refused: \(Self.problem(config)); keeping the previous configuration"), "\(daemon.log)")
        // By SIGHUP too.
        func refusals() -> Int {
            daemon.log.components(separatedBy: "daemon: reload refused: \(Self.problem(config)); keeping the previous configuration").count - 1
        }
        #expect(refusals() == 1, "\(daemon.log)")
        daemon.send(.hangup)
        let deadline = ContinuousClock.now + .seconds(30)
        while refusals() < 2, ContinuousClock.now < deadline { usleep(20_000) }
        #expect(refusals() == 2, "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
