import Foundation
import Testing
import WeaveDI
import WeaveDIControl
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

    /// Python playing systemd: a listening socket at `socketPath` on descriptor 3, then the
    /// daemon exec'd with `LISTEN_PID` set to `listenPID` (Python, evaluated in the wrapper:
    /// `os.getpid()` is the daemon's pid once it execs).
    func activationWrapper(socketPath: String, listenPID: String = "os.getpid()") -> [String] {
        ["/usr/bin/env", "python3", "-c", """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(sys.argv[1]); s.listen(16)
            os.dup2(s.fileno(), 3); os.set_inheritable(3, True)
            os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(\(listenPID)), LISTEN_FDNAMES="control")
            os.execv(sys.argv[2], sys.argv[2:])
            """, socketPath]
    }

    @Test func passedSocket_isUsed_andNotRemovedAtExit() throws {
        let directory = TemporaryDirectory()
        let socketPath = directory.path + "/activated.sock"
        let daemon = try DaemonProcess(directory: directory, wrapper: activationWrapper(socketPath: socketPath))
        #expect(daemon.waitForLog("ready;"))
        #expect(daemon.log.contains(#"using the control socket passed by systemd (descriptor 3, "control")"#))
        #expect(!fileExists(daemon.defaultSocket))
        #expect(!(try roundTrip(socketPath)).isEmpty)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        #expect(fileExists(socketPath))  // systemd owns it
    }

    /// Sockets passed for another process (`LISTEN_PID` naming another one, as in a program
    /// that started the daemon without clearing its own) are not taken: the daemon binds its
    /// own socket and serves there, as `sd_listen_fds(3)` ignores them.
    @Test func socketsPassedForAnotherProcess_areLeftAlone() throws {
        let directory = TemporaryDirectory()
        let socketPath = directory.path + "/activated.sock"
        // LISTEN_PID names the wrapper's parent, not the daemon.
        let daemon = try DaemonProcess(directory: directory, wrapper: activationWrapper(socketPath: socketPath, listenPID: "os.getppid()"))
        #expect(daemon.waitForLog("ready;"))
        #expect(!daemon.log.contains("passed by systemd"), "\(daemon.log)")
        #expect(daemon.log.contains("ready; control socket \"\(daemon.defaultSocket)\""), "\(daemon.log)")
        #expect(!(try roundTrip(daemon.defaultSocket)).isEmpty)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// Under socket activation a reload that changes `control.socket` is taken (the socket
    /// systemd passed is the one served), and the log says the change moves nothing and where
    /// the socket is set instead.
    @Test func aReloadChangingTheSocket_underActivation_isWarnedAbout() throws {
        let directory = TemporaryDirectory()
        let socketPath = directory.path + "/activated.sock"
        let config = directory.path + "/weavedid.json"
        directory.write("weavedid.json", #"{"control": {"socket": "\#(directory.path)/first.sock"}}"#)
        let daemon = try DaemonProcess(
            ["--config", config], directory: directory, wrapper: activationWrapper([socketPath], names: ["control"]))
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains("starting (pid \(daemon.pid), configuration: \"\(config)\")"), "\(daemon.log)")
        directory.write("weavedid.json", #"{"control": {"socket": "\#(directory.path)/second.sock"}}"#)
        daemon.send(.hangup)
        #expect(daemon.waitForLog("configuration reloaded"), "\(daemon.log)")
        let warning = "warning control: control.socket changed from \"\(directory.path)/first.sock\" to "
            + "\"\(directory.path)/second.sock\": not used, as the daemon serves the socket systemd passed "
            + "(\"\(socketPath)\"); to move it, change ListenStream= of weavedid.socket"
        #expect(daemon.log.contains(warning), "\(daemon.log)")
        #expect(!(try roundTrip(socketPath)).isEmpty)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Python plays systemd: listening sockets on descriptors 3…, named `names` (joined with
    /// `:` into LISTEN_FDNAMES), LISTEN_PID naming the daemon.
    func activationWrapper(_ paths: [String], names: [String]) -> [String] {
        ["/usr/bin/env", "python3", "-c", """
            import os, socket, sys
            n = int(sys.argv[1]); paths = sys.argv[2:2 + n]; names = sys.argv[2 + n]; rest = sys.argv[3 + n:]
            kept = []  # a socket collected closes its descriptor, which may be one of 3...
            for i, path in enumerate(paths):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(path); s.listen(16)
                os.dup2(s.fileno(), 3 + i); os.set_inheritable(3 + i, True); kept.append(s)
            os.environ.update(LISTEN_FDS=str(n), LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES=names)
            os.execv(rest[0], rest)
            """, "\(paths.count)"] + paths + [names.joined(separator: ":")]
    }

    /// The `control.socket` check watches the file of the socket systemd passed: deleted, or
    /// replaced by another socket at its path, it is unhealthy, saying to restart the socket
    /// unit (the daemon cannot make a socket systemd owns), and offers no fix.
    @Test func passedSocket_deletedOrReplaced_isUnhealthy() throws {
        let directory = TemporaryDirectory()
        let socketPath = directory.path + "/activated.sock"
        let daemon = try DaemonProcess(directory: directory, wrapper: activationWrapper([socketPath], names: ["control"]))
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try VarlinkClient(path: socketPath)  // keeps working without the file
        func check() throws -> JSONValue? { try client.check("control.socket") }
        var found = try check()
        #expect(found?[member: "status"]?.stringValue == "healthy", "\(found.map { "\($0)" } ?? "no check")")
        #expect(found?[member: "message"]?.stringValue == "listening on \"\(socketPath)\", passed by systemd")
        #expect(found?[member: "fixable"]?.boolValue == false)
        let restart = "restart weavedid.socket and weavedid.service (systemctl restart weavedid.socket weavedid.service): "
            + "systemd made the socket, and only it can make it again"
        try FileDescriptor.currentWorkingDirectory.unlink(at: socketPath)
        let other = try UnixSocket.listen(at: UnixSocketAddress(path: socketPath))
        found = try check()
        #expect(found?[member: "status"]?.stringValue == "unhealthy", "\(found.map { "\($0)" } ?? "no check")")
        #expect(found?[member: "message"]?.stringValue
            == "the socket file \"\(socketPath)\" that systemd passed was replaced, so no new client reaches the daemon; \(restart)")
        try FileDescriptor.currentWorkingDirectory.unlink(at: socketPath)
        found = try check()
        #expect(found?[member: "message"]?.stringValue
            == "the socket file \"\(socketPath)\" that systemd passed is missing, so no new client can connect; \(restart)")
        try other.close()
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// systemd names a socket after its unit unless `FileDescriptorName=` says otherwise
    /// (`weavedid.socket`): the only socket passed is the control socket, whatever its name.
    @Test func theOnlyPassedSocket_isUsed_whateverItsName() throws {
        let directory = TemporaryDirectory()
        let socketPath = directory.path + "/activated.sock"
        let daemon = try DaemonProcess(directory: directory, wrapper: activationWrapper([socketPath], names: ["weavedid.socket"]))
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains(#"using the control socket passed by systemd (descriptor 3, "weavedid.socket")"#), "\(daemon.log)")
        #expect(!fileExists(daemon.defaultSocket))
        #expect(!(try roundTrip(socketPath)).isEmpty)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A name of 100 000 characters (`LISTEN_FDNAMES` may hold 128 KiB; systemd's are 255 at
    /// most) is shown shortened in the log, not whole.
    @Test func theOnlyPassedSocket_withAHugeName_isNamedShort() throws {
        let directory = TemporaryDirectory()
        let socketPath = directory.path + "/activated.sock"
        let name = String(repeating: "x", count: 100_000)
        let daemon = try DaemonProcess(directory: directory, wrapper: activationWrapper([socketPath], names: [name]))
        #expect(daemon.waitForLog("ready;"), "\(daemon.log.prefix(2000))")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        #expect(daemon.log.contains(#"using the control socket passed by systemd (descriptor 3, "\#(name.prefix(57))..." (100000 characters))"#),
            "\(daemon.log.prefix(2000))")
        #expect(daemon.log.utf8.count < 10_000, "a log of \(daemon.log.utf8.count) bytes")
    }

    /// Several sockets, none named `control`: the daemon cannot tell which to serve, and says
    /// so, instead of binding a socket of its own while nobody answers on the passed ones.
    @Test func severalPassedSockets_noneNamedControl_refuseTheStart() throws {
        let directory = TemporaryDirectory()
        let paths = [directory.path + "/a.sock", directory.path + "/b.sock"]
        let daemon = try DaemonProcess(directory: directory, wrapper: activationWrapper(paths, names: ["a", "b"]))
        #expect(daemon.wait() == .exited(1), "\(daemon.log)")
        #expect(daemon.log.contains(#"systemd passed 2 sockets ("a", "b") and none is named control"#), "\(daemon.log)")
        #expect(!fileExists(daemon.defaultSocket))
    }

    /// Several sockets, one of them `control`: that one is used, and the others, whose clients
    /// would wait for ever, are named in a warning.
    @Test func severalPassedSockets_theOneNamedControl_isUsed() throws {
        let directory = TemporaryDirectory()
        let paths = [directory.path + "/other.sock", directory.path + "/control.sock"]
        let daemon = try DaemonProcess(directory: directory, wrapper: activationWrapper(paths, names: ["other", "control"]))
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains(#"using the control socket passed by systemd (descriptor 4, "control")"#), "\(daemon.log)")
        #expect(daemon.log.contains(#"warning daemon: systemd passed 2 sockets; only descriptor 4 ("control") is served, "#
            + #"not descriptor 3 ("other", "\#(paths[0])"): their clients connect and wait for ever"#), "\(daemon.log)")
        #expect(!(try roundTrip(paths[1])).isEmpty)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// Under socket activation the ready message (`STATUS=`, the log) names the socket the
    /// daemon serves, the one passed, not the configuration's `control.socket`.
    @Test func readyMessage_namesThePassedSocket() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let socketPath = directory.path + "/activated.sock"
        let daemon = try DaemonProcess(directory: directory, notify: notify, wrapper: activationWrapper([socketPath], names: ["control"]))
        #expect(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        #expect(notify.lines.contains(#"STATUS=running; control socket "\#(socketPath)" (passed by systemd)"#), "\(notify.lines)")
        #expect(daemon.waitForLog(#"ready; control socket "\#(socketPath)" (passed by systemd) (talk to it: weavedictl --socket \#(socketPath) health)"#),
                "\(daemon.log)")
        #expect(!daemon.log.contains(daemon.defaultSocket), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A `LISTEN_FDS` that is no usable count refuses the start, naming the variable, its value
    /// and what is wrong with it.
    @Test(arguments: [
        ("abc", #"LISTEN_FDS="abc" is not a number"#),
        ("", #"LISTEN_FDS="" is not a number"#),
        ("-1", #"LISTEN_FDS="-1" is negative"#),
        // Digits only, as systemd writes it and as LISTEN_PID is read: no sign, no space.
        ("+2", #"LISTEN_FDS="+2" is not a number of decimal digits only (no sign, no space)"#),
        ("-0", #"LISTEN_FDS="-0" is not a number of decimal digits only (no sign, no space)"#),
        (" 1", #"LISTEN_FDS=" 1" is not a number of decimal digits only (no sign, no space)"#),
        ("99999999999", #"LISTEN_FDS="99999999999" is too large: the daemon takes at most 1023 passed descriptors"#),
        ("5000", #"LISTEN_FDS="5000" is too large: the daemon takes at most 1023 passed descriptors"#),
    ])
    func invalidListenFds_isNamed_withWhatIsWrong(value: String, problem: String) throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(directory: directory, notify: notify, prefix: "LISTEN_PID=$$ LISTEN_FDS='\(value)'")
        #expect(daemon.wait() == .exited(1), "\(daemon.log)")
        #expect(daemon.log.contains("error   daemon: socket activation: \(problem)"), "\(daemon.log)")
        #expect(notify.wait { $0.hasPrefix("STATUS=socket activation: \(problem)") }, "\(notify.lines)")
        #expect(!fileExists(daemon.defaultSocket))
    }

    /// A `LISTEN_PID` that is no process id refuses the start, as `sd_listen_fds(3)` does,
    /// instead of taking the sockets for another process's and binding a socket of its own.
    @Test(arguments: ["abc", "", "-5", "0", "+12"])
    func invalidListenPid_isNamed(value: String) throws {
        let directory = TemporaryDirectory()
        let daemon = try DaemonProcess(directory: directory, prefix: "LISTEN_PID='\(value)' LISTEN_FDS=1")
        #expect(daemon.wait() == .exited(1), "\(daemon.log)")
        #expect(daemon.log.contains("socket activation: LISTEN_PID=\"\(value)\" is not a process id"), "\(daemon.log)")
        #expect(!fileExists(daemon.defaultSocket))
    }

    /// `LISTEN_FDS` counting more descriptors than are open says which one is missing, and
    /// which variable said it was there.
    @Test func listenFdsBeyondTheOpenDescriptors_namesTheVariable() throws {
        let directory = TemporaryDirectory()
        // Descriptors 3 to 9 closed in the shell; LISTEN_FDS says 7 were passed.
        let daemon = try DaemonProcess(
            directory: directory, prefix: "exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; LISTEN_PID=$$ LISTEN_FDS=7")
        #expect(daemon.wait() == .exited(1), "\(daemon.log)")
        #expect(daemon.log.contains("socket activation: LISTEN_FDS=\"7\" counts descriptors 3 to 9, but descriptor 3 is not open"),
                "\(daemon.log)")
    }

    @Test func withSystemdSocketActivate() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate") else {
            try Test.cancel("/usr/bin/systemd-socket-activate is not installed")
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
