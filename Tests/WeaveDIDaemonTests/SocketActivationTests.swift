import Foundation
import Testing
import WeaveDIPosix

/// The daemon uses a listening socket passed the systemd way instead of binding its own.
@Suite struct SocketActivationTests {
    /// Sends a message and reads the reply up to its NUL terminator.
    func roundTrip(_ path: String) throws -> String {
        let client = try connectControl(path)
        defer { try? client.close() }
        try client.sendAll(Array(#"{"method":"org.varlink.service.GetInfo"}"#.utf8) + [0])
        var reply: [UInt8] = []
        while !reply.contains(0) {
            let chunk = try client.receive(upToCount: 4096)
            if chunk.isEmpty { break }
            reply += chunk
        }
        return String(decoding: reply.prefix { $0 != 0 }, as: UTF8.self)
    }

    @Test func passedSocket_isUsed_andNotRemovedAtExit() throws {
        let directory = TemporaryDirectory()
        let socketPath = directory.path + "/activated.sock"
        // Python plays systemd: a listening socket on descriptor 3, LISTEN_* naming this process.
        let wrapper = ["/usr/bin/env", "python3", "-c", """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(sys.argv[1]); s.listen(16)
            os.dup2(s.fileno(), 3); os.set_inheritable(3, True)
            os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES="control")
            os.execv(sys.argv[2], sys.argv[2:])
            """, socketPath]
        let daemon = try DaemonProcess(directory: directory, wrapper: wrapper)
        #expect(daemon.waitForLog("ready;"))
        #expect(daemon.log.contains("using the control socket passed by systemd (descriptor 3, control)"))
        #expect(!fileExists(daemon.defaultSocket))
        #expect(!(try roundTrip(socketPath)).isEmpty)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        #expect(fileExists(socketPath))  // systemd owns it
    }

    /// Python plays systemd: listening sockets on descriptors 3…, named `names` (joined with
    /// `:` into LISTEN_FDNAMES), LISTEN_PID naming the daemon.
    func activationWrapper(_ paths: [String], names: [String]) -> [String] {
        ["/usr/bin/env", "python3", "-c", """
            import os, socket, sys
            n = int(sys.argv[1]); paths = sys.argv[2:2 + n]; names = sys.argv[2 + n]; rest = sys.argv[3 + n:]
            for i, path in enumerate(paths):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(path); s.listen(16)
                os.dup2(s.fileno(), 3 + i); os.set_inheritable(3 + i, True)
            os.environ.update(LISTEN_FDS=str(n), LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES=names)
            os.execv(rest[0], rest)
            """, "\(paths.count)"] + paths + [names.joined(separator: ":")]
    }

    /// systemd names a socket after its unit unless `FileDescriptorName=` says otherwise
    /// (`weavedid.socket`): the only socket passed is the control socket, whatever its name.
    @Test func theOnlyPassedSocket_isUsed_whateverItsName() throws {
        let directory = TemporaryDirectory()
        let socketPath = directory.path + "/activated.sock"
        let daemon = try DaemonProcess(directory: directory, wrapper: activationWrapper([socketPath], names: ["weavedid.socket"]))
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains("using the control socket passed by systemd (descriptor 3, weavedid.socket)"), "\(daemon.log)")
        #expect(!fileExists(daemon.defaultSocket))
        #expect(!(try roundTrip(socketPath)).isEmpty)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// Several sockets, none named `control`: the daemon cannot tell which to serve, and says
    /// so, instead of binding a socket of its own while nobody answers on the passed ones.
    @Test func severalPassedSockets_noneNamedControl_refuseTheStart() throws {
        let directory = TemporaryDirectory()
        let paths = [directory.path + "/a.sock", directory.path + "/b.sock"]
        let daemon = try DaemonProcess(directory: directory, wrapper: activationWrapper(paths, names: ["a", "b"]))
        #expect(daemon.wait() == .exited(1), "\(daemon.log)")
        #expect(daemon.log.contains("systemd passed 2 sockets (a, b) and none is named control"), "\(daemon.log)")
        #expect(!fileExists(daemon.defaultSocket))
    }

    /// Several sockets, one of them `control`: that one is used.
    @Test func severalPassedSockets_theOneNamedControl_isUsed() throws {
        let directory = TemporaryDirectory()
        let paths = [directory.path + "/other.sock", directory.path + "/control.sock"]
        let daemon = try DaemonProcess(directory: directory, wrapper: activationWrapper(paths, names: ["other", "control"]))
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains("using the control socket passed by systemd (descriptor 4, control)"), "\(daemon.log)")
        #expect(!(try roundTrip(paths[1])).isEmpty)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func withSystemdSocketActivate() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate") else {
            print("SKIPPED withSystemdSocketActivate: /usr/bin/systemd-socket-activate is not installed")
            return
        }
        let directory = TemporaryDirectory()
        let socketPath = directory.path + "/activated.sock"
        let daemon = try DaemonProcess(
            directory: directory,
            wrapper: ["/usr/bin/systemd-socket-activate", "--listen=\(socketPath)", "--fdname=control",
                      "-E", "RUNTIME_DIRECTORY=\(directory.path)/run", "-E", "STATE_DIRECTORY=\(directory.path)/state",
                      "-E", "WEAVEDI_REGISTRY_AUTO_HEALTH=0"])
        #expect(daemon.waitForLog("Listening on"))
        #expect(!(try roundTrip(socketPath)).isEmpty)  // the first connection starts the daemon
        #expect(daemon.waitForLog("using the control socket passed by systemd"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }
}
