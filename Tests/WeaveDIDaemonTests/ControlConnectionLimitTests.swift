import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Per-connection limits of the control socket, against hostile or careless clients: the real
/// daemon, its real socket, and what the kernel says of its memory and CPU time.
@Suite struct ControlConnectionLimitTests {
    func started(config: String) throws -> DaemonProcess {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", directory.write("weavedid.json", config)], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        return daemon
    }

    @Test func aMessageSentInSmallPieces_costsLinearTime() throws {
        let daemon = try started(config: #"{"control": {"maxMessageBytes": 16777216}}"#)
        let client = try RawClient(daemon.defaultSocket)
        // The smallest send buffer the kernel allows: the daemon reads the message a few
        // kilobytes at a time, some two hundred reads.
        var size: Int32 = 1
        setsockopt(client.descriptor.rawValue, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let message = #"{"method":"io.weavedi.Daemon.Ping""# + String(repeating: " ", count: 1_000_000) + "}\0"
        let before = processTicks(daemon.pid)
        try client.send(message)
        #expect(client.reply(timeout: .seconds(60))?.contains(#""version":"#) == true)
        let spent = processTicks(daemon.pid) - before
        // Rescanning and copying all that was buffered at each read took seconds.
        #expect(spent < ticksPerSecond, "the daemon spent \(spent) ticks on one 1 MB message")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aHalfClosedClientThatReadsNothing_isClosedAtItsDeadline_withoutSpinning() throws {
        let daemon = try started(config: #"{"control": {"maxMessageBytes": 16777216, "idleTimeout": 1.5}}"#)
        let stalled = try RawClient(daemon.defaultSocket)
        // Far more replies than the socket buffers hold, then end of file; never a read.
        let describe = call("org.varlink.service.GetInterfaceDescription", #"{"interface":"io.weavedi.Daemon"}"#)
        try stalled.send(String(repeating: describe, count: 200))
        try stalled.descriptor.shutdown(.write)
        let ioThread = try busiestThread(daemon)
        // Connected now, not before the sampling above: an observer idle for longer than the
        // idle timeout would be closed too (under ThreadSanitizer the sampling takes that long).
        let observer = try VarlinkClient(path: daemon.defaultSocket)
        let before = threadTicks(daemon.pid)[ioThread] ?? 0
        var closed = false
        // Ends as soon as it is closed: a busy machine may take seconds past its 1.5 s.
        let deadline = ContinuousClock.now + .seconds(30)
        while !closed, ContinuousClock.now < deadline {
            usleep(100_000)
            let sessions = try observer.call("io.weavedi.Daemon.ListSessions").parameter("sessions")?.arrayValue ?? []
            closed = sessions.filter { $0[member: "kind"]?.stringValue == "control" }.count == 1
        }
        let spent = (threadTicks(daemon.pid)[ioThread] ?? 0) - before
        #expect(closed, "the stalled connection is still open")
        #expect(spent < ticksPerSecond / 3, "the I/O thread spent \(spent) ticks waiting")
        #expect(stalled.closedByPeer())
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A client that sends a byte now and then, never a whole message, is idle: closed at its
    /// deadline with the idle error (it held its place for ever, and enough of them locked
    /// every other client out).
    @Test func aClientSendingOneByteAtATime_isIdle_andClosedAtItsDeadline() throws {
        let daemon = try started(config: #"{"control": {"idleTimeout": 2}, "sync": {"jobs": []}}"#)
        let trickle = try RawClient(daemon.defaultSocket)
        let deadline = ContinuousClock.now + .seconds(30)
        var refused = false
        while ContinuousClock.now < deadline {
            guard (try? trickle.send(" ")) != nil else { break }  // closed by the daemon
            var poll = [PollDescriptor(trickle.descriptor, events: .readable)]
            if (try? PollDescriptor.poll(&poll, timeout: .milliseconds(200))) ?? 0 > 0 {
                refused = true
                break
            }
        }
        #expect(refused, "the trickling client was not closed in 30 s")
        #expect(trickle.reply(timeout: .seconds(2))?.contains(#"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"idle""#) == true)
        // A client sending whole messages is not idle: 3 s of them, past the 2 s, each 300 ms
        // after the last (a busy machine may make that a second, not 2 s).
        let active = try VarlinkClient(path: daemon.defaultSocket)
        for _ in 0..<10 {
            usleep(300_000)
            #expect(try active.call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        }
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A user without administrator rights holding connections: the last places (one in
    /// eight) stay free for administrators, so root still gets in; and the refusals, as many
    /// as a client cares to cause, are logged at most ten a minute.
    @Test func theLastPlaces_areKeptForAdministrators_andRefusalsAreNotLoggedWithoutEnd() throws {
        guard CurrentProcess.effectiveUserID == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            try Test.cancel("needs root and setpriv")
        }
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let notify = try NotifyListener(abstract: false, directory: directory)
        let config = directory.write(
            "weavedid.json", #"{"control": {"maxClients": 8, "socketGroup": 65534}, "sync": {"jobs": []}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        // As nobody: hold as many connections as it may (each answered a Ping), then try 30
        // more; report each answer, and hold on until told to let go.
        let script = """
            import os, socket, sys, time
            def answer(s):
                data = b""
                while not data.endswith(b"\\0"):
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
                return data[:-1].decode()
            held = []
            for i in range(7):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); held.append(s)
                s.sendall(b'{"method":"io.weavedi.Daemon.Ping"}\\0')
                print("held", i, "version" in answer(s))
            for i in range(30):
                # Refused at once: the answer comes without a call.
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                refusal = answer(s); s.close()
                if i == 0: print("more:", refusal)
            open(sys.argv[2] + ".holding", "w").close()
            sys.stdout.flush()
            deadline = time.time() + 20
            while not os.path.exists(sys.argv[2] + ".release") and time.time() < deadline: time.sleep(0.05)
            """
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: directory.path + "/flags")
        #expect(chown(directory.path + "/flags", 65534, 65534) == 0)
        let flag = directory.path + "/flags/nobody"
        let output = directory.path + "/nobody.out"
        let holder = try Subprocess.spawn(
            "/usr/bin/setpriv",
            arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, daemon.defaultSocket, flag],
            environment: ["PATH": "/usr/bin:/bin"], standardOutput: .file(output), standardError: .file(output))
        let waitUntil = ContinuousClock.now + .seconds(30)
        while !FileManager.default.fileExists(atPath: flag + ".holding"), ContinuousClock.now < waitUntil { usleep(20_000) }
        // Root takes the place kept for administrators.
        let root = try VarlinkClient(path: daemon.defaultSocket)
        #expect(try root.call("io.weavedi.Daemon.Ping").parameter("version") != nil, "\(daemon.log)")
        #expect(FileManager.default.createFile(atPath: flag + ".release", contents: nil))
        _ = try holder.wait()
        let report = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(report.hasPrefix((0..<7).map { "held \($0) True\n" }.joined()
            + #"more: {"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"clients","#), "\(report)")
        let refusals = daemon.log.split(separator: "\n").filter { $0.contains("refused a client") }
        #expect(refusals.count == 10, "\(refusals.count) refusals logged")
        #expect(refusals.first?.contains("uid 65534): 7 clients connected, and the last 1 places are kept for administrators") == true,
                "\(refusals)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A reload's limits apply from the next connection on, even when the I/O thread slept
    /// through the reload: a burst of connections of one user, more than the old
    /// `maxClientsPerUser` and within the new, all queued before the daemon accepts any (it is
    /// stopped meanwhile), is accepted whole. The limits were read before the thread's wait,
    /// and a reload by signal did not wake it, so that the first burst got the old ones.
    @Test func aReloadsClientsPerUser_applyToTheFirstConnectionsAfterIt() throws {
        try ChildAsNobody.requirePossible()
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let notify = try NotifyListener(abstract: false, directory: directory)
        let config = directory.write(
            "weavedid.json", #"{"control": {"maxClientsPerUser": 2, "socketGroup": 65534}, "sync": {"jobs": []}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        directory.write("weavedid.json", #"{"control": {"maxClientsPerUser": 6, "socketGroup": 65534}, "sync": {"jobs": []}}"#)
        daemon.send(.hangup)
        try #require(notify.wait(forLine: "STATUS=running; configuration reloaded"), "\(daemon.log)")
        // As nobody: 5 connections, queued while the daemon is stopped; then a Ping on each.
        let script = """
            import os, socket, sys
            held = []
            for i in range(5):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); held.append(s)
            open(sys.argv[2], "w").close()
            for s in held:
                s.sendall(b'{"method":"io.weavedi.Daemon.Ping"}\\0')
                data = b""
                while not data.endswith(b"\\0"):
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
                print(data.rstrip(b"\\0").decode())
            """
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: directory.path + "/flags")
        #expect(chown(directory.path + "/flags", 65534, 65534) == 0)
        let flag = directory.path + "/flags/connected", output = directory.path + "/nobody.out"
        try #require(stopped(daemon), "the daemon did not stop")
        let burst = try Subprocess.spawn(
            "/usr/bin/setpriv",
            arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, daemon.defaultSocket, flag],
            environment: ["PATH": "/usr/bin:/bin"], standardOutput: .file(output), standardError: .file(output))
        let waitUntil = ContinuousClock.now + .seconds(30)
        while !FileManager.default.fileExists(atPath: flag), ContinuousClock.now < waitUntil { usleep(20_000) }
        daemon.send(.continue)
        _ = try burst.wait()
        let answers = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n")
        #expect(answers.count == 5 && answers.allSatisfy { $0.contains(#""version":"#) }, "\(answers)\n\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A reload that shortens `idleTimeout` applies to the connections open already, at once:
    /// it wakes the I/O thread, which slept until the deadline the old limit gave (an hour).
    @Test func aReloadsShorterIdleTimeout_closesAConnectionIdleSinceBefore() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let config = directory.write("weavedid.json", #"{"control": {"idleTimeout": 3600}, "sync": {"jobs": []}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        let idle = try RawClient(daemon.defaultSocket)
        try idle.send(call("io.weavedi.Daemon.Ping"))
        try #require(idle.reply()?.contains(#""version":"#) == true, "\(daemon.log)")
        directory.write("weavedid.json", #"{"control": {"idleTimeout": 1}, "sync": {"jobs": []}}"#)
        daemon.send(.hangup)
        try #require(notify.wait(forLine: "STATUS=running; configuration reloaded"), "\(daemon.log)")
        #expect(idle.reply() == #"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"idle","value":1}}"#, "\(daemon.log)")
        #expect(idle.closedByPeer())
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// `idleTimeout` counts silence between calls, not the time a call takes: a `RunJob` with
    /// `more` whose run outlasts it (each copy's open held 1.5 s here) is answered to its end.
    @Test func aCallThatOutlastsTheIdleTimeout_isAnsweredToItsEnd() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let shim = try PreloadLibrary.holdingOpenat(#"""
            static void hold(const char *path) {
              if (strstr(path, ".weavedi-tmp.")) usleep(1500000);
            }
            """#, in: directory)
        directory.write("source/a.txt", "a")
        try FileManager.default.createDirectory(atPath: d + "/mirror", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"control": {"idleTimeout": 0.5}, "sync": {"jobs": [{"name": "j", "source": "\(d)/source",
              "destination": "\(d)/mirror", "interval": 3600, "durable": false}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], environment: ["LD_PRELOAD": shim], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try RawClient(daemon.defaultSocket)
        let began = ContinuousClock.now
        try client.send(call("io.weavedi.Daemon.RunJob", #"{"name":"j"}"#, extra: #","more":true"#))
        var last: VarlinkReply?
        repeat { last = client.varlinkReply(timeout: .seconds(20)) } while last?.continues == true
        #expect(last?.error == nil, "\(String(describing: last)) \(daemon.log)")
        #expect(last?.parameter("run")?[member: "result"]?.stringValue == "success", "\(String(describing: last))")
        #expect(ContinuousClock.now - began > .seconds(1), "the run did not outlast the idle timeout: the test shows nothing")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// `maxMessageBytes` is the largest message accepted: one of exactly that many bytes (its NUL
    /// not counted) is answered, one byte more is refused.
    @Test func aMessageOfExactlyTheLimit_isAnswered_andOneByteMoreIsNot() throws {
        let daemon = try started(config: #"{"control": {"maxMessageBytes": 1024}, "sync": {"jobs": []}}"#)
        // A GetInfo call padded with spaces before its closing brace (JSON allows them) to the
        // size wanted.
        func message(bytes: Int) -> String {
            let head = #"{"method":"org.varlink.service.GetInfo""#
            return head + String(repeating: " ", count: bytes - head.utf8.count - 1) + "}"
        }
        #expect(message(bytes: 1024).utf8.count == 1024)
        let exact = try RawClient(daemon.defaultSocket)
        try exact.send(message(bytes: 1024) + "\0")
        let answered = exact.varlinkReply()
        #expect(answered?.error == nil && answered?.parameter("vendor") != nil, "\(String(describing: answered))")
        let over = try RawClient(daemon.defaultSocket)
        try over.send(message(bytes: 1025) + "\0")
        #expect(over.reply() == #"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"message size","value":1024}}"#)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A client still sending a message over the limit when the daemon refuses it reads the
    /// refusal: what it sends after is read and dropped, rather than its send failing with a
    /// broken pipe and the reply lost.
    @Test func aClientStillSendingATooLargeMessage_readsTheLimitReply() throws {
        let daemon = try started(config: #"{"control": {"maxMessageBytes": 1024}, "sync": {"jobs": []}}"#)
        let client = try RawClient(daemon.defaultSocket)
        try client.send(#"{"method":"io.weavedi.Daemon.Ping","parameters":{"x":""# + String(repeating: "a", count: 2_000_000) + "\"}}\0")
        #expect(client.reply() == #"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"message size","value":1024}}"#)
        #expect(client.closedByPeer())
        // The warning names the client as the others do (a malformed call's, a refusal's).
        #expect(daemon.log.contains("(pid \(getpid()), uid \(getuid())) sent a message over 1024 bytes; closing it"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A client refused for want of places whose call was sent already (it connected and sent
    /// before the daemon accepted it: the daemon is stopped meanwhile) reads the refusal, not
    /// a reset connection.
    @Test func aRefusedClientThatSentItsCallAlready_readsTheRefusal() throws {
        let daemon = try started(config: #"{"control": {"maxClients": 1}, "sync": {"jobs": []}}"#)
        let holder = try VarlinkClient(path: daemon.defaultSocket)
        #expect(try holder.call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        daemon.send(.stop)
        let stopped = ContinuousClock.now + .seconds(5)
        func state() -> String? {  // the field after the command's parenthesis in /proc/PID/stat
            (try? String(contentsOfFile: "/proc/\(daemon.pid)/stat", encoding: .utf8))?
                .split(separator: ")").last?.split(separator: " ").first.map(String.init)
        }
        while state() != "T", ContinuousClock.now < stopped { usleep(1_000) }
        #expect(state() == "T")
        let refused = try RawClient(daemon.defaultSocket)
        try refused.send(#"{"method":"io.weavedi.Daemon.Ping"}"# + "\0")
        daemon.send(.continue)
        #expect(refused.reply() == #"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"clients","value":1}}"#)
        // Then an orderly end of file: its call was read, not left to reset the connection.
        var end = [PollDescriptor(refused.descriptor, events: .readable)]
        _ = try PollDescriptor.poll(&end, timeout: .seconds(30))
        let rest = Result { try refused.descriptor.receive(upToCount: 16) }
        #expect((try? rest.get())?.isEmpty == true, "\(rest)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// A client that shuts its writing side while its call runs: the daemon reads that end of
    /// file once and the socket no more (polling it for input would find it readable again
    /// and again, and spin), answers the call at its time limit, then closes.
    @Test func halfClosingDuringACall_stopsReading_andClosesAfterTheReply() throws {
        // The job's run is held in the copy of its file until the call has timed out.
        let files = TemporaryDirectory()
        let gate = try CopyGate.build(in: files)
        files.write("source/slow-big.bin", String(repeating: "x", count: 2 << 20))
        try FileManager.default.createDirectory(atPath: files.path + "/mirror", withIntermediateDirectories: true)
        let notify = try NotifyListener(abstract: false, directory: files)
        let config = files.write("weavedid.json", """
            {"control": {"callTimeout": 1},
             "sync": {"jobs": [{"name": "big", "source": "\(files.path)/source", "destination": "\(files.path)/mirror", "interval": 3600}]}}
            """)
        let daemon = try DaemonProcess(["--config", config], environment: gate.environment, directory: files, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        let client = try RawClient(daemon.defaultSocket)
        try client.send(call("io.weavedi.Daemon.RunJob", #"{"name":"big"}"#))
        try #require(gate.waitForReached("slow-big.bin"), "\(daemon.log)")
        try client.descriptor.shutdown(.write)
        #expect(client.reply()?.hasPrefix(#"{"error":"io.weavedi.Daemon.CallTimedOut""#) == true, "\(daemon.log)")
        #expect(client.closedByPeer())
        // Closed: the daemon is done with the socket, and read its end of file once at most.
        #expect(gate.endsOfFileRead <= 1, "the daemon read the end of file \(gate.endsOfFileRead) times")
        gate.release("slow-big.bin")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func aClientThatNeverReads_isNoLongerRead_andCostsBoundedMemory() throws {
        let daemon = try started(config: #"{"control": {"idleTimeout": 60}}"#)
        let baseline = statusKB(daemon.pid, "VmHWM")
        let greedy = try RawClient(daemon.defaultSocket)
        try greedy.descriptor.setNonBlocking(true)
        // Calls with long replies (answered at once), sent as fast as the socket takes them,
        // never a reply read: the daemon stops reading once a bounded amount of output waits,
        // and the client's sends block. Before, it read and answered without end.
        let describe = Array(String(repeating: call("org.varlink.service.GetInterfaceDescription", #"{"interface":"io.weavedi.Daemon"}"#), count: 100).utf8)
        var blocked = false
        let deadline = ContinuousClock.now + .seconds(4)
        var offset = 0
        while !blocked, ContinuousClock.now < deadline {
            let sent = describe[offset...].withUnsafeBytes { try? greedy.descriptor.send($0) }
            if let sent {
                offset = (offset + sent) % describe.count
                continue
            }
            var entries = [PollDescriptor(greedy.descriptor, events: .writable)]
            _ = try? PollDescriptor.poll(&entries, timeout: .seconds(1))
            blocked = !entries[0].returnedEvents.contains(.writable)
        }
        #expect(blocked, "the daemon kept reading a client that reads nothing")
        let peak = statusKB(daemon.pid, "VmHWM")
        #expect(peak - baseline < 64 * 1024, "peak resident memory \(baseline) kB -> \(peak) kB")
        let other = try VarlinkClient(path: daemon.defaultSocket)
        #expect(try other.call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        _ = greedy
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aClientThatReadsNothingWhileAJobRuns_getsNoQueueOfProgress_butTheFinalReply() throws {
        let directory = TemporaryDirectory()
        let source = directory.path + "/source", destination = directory.path + "/mirror"
        try TreeFixture.make(at: source, count: 3000)
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"control": {"maxMessageBytes": 16777216, "idleTimeout": 60},
             "sync": {"jobs": [{"name": "many", "source": "\(source)", "destination": "\(destination)", "interval": 3600,
                                "durable": false, "workers": 1}]}}
            """)
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        // Replies that fill the kernel's buffer for the socket and leave more than a megabyte
        // waiting in the daemon (within the 16 MiB of output that stops it reading), then a
        // run with progress, its replies not read until the run is over. Before, every
        // progress reply was queued behind the others while a megabyte or more waited.
        let socketBuffer = Int((try? String(contentsOfFile: "/proc/sys/net/core/wmem_default", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 212_992
        let describe = call("org.varlink.service.GetInterfaceDescription", #"{"interface":"io.weavedi.Daemon"}"#)
        let describes = (2 * socketBuffer + (1 << 20)) / DaemonInterface.description.utf8.count + 1
        let client = try RawClient(daemon.defaultSocket)
        try client.send(String(repeating: describe, count: describes) + call("io.weavedi.Daemon.RunJob", #"{"name":"many"}"#, extra: #","more":true"#))
        let observer = try VarlinkClient(path: daemon.defaultSocket)
        var ended = false
        let deadline = ContinuousClock.now + .seconds(120)
        while !ended, ContinuousClock.now < deadline {
            usleep(50_000)
            let job = try observer.call("io.weavedi.Daemon.ListJobs").parameter("jobs")?.arrayValue?.first
            ended = job?[member: "running"] == .bool(false) && job?[member: "lastRun"]?.isNull == false
        }
        try #require(ended, "the run did not end\n\(daemon.log)")
        var described = 0
        for _ in 0..<describes where client.reply()?.contains(#""description":"#) == true { described += 1 }
        #expect(described == describes)
        var progress = 0
        var final: String?
        while final == nil, let reply = client.reply() {
            if reply.contains(#""continues":true"#) { progress += 1 } else { final = reply }
        }
        #expect(progress <= 1, "\(progress) progress replies were kept for a client that read none")
        #expect(final?.contains(#""result":"success""#) == true, "\(final ?? "no final reply")")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func manyPipelinedCalls_runAFewAtATime_andAreAnsweredInOrder() throws {
        let daemon = try started(config: #"{"control": {"idleTimeout": 60}}"#)
        let baseline = statusKB(daemon.pid, "VmHWM")
        let client = try RawClient(daemon.defaultSocket)
        // 50,000 calls run as tasks (ListJobs), with one answered at once (GetLogLevel) every
        // 5,000, all written before the daemon answers many; replies are read meanwhile.
        let count = 50_000
        var batch = ""
        for i in 0..<count { batch += i % 5_000 == 0 ? call("io.weavedi.Daemon.GetLogLevel") : call("io.weavedi.Daemon.ListJobs") }
        let bytes = Array(batch.utf8)
        let descriptor = client.descriptor
        let writer = try PosixThread { try? descriptor.sendAll(bytes) }
        var inOrder = 0
        for i in 0..<count {
            guard let reply = client.reply(timeout: .seconds(30)) else { break }
            let expected = i % 5_000 == 0 ? #""filter":"info""# : #"{"parameters":{"jobs":"#
            if reply.contains(expected) { inOrder += 1 }
        }
        writer.join()
        #expect(inOrder == count)
        let peak = statusKB(daemon.pid, "VmHWM")
        #expect(peak - baseline < 64 * 1024, "peak resident memory \(baseline) kB -> \(peak) kB")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    /// The daemon's control I/O thread: the one that works while thousands of `Ping` calls
    /// (answered on it) go through.
    func busiestThread(_ daemon: DaemonProcess) throws -> Int {
        let before = threadTicks(daemon.pid)
        let client = try RawClient(daemon.defaultSocket)
        for _ in 0..<10 {
            try client.send(String(repeating: call("io.weavedi.Daemon.Ping"), count: 2000))
            for _ in 0..<2000 { _ = client.reply() }
        }
        let after = threadTicks(daemon.pid)
        return after.max { ($0.value - (before[$0.key] ?? 0)) < ($1.value - (before[$1.key] ?? 0)) }?.key ?? -1
    }
}

let ticksPerSecond = Int(sysconf(Int32(_SC_CLK_TCK)))

/// User and system CPU time of the fields of a `/proc/…/stat` file, in clock ticks.
private func statTicks(_ path: String) -> Int {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8), let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the name: state is field 3, utime 14 and stime 15 (1-based over the whole line).
    guard fields.count > 12 else { return 0 }
    return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
}

/// The CPU time the process `pid` has used, in clock ticks.
func processTicks(_ pid: Int32) -> Int {
    statTicks("/proc/\(pid)/stat")
}

/// The CPU time each thread of `pid` has used, in clock ticks.
func threadTicks(_ pid: Int32) -> [Int: Int] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    var ticks: [Int: Int] = [:]
    for task in tasks { if let id = Int(task) { ticks[id] = statTicks("/proc/\(pid)/task/\(task)/stat") } }
    return ticks
}

/// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`).
func statusKB(_ pid: Int32, _ field: String) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
}
