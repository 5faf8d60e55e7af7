import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// `/usr/bin/setpriv`, when the tests run as root and may act as another user with it.
let setpriv: String? = CurrentProcess.effectiveUserID == 0 && fileExists("/usr/bin/setpriv") && fileExists("/usr/bin/python3")
    ? "/usr/bin/setpriv" : nil

/// A control client run as another user (through `setpriv`): a Python script that takes steps
/// from its arguments, in order: `send:JSON` sends one message, `send:JSON|||JSON…` several in
/// one write (pipelined), `read` prints the next reply on a line (`(closed)` at end of file),
/// `touch:PATH` creates a file, `wait:PATH` waits (20 s at most) until a file exists.
enum ForeignClient {
    static let script = """
        import os, socket, sys, time
        s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
        buffered = b""
        def reply():
            global buffered
            while b"\\0" not in buffered:
                chunk = s.recv(65536)
                if not chunk: return "(closed)"
                buffered += chunk
            message, _, buffered = buffered.partition(b"\\0")
            return message.decode()
        for step in sys.argv[2:]:
            kind, _, argument = step.partition(":")
            if kind == "send": s.sendall(b"".join(m.encode() + b"\\0" for m in argument.split("|||")))
            elif kind == "read": print(reply(), flush=True)
            elif kind == "touch": open(argument, "w").close()
            elif kind == "wait":
                deadline = time.time() + 20
                while not os.path.exists(argument) and time.time() < deadline: time.sleep(0.02)
        """

    /// The command line that runs the client as `uid` with primary group `gid` and the
    /// supplementary `groups` (none when empty).
    static func argv(socket: String, uid: UInt32, gid: UInt32, groups: [UInt32] = [], steps: [String]) -> [String] {
        let groupOption = groups.isEmpty ? "--clear-groups" : "--groups=" + groups.map(String.init).joined(separator: ",")
        return [setpriv ?? "/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(gid)", groupOption, "/usr/bin/python3", "-c", script, socket] + steps
    }

    /// Runs the client to its end; returns the replies it read, one per line.
    static func run(socket: String, uid: UInt32 = 65534, gid: UInt32 = 65534, groups: [UInt32] = [], steps: [String]) throws -> [String] {
        let run = try CtlRun.execute(argv(socket: socket, uid: uid, gid: gid, groups: groups, steps: steps))
        #expect(run.code == 0, "the client failed: \(run.all)")
        return run.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }
}

/// Who may do what over the control socket, tried as a local user who may connect but is no
/// administrator would try it.
@Suite(.enabled(if: setpriv != nil, "needs root, setpriv and python3 to act as another user"))
struct ControlAuthorizationTests {
    /// A daemon whose socket nobody (gid 65534) may connect to, with one job (`docs`).
    func started(_ control: String = #""socketGroup": 65534"#) throws -> (DaemonProcess, config: String) {
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)  // so that another user can reach run/
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: directory.path + "/source")
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: directory.path + "/copy")
        let config = Self.configure(directory, control)
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        chmod(directory.path + "/run", 0o755)  // a socket 0666 is open to all users
        return (daemon, config)
    }

    /// Writes the configuration with `control` and the job `docs`; returns its path.
    @discardableResult
    static func configure(_ directory: TemporaryDirectory, _ control: String) -> String {
        directory.write("weavedid.json", """
            {"control": {\(control)}, "sync": {"jobs": [
              {"name": "docs", "source": "\(directory.path)/source", "destination": "\(directory.path)/copy"}]}}
            """)
    }

    /// The methods open to whoever may connect, as the README lists them.
    static let readingMethods: Set<String> = [
        "io.weavedi.Daemon.Ping", "io.weavedi.Daemon.GetHealth", "io.weavedi.Daemon.RunChecks", "io.weavedi.Daemon.ListFixes",
        "io.weavedi.Daemon.ListJobs", "io.weavedi.Daemon.ListSessions", "io.weavedi.Daemon.ListRegistrations",
        "io.weavedi.Daemon.DiagnoseComponents", "io.weavedi.Daemon.CheckCycles", "io.weavedi.Daemon.GetLogLevel",
        "io.weavedi.Daemon.GetMetrics", "org.varlink.service.GetInfo", "org.varlink.service.GetInterfaceDescription",
    ]

    /// Parameters that would make each changing method do something.
    static func parameters(_ method: String) -> String {
        switch method {
        case "io.weavedi.Daemon.RunJob", "io.weavedi.Daemon.PauseJob", "io.weavedi.Daemon.ResumeJob": #"{"name":"docs"}"#
        case "io.weavedi.Daemon.SetLogLevel": #"{"level":"off","filter":"debug"}"#
        case "io.weavedi.Daemon.Fix": #"{"check":"control.socket"}"#
        default: "{}"
        }
    }

    static func denied(_ method: String) -> String {
        #"{"error":"io.weavedi.Daemon.PermissionDenied","parameters":{"method":"\#(method)","uid":65534}}"#
    }

    /// What a changing method would have changed, as root sees it.
    static func state(_ daemon: DaemonProcess) throws -> [String] {
        let client = try VarlinkClient(path: daemon.defaultSocket)
        let d = "io.weavedi.Daemon."
        let level = try client.call(d + "GetLogLevel")
        let job = try client.call(d + "ListJobs").parameter("jobs")?.arrayValue?.first
        return [
            "level \(level.parameter("level")?.stringValue ?? "?") filter \(level.parameter("filter")?.stringValue ?? "?")",
            "paused \(job?[member: "paused"]?.boolValue.map(String.init) ?? "?")",
            "last run \(job?[member: "lastRun"].map { $0.isNull ? "none" : "some" } ?? "?")",
            "fixes \(try client.call(d + "ListFixes").parameter("fixes")?.arrayValue?.count ?? -1)",
            "reloads \(daemon.log.components(separatedBy: "reloading the configuration").count - 1)",
        ]
    }

    /// Every method of the interfaces that is not a reading one refuses a user who is no
    /// administrator, however it is called: plainly, with `more`, `oneway` (no reply, and
    /// nothing done), pipelined in one write behind a call answered at once (`Ping`) or behind
    /// one that is still running (`RunChecks`); and nothing changes. A method added to the
    /// interface and left open fails this test until the README's list of reading methods
    /// (and this one) says it is one.
    @Test func everyChangingMethod_isRefusedToANonAdministrator_howeverItIsCalled() throws {
        let (daemon, _) = try started()
        let before = try Self.state(daemon)
        let changing = DaemonInterface.methodNames.subtracting(Self.readingMethods).sorted()
        #expect(changing == [
            "io.weavedi.Daemon.Fix", "io.weavedi.Daemon.PauseJob", "io.weavedi.Daemon.Reload", "io.weavedi.Daemon.ResumeJob",
            "io.weavedi.Daemon.RunJob", "io.weavedi.Daemon.SetLogLevel",
        ])
        let ping = #"{"method":"io.weavedi.Daemon.Ping"}"#
        let runChecks = #"{"method":"io.weavedi.Daemon.RunChecks"}"#
        for method in changing {
            let plain = #"{"method":"\#(method)","parameters":\#(Self.parameters(method))"#
            let replies = try ForeignClient.run(socket: daemon.defaultSocket, steps: [
                "send:\(plain)}", "read",
                "send:\(plain),\"more\":true}", "read",
                "send:\(plain),\"oneway\":true}|||\(ping)", "read",
                "send:\(ping)|||\(plain)}", "read", "read",
                "send:\(runChecks)|||\(plain),\"more\":true}|||\(plain),\"oneway\":true}|||\(plain)}", "read", "read", "read",
            ])
            let denied = Self.denied(method)
            #expect(replies.count == 8, "\(method): \(replies)")
            guard replies.count == 8 else { continue }
            #expect(replies[0] == denied && replies[1] == denied, "\(method): \(replies)")
            #expect(replies[2].contains(#""version":"#), "\(method) oneway got a reply: \(replies[2])")
            #expect(replies[3].contains(#""version":"#) && replies[4] == denied, "\(method): \(replies)")
            #expect(replies[5].contains(#""health":"#) && replies[6] == denied && replies[7] == denied, "\(method): \(replies)")
        }
        #expect(try Self.state(daemon) == before, "\(daemon.log)")
        #expect(daemon.waitForLog("denied io.weavedi.Daemon.Fix to uid 65534"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// Other spellings of a changing method's name reach no method: another case, another
    /// interface, an interface alias, a character that only looks the same, a NUL inside.
    @Test func otherSpellingsOfAChangingMethod_reachNothing() throws {
        let (daemon, _) = try started()
        let before = try Self.state(daemon)
        let spellings: [(String, String)] = [
            ("io.weavedi.daemon.SetLogLevel", "org.varlink.service.InterfaceNotFound"),
            ("IO.WEAVEDI.DAEMON.SetLogLevel", "org.varlink.service.InterfaceNotFound"),
            ("io.weavedi.Daemon.setLogLevel", "org.varlink.service.InvalidParameter"),
            ("io.weavedi.Daemon.SETLOGLEVEL", "org.varlink.service.MethodNotFound"),
            ("org.varlink.service.SetLogLevel", "org.varlink.service.MethodNotFound"),
            ("io.weavedi.Daemon.SetLogLevel.SetLogLevel", "org.varlink.service.InterfaceNotFound"),
            ("io.weavedi.SetLogLevel", "org.varlink.service.InterfaceNotFound"),
            ("io.weavedi.Daemon.SetLogLevel\\u0000", "org.varlink.service.InvalidParameter"),
            ("io.weavedi.Daemon.SetLogLev\\u0435l", "org.varlink.service.InvalidParameter"),
            ("io.weavedi.Daemon.SetLogLevel ", "org.varlink.service.InvalidParameter"),
            ("io.weavedi.Daemon..SetLogLevel", "org.varlink.service.InvalidParameter"),
        ]
        var steps: [String] = []
        for (name, _) in spellings { steps += [#"send:{"method":"\#(name)","parameters":{"level":"off"}}"#, "read"] }
        let replies = try ForeignClient.run(socket: daemon.defaultSocket, steps: steps)
        #expect(replies.count == spellings.count, "\(replies)")
        for (reply, (name, error)) in zip(replies, spellings) {
            #expect(reply.hasPrefix(#"{"error":"\#(error)""#), "\(name): \(reply)")
        }
        #expect(try Self.state(daemon) == before)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// An administrator group counts whether it is the peer's primary group or one of its
    /// supplementary groups, and whether the configuration names it or gives its gid.
    @Test func anAdministratorGroup_countsAsPrimaryOrSupplementary_byNameOrGid() throws {
        let setLevel = [#"send:{"method":"io.weavedi.Daemon.SetLogLevel","parameters":{"level":"all"}}"#, "read"]
        for groups in [#""adminGroups": ["users"]"#, #""adminGroups": [100]"#] {
            let (daemon, _) = try started(#""socketMode": "0666", \#(groups)"#)
            let primary = try ForeignClient.run(socket: daemon.defaultSocket, gid: 100, steps: setLevel)
            #expect(primary.first?.contains(#""level":"all""#) == true, "\(groups), primary group: \(primary)")
            let supplementary = try ForeignClient.run(socket: daemon.defaultSocket, groups: [50, 100], steps: setLevel)
            #expect(supplementary.first?.contains(#""level":"all""#) == true, "\(groups), supplementary: \(supplementary)")
            let neither = try ForeignClient.run(socket: daemon.defaultSocket, groups: [50], steps: setLevel)
            #expect(neither.first?.contains("PermissionDenied") == true, "\(groups), neither: \(neither)")
            daemon.send(.terminate)
            #expect(daemon.wait() == .exited(0))
        }
    }

    /// One user who is no administrator may hold `maxClientsPerUser` connections, not every
    /// place: the next is refused with `LimitExceeded` ("clients per user"), while another user
    /// and an administrator still get in.
    @Test func oneUser_mayHoldNoMoreThanMaxClientsPerUser() throws {
        let (daemon, _) = try started(#""socketGroup": 65534, "maxClients": 16, "maxClientsPerUser": 2"#)
        let flags = daemon.directory.path + "/flags"
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: flags)
        #expect(chown(flags, 65534, 65534) == 0)
        let ping = #"send:{"method":"io.weavedi.Daemon.Ping"}"#
        func hold(_ index: Int) throws -> Subprocess {
            let holder = try Subprocess.spawn(
                "/usr/bin/setpriv",
                arguments: Array(ForeignClient.argv(socket: daemon.defaultSocket, uid: 65534, gid: 65534, steps: [
                    ping, "read", "touch:\(flags)/held\(index)", "wait:\(flags)/release",
                ]).dropFirst()),
                environment: ["PATH": "/usr/bin:/bin"], standardOutput: .file(flags + "/out\(index)"), standardError: .file(flags + "/out\(index)"))
            let deadline = ContinuousClock.now + .seconds(30)
            while !fileExists(flags + "/held\(index)"), ContinuousClock.now < deadline { usleep(20_000) }
            return holder
        }
        let first = try hold(0)
        let second = try hold(1)
        let third = try ForeignClient.run(socket: daemon.defaultSocket, steps: ["read"])  // refused at once, without a call
        #expect(third == [#"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"clients per user","value":2}}"#], "\(third)")
        let other = try ForeignClient.run(socket: daemon.defaultSocket, uid: 65533, steps: [ping, "read"])
        #expect(other.first?.contains(#""version""#) == true, "\(other)")
        let administrators = try (0..<3).map { _ in try VarlinkClient(path: daemon.defaultSocket) }
        for client in administrators { #expect(try client.call("io.weavedi.Daemon.Ping").parameter("version") != nil) }
        #expect(daemon.log.contains("refused a client (pid ") && daemon.log.contains(
            "uid 65534): uid 65534 has 2 connections open already, the most one user may have (control.maxClientsPerUser)"), "\(daemon.log)")
        #expect(FileManager.default.createFile(atPath: flags + "/release", contents: nil))
        #expect(try first.wait() == .exited(0))
        #expect(try second.wait() == .exited(0))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// Rights are decided at each call, not at connect: a reload that takes a user off the
    /// administrators takes its rights away on the connection it holds open, and one that adds
    /// it gives them there.
    @Test func aReload_changesTheRightsOfAConnectionHeldOpen() throws {
        let (daemon, _) = try started(#""socketGroup": 65534, "adminUsers": [65534]"#)
        let flags = daemon.directory.path + "/flags"
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: flags)
        #expect(chown(flags, 65534, 65534) == 0)
        let setLevel = #"send:{"method":"io.weavedi.Daemon.SetLogLevel","parameters":{"level":"all"}}"#
        let output = daemon.directory.path + "/client.out"
        let client = try Subprocess.spawn(
            "/usr/bin/setpriv",
            arguments: Array(ForeignClient.argv(socket: daemon.defaultSocket, uid: 65534, gid: 65534, steps: [
                setLevel, "read", "touch:\(flags)/1", "wait:\(flags)/demoted",
                setLevel, "read", "touch:\(flags)/2", "wait:\(flags)/promoted",
                setLevel, "read",
            ]).dropFirst()),
            environment: ["PATH": "/usr/bin:/bin"], standardOutput: .file(output), standardError: .file(output))
        func reload(_ control: String) throws {
            Self.configure(daemon.directory, control)
            let reply = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Reload")
            #expect(reply.parameter("status")?.stringValue == "configuration reloaded", "\(daemon.log)")
        }
        func waitFor(_ flag: String) -> Bool {
            let deadline = ContinuousClock.now + .seconds(30)
            while !fileExists(flag), ContinuousClock.now < deadline { usleep(20_000) }
            return fileExists(flag)
        }
        #expect(waitFor(flags + "/1"))
        try reload(#""socketGroup": 65534, "adminUsers": []"#)
        #expect(FileManager.default.createFile(atPath: flags + "/demoted", contents: nil))
        #expect(waitFor(flags + "/2"))
        try reload(#""socketGroup": 65534, "adminUsers": ["nobody"]"#)
        #expect(FileManager.default.createFile(atPath: flags + "/promoted", contents: nil))
        #expect(try client.wait() == .exited(0))
        let replies = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        #expect(replies.count == 3, "\(replies)")
        #expect(replies.first?.contains(#""level":"all""#) == true, "\(replies)")
        #expect(replies.dropFirst().first == Self.denied("io.weavedi.Daemon.SetLogLevel"), "\(replies)")
        #expect(replies.last?.contains(#""level":"all""#) == true, "\(replies)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// Administrator names are looked up again at every reload, even one that leaves them as
    /// they were: an account deleted, or renumbered, and its old uid given to another user,
    /// leaves that user no rights. (The daemon runs in a mount namespace of its own, where a
    /// copy of /etc/passwd is mounted over it, so that the test can change an account.)
    @Test func aReload_looksUpAdministratorNamesAgain_evenUnchanged() throws {
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let passwd = directory.path + "/passwd"
        let system = try String(contentsOfFile: "/etc/passwd", encoding: .utf8)
        func account(uid: Int) throws {  // written in place: the mount is of this file
            try (system + "wdalice:x:\(uid):\(uid)::/nonexistent:/usr/sbin/nologin\n").write(toFile: passwd, atomically: false, encoding: .utf8)
        }
        try account(uid: 65534)  // nobody's uid, as a new account may be given a uid freed
        guard let wrapper = MountNamespace.wrapper(binding: [(passwd, "/etc/passwd")]) else {
            try Test.cancel("\(MountNamespace.unsupportedReason ?? "")")
        }
        let config = directory.write("weavedid.json", #"{"control": {"socketMode": "0666", "adminUsers": ["wdalice"]}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory, wrapper: wrapper)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        chmod(directory.path + "/run", 0o755)
        let setLevel = [#"send:{"method":"io.weavedi.Daemon.SetLogLevel","parameters":{"level":"all"}}"#, "read"]
        let before = try ForeignClient.run(socket: daemon.defaultSocket, steps: setLevel)
        #expect(before.first?.contains(#""level":"all""#) == true, "wdalice has uid 65534: \(before)\n\(daemon.log)")

        try account(uid: 60000)
        let reload = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Reload")
        #expect(reload.parameter("status")?.stringValue == "configuration reloaded", "\(daemon.log)")
        let after = try ForeignClient.run(socket: daemon.defaultSocket, steps: setLevel)
        #expect(after == [Self.denied("io.weavedi.Daemon.SetLogLevel")], "uid 65534 is wdalice's no more: \(after)")
        #expect(daemon.waitForLog("administrators now: users wdalice; groups none (uids 60000; gids none)"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// The socket group's name is looked up again at every reload too: a group deleted and its
    /// name given to another gid, the reload gives the socket the new gid, and the members of
    /// the old one (whoever is given it next) can no longer connect. (The daemon runs in a
    /// mount namespace of its own, where a copy of /etc/group is mounted over it.)
    @Test func aReload_looksUpTheSocketGroupAgain_evenUnchanged() throws {
        guard fileExists("/usr/bin/unshare"), MountNamespace.unsupportedReason == nil else {
            try Test.cancel("needs unshare and mount namespaces")
        }
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let group = directory.path + "/group"
        let system = try String(contentsOfFile: "/etc/group", encoding: .utf8)
        func ops(gid: Int) throws {  // written in place: the mount is of this file
            try (system + "wdops:x:\(gid):\n").write(toFile: group, atomically: false, encoding: .utf8)
        }
        try ops(gid: 65534)
        // Not a user namespace: the daemon gives the socket gids that only the machine's own maps.
        let wrapper = ["/usr/bin/unshare", "-m", "/bin/sh", "-c", "mount --bind \"$1\" /etc/group && shift && exec \"$@\"", "sh", group]
        let config = directory.write("weavedid.json", #"{"control": {"socketGroup": "wdops"}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory, wrapper: wrapper)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let ping = [#"send:{"method":"io.weavedi.Daemon.Ping"}"#, "read"]
        let member = try CtlRun.execute(ForeignClient.argv(socket: daemon.defaultSocket, uid: 65534, gid: 65534, steps: ping))
        #expect(member.output.contains(#""version":"#), "gid 65534 is wdops: \(member.all)\n\(daemon.log)")

        try ops(gid: 60000)
        let reload = try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Reload")
        #expect(reload.parameter("status")?.stringValue == "configuration reloaded", "\(daemon.log)")
        #expect(try FileStatus(path: daemon.defaultSocket, followSymlinks: false).groupID == 60000)
        let former = try CtlRun.execute(ForeignClient.argv(socket: daemon.defaultSocket, uid: 65534, gid: 65534, steps: ping))
        #expect(former.code != 0 && former.error.contains("PermissionError"), "gid 65534 is wdops' no more: \(former.all)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }
}
