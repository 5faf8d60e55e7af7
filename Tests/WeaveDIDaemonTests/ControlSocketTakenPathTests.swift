import Foundation
import Testing
import WeaveDIPosix

/// A `control.socket` path taken by something that is no socket (a regular file, a directory, a
/// symbolic link): the start refuses it and leaves it as it is, with exit 78, a configuration
/// problem a restart would meet again (the unit does not restart on 78); `--check-config` fails
/// on it the same way, rather than pass a configuration the start then refuses.
@Suite struct ControlSocketTakenPathTests {
    @Test(arguments: ["a regular file", "a directory", "a symbolic link"])
    func aSocketPathTakenByNoSocket_failsTheCheck_andTheStart_with78(kind: String) throws {
        let directory = TemporaryDirectory("weavedid-taken-socket")
        let d = directory.path
        let precious = directory.write("precious.txt", "precious")
        let socket: String
        switch kind {
        case "a regular file": socket = precious
        case "a directory":
            socket = d + "/socket-dir"
            try FileManager.default.createDirectory(atPath: socket, withIntermediateDirectories: false)
        default:
            socket = d + "/socket-link"
            try FileManager.default.createSymbolicLink(atPath: socket, withDestinationPath: precious)
        }
        let config = directory.write("weavedid.json", #"{"control": {"socket": "\#(socket)"}, "stateDirectory": "\#(d)/st", "sync": {"jobs": []}}"#)

        let check = try Subprocess.run(
            DaemonProcess.binary, arguments: ["--config", config, "--check-config"],
            environment: DaemonProcess.childEnvironment([:], directory: d))
        #expect(check.status == .exited(78), "\(check.standardOutputText)\(check.standardErrorText)")
        #expect(check.standardOutputText.isEmpty)
        #expect(check.standardErrorText == """
            weavedid: \(config): control.socket: the control socket's path (from control.socket) "\(socket)" exists and is \(kind), \
            not a socket; the daemon would not start (it replaces only a socket nobody listens on, and leaves anything else there as \
            it is): remove it or choose another control.socket

            """, "\(check.standardErrorText)")

        let daemon = try DaemonProcess(["--config", config], directory: directory)
        #expect(daemon.wait() == .exited(78), "\(daemon.log)")
        #expect(daemon.log.contains(#"control: "\#(socket)" exists and is not a socket; remove it or choose another control.socket"#),
            "\(daemon.log)")
        // Left as it was, by both.
        #expect(directory.read("precious.txt") == "precious")
        let left = try FileStatus(path: socket, followSymlinks: false)
        #expect(left.kind == (kind == "a regular file" ? .regular : kind == "a directory" ? .directory : .symbolicLink))
    }
}
