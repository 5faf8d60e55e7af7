import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// The real daemon process: readiness, signals, watchdog, socket handling.
@Suite struct DaemonLifecycleTests {
    @Test(arguments: [false, true])
    func readiness_isNotified_onceTheSocketIsBound(abstract: Bool) throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: abstract, directory: directory)
        let daemon = try DaemonProcess(directory: directory, notify: notify)
        #expect(notify.wait(forLine: "READY=1"))
        #expect(notify.lines.contains("STATUS=starting"))
        #expect(notify.lines.contains(#"STATUS=running; control socket "\#(daemon.defaultSocket)""#))
        let socket = try FileStatus(path: daemon.defaultSocket, followSymlinks: false)
        #expect(socket.kind == .socket)
        #expect(socket.permissions.rawValue & 0o777 == 0o660)
        #expect(try FileStatus(path: directory.path + "/run", followSymlinks: false).permissions.rawValue & 0o777 == 0o750)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        #expect(notify.wait(forLine: "STOPPING=1"))
        #expect(!fileExists(daemon.defaultSocket))
        #expect(daemon.log.contains(#"ready; control socket "\#(daemon.defaultSocket)""#))
    }

    /// The unit gives a stop 15 s (`TimeoutStopSec=`); a longer `shutdownTimeout` (here 60 s,
    /// then 120 s after a reload) is asked for with `STOPPING=1` (`EXTEND_TIMEOUT_USEC=`, with 5 s
    /// to exit), so that systemd does not kill a shutdown the configuration allows.
    @Test func stopping_asksSystemdForTheShutdownTimeout() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let config = directory.write("weavedid.json", #"{"shutdownTimeout": 60}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
        #expect(notify.wait(forLine: "READY=1"))
        directory.write("weavedid.json", #"{"shutdownTimeout": 120}"#)
        daemon.send(.hangup)
        #expect(notify.wait(forLine: "STATUS=running; configuration reloaded"))
        // The log names who asked, as it does for the stop.
        #expect(daemon.log.contains("reloading the configuration (asked by SIGHUP from pid \(getpid()))"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        #expect(notify.wait { $0.hasPrefix("STOPPING=1\n") })
        let stopping = notify.received.first { $0.hasPrefix("STOPPING=1\n") }?.split(separator: "\n") ?? []
        #expect(stopping.contains("EXTEND_TIMEOUT_USEC=125000000"), "\(stopping)")
    }

    /// A reload that moves the control socket is refused, both paths quoted as every path from
    /// outside is: one may hold a `;`, a quote or a newline. The same path spelled with a
    /// doubled slash or a `.` is no move.
    @Test func aReloadThatMovesTheControlSocket_isRefused_namingBothPathsQuoted() throws {
        let directory = TemporaryDirectory()
        let socket = directory.path + "/run/control.sock"
        let config = directory.write("weavedid.json", #"{"control": {"socket": "\#(socket)"}}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        // The same path spelled otherwise is no move.
        directory.write("weavedid.json", #"{"control": {"socket": "\#(directory.path)//run/./control.sock"}}"#)
        #expect(try reloadFailure(socket) == nil, "\(daemon.log)")
        directory.write("weavedid.json", #"{"control": {"socket": "\#(directory.path)/run/a\"; b\n.sock"}}"#)
        let refusal = try reloadFailure(socket)
        #expect(refusal?.reply.parameter("reason")?.stringValue
            == #"control.socket changed from "\#(socket)" to "\#(directory.path)/run/a\"; b\n.sock"; restart the daemon to move it"#,
            "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A reload that moves the control socket by changing `runtimeDirectory` is refused naming
    /// where the socket's path came from, the field the operator changed, not only
    /// `control.socket`, which the file does not set; a move between origins names both. Before,
    /// it said `control.socket changed …` alone.
    @Test func aReloadThatMovesTheControlSocketByItsDirectory_isRefused_namingWhereThePathCameFrom() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        let config = directory.write("weavedid.json", #"{"runtimeDirectory": "\#(d)/run"}"#)
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let socket = d + "/run/control.sock"
        directory.write("weavedid.json", #"{"runtimeDirectory": "\#(d)/run9"}"#)
        #expect(try reloadFailure(socket)?.reply.parameter("reason")?.stringValue
            == #"control.socket (from runtimeDirectory) changed from "\#(socket)" to "\#(d)/run9/control.sock"; "#
            + "restart the daemon to move it", "\(daemon.log)")
        directory.write("weavedid.json", #"{"control": {"socket": "\#(d)/run9/control.sock"}}"#)
        #expect(try reloadFailure(socket)?.reply.parameter("reason")?.stringValue
            == #"control.socket changed from "\#(socket)" (from runtimeDirectory) to "\#(d)/run9/control.sock" (from "#
            + "control.socket); restart the daemon to move it", "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A SIGHUP sent by hand while the daemon starts (before `READY=1`) is not lost: once
    /// started, the daemon reads the file again, so the file as it was when the signal was sent
    /// is the one in effect. The signal is sent once the daemon has blocked its signals, before
    /// its main loop first reads them: the loop starts the start first and takes the signal
    /// right after, while the start runs. Should the start have been over by then (a start
    /// that raced ahead of the loop: the log has no `SIGHUP while starting`), the test tries
    /// again, a few times.
    @Test func sighupWhileStarting_isActedOnOnceStarted() throws {
        var caughtStarting = false
        for _ in 0..<5 where !caughtStarting {
            let directory = TemporaryDirectory()
            let notify = try NotifyListener(abstract: false, directory: directory)
            let config = directory.write("weavedid.json", #"{"shutdownTimeout": 120}"#)
            let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
            try #require(daemon.waitUntilSignalsBlocked())
            daemon.send(.hangup)
            #expect(notify.wait(forLine: "READY=1"))
            #expect(daemon.waitUntilSignalTaken(.hangup), "\(daemon.log)")
            #expect(notify.wait(forLine: "STATUS=running; configuration reloaded"), "\(notify.lines) \(daemon.log)")
            #expect(!daemon.log.contains("reload ignored"), "\(daemon.log)")
            caughtStarting = daemon.log.contains("SIGHUP while starting; the configuration is read again once started")
            if caughtStarting {
                #expect(daemon.log.contains("reloading the configuration (asked by SIGHUP from pid \(getpid()))"), "\(daemon.log)")
            }
            daemon.send(.terminate)
            #expect(daemon.wait() == .exited(0), "\(daemon.log)")
            #expect(notify.wait { $0.hasPrefix("STOPPING=1\n") })
            let stopping = notify.received.first { $0.hasPrefix("STOPPING=1\n") }?.split(separator: "\n") ?? []
            #expect(stopping.contains("EXTEND_TIMEOUT_USEC=125000000"), "\(stopping)")
        }
        #expect(caughtStarting, "in 5 starts, no SIGHUP was taken while starting")
    }

    /// A SIGHUP during a start that a SIGTERM then ends reloads nothing: the daemon stops. Both
    /// are sent before the main loop first reads signals (see above; tried again should the
    /// start have been over when they were taken).
    @Test func sighupThenSigtermWhileStarting_stopsWithoutReloading() throws {
        var caughtStarting = false
        for _ in 0..<5 where !caughtStarting {
            let directory = TemporaryDirectory()
            let notify = try NotifyListener(abstract: false, directory: directory)
            let daemon = try DaemonProcess(directory: directory, notify: notify)
            try #require(daemon.waitUntilSignalsBlocked())
            daemon.send(.hangup)
            daemon.send(.terminate)
            #expect(daemon.wait() == .exited(0), "\(daemon.log)")
            guard daemon.log.contains("SIGHUP while starting") else { continue }
            caughtStarting = true
            notify.wait(timeout: .milliseconds(200)) { _ in false }
            #expect(!notify.lines.contains("RELOADING=1"), "\(notify.lines)")
            #expect(!daemon.log.contains("reloading the configuration"), "\(daemon.log)")
        }
        #expect(caughtStarting, "in 5 starts, no SIGHUP was taken while starting")
    }

    /// A notify socket that nobody reads (its queue full, as when systemd is stuck) holds
    /// nothing: the start, the watchdog's pings (every 10 ms here) and the stop go on, each
    /// notification dropped at once, and the log says so (at most 6 lines a minute). `READY=1`,
    /// dropped, is sent again: once the socket is read, systemd learns that the daemon is ready.
    /// The socket's path (here with a quote and a newline) is quoted as the variable's value.
    @Test func aNotifySocketNobodyReads_holdsNothing() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory, name: "no\"ti\nfy.sock")
        try notify.fill()
        let daemon = try DaemonProcess(environment: ["WATCHDOG_USEC": "20000"], directory: directory, notify: notify)
        try #require(daemon.waitForLog("ready; control socket"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        for _ in 0..<20 {  // 2 s of pings that cannot go out
            #expect(try client.call("io.weavedi.Daemon.Ping").parameter("version") != nil)
            usleep(100_000)
        }
        #expect(daemon.log.contains(#"cannot notify systemd (READY=1) on NOTIFY_SOCKET="\#(directory.path)/no\"ti\nfy.sock": its queue"#
            + " is full (systemd does not read it); sent again with the next notification"), "\(daemon.log)")
        #expect(daemon.log.contains("cannot notify systemd (WATCHDOG=1)") || daemon.log.contains("more like it were not logged"), "\(daemon.log)")
        let dropped = daemon.log.split(separator: "\n").filter { $0.contains("cannot notify systemd") }
        #expect(dropped.count <= 6, "\(dropped)")  // 3 a minute for state notifications, 3 for the others
        #expect(notify.wait(forLine: "READY=1"), "\(notify.lines)")  // reading: the kept READY=1 comes
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func withoutNotifySocket_itRunsAndStops() throws {
        let daemon = try DaemonProcess()
        #expect(daemon.waitForLog("ready;"))
        daemon.send(.interrupt)
        #expect(daemon.wait() == .exited(0))
        #expect(daemon.log.contains("stopping: SIGINT"))
    }

    /// A library flag the daemon does not understand is said in the daemon's log, as one of
    /// its lines (timestamp, level, subsystem `weavedi…`), not in the library's own format.
    @Test func aLibraryFlagNotUnderstood_isALineOfTheDaemonsLog() throws {
        let daemon = try DaemonProcess(environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "maybe"])
        #expect(daemon.waitForLog("ready;"))
        let line = daemon.log.split(separator: "\n").first { $0.contains("WEAVEDI_REGISTRY_AUTO_FIX") }
        #expect(line?.contains(" weavedi") == true && line?.first?.isNumber == true, "\(daemon.log)")
        #expect(!daemon.log.contains("[WeaveDI]"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func sigtermRightAfterStart_neverKillsTheProcess() throws {
        for _ in 0..<5 {
            let daemon = try DaemonProcess()
            #expect(daemon.waitUntilSignalsBlocked())
            daemon.send(.terminate)
            let status = daemon.wait()
            #expect(status == .exited(0), "status \(String(describing: status)); log: \(daemon.log)")
        }
    }

    /// SIGUSR1 and SIGUSR2 are no signals of the daemon's, and their default action would end
    /// it: a stray one, while it starts (once it blocked its signals) or once it runs, is said
    /// in the log with the signals it does use, and changes nothing.
    @Test func sigusr1AndSigusr2_areIgnored_andSaidInTheLog() throws {
        let daemon = try DaemonProcess()
        try #require(daemon.waitUntilSignalsBlocked())
        daemon.send(.user1)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        daemon.send(.user2)
        for name in ["SIGUSR1", "SIGUSR2"] {
            #expect(daemon.waitForLog("notice  daemon: \(name) from pid \(getpid()) ignored: weavedid stops on SIGTERM or SIGINT "
                + "and reloads its configuration on SIGHUP, and uses no other signal"), "\(daemon.log)")
        }
        #expect(try VarlinkClient(path: daemon.defaultSocket).call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// systemd kills a service that sends no `WATCHDOG=1` within `WATCHDOG_USEC`: the daemon
    /// pings every half of it, so that a ping late by less than half the timeout still counts.
    /// With a timeout of 1 s most pings are about 0.5 s apart (a once-per-timeout ping would
    /// leave none to spare). The median, not every gap: on a loaded machine a ping is withheld
    /// now and then (the async side did not beat in time) and pings are read late in pairs,
    /// which makes single gaps of 1 s and of 0 without changing the median.
    @Test func watchdog_pingsEveryHalfInterval() throws {
        let timeout = Duration.seconds(1)
        let (gaps, _) = try pingGaps(watchdogUSec: "1000000", pings: 7)
        #expect(gaps.count == 6)
        #expect(median(gaps) <= timeout * 0.6, "gaps \(gaps) with WATCHDOG_USEC=1 s")
    }

    /// Runs the daemon with `WATCHDOG_USEC=usec` until ready, then until it sent `count`
    /// `WATCHDOG=1` pings, stops it (exit 0 expected); returns the times between consecutive
    /// pings, as they were read (the time from the start to the first ping is not one), and
    /// the daemon's log.
    func pingGaps(watchdogUSec usec: String, pings count: Int) throws -> (gaps: [Duration], log: String) {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(environment: ["WATCHDOG_USEC": usec], directory: directory, notify: notify)
        #expect(notify.wait(forLine: "READY=1"))
        let ready = notify.arrivals.count
        func pings() -> [ContinuousClock.Instant] { notify.arrivals[ready...].filter { $0.line == "WATCHDOG=1" }.map(\.at) }
        #expect(notify.wait { _ in pings().count >= count }, "\(pings().count) pings; log: \(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        let times = pings().prefix(count)
        return (zip(times.dropFirst(), times).map { $0 - $1 }, daemon.log)
    }

    func median(_ durations: [Duration]) -> Duration {
        durations.isEmpty ? .zero : durations.sorted()[durations.count / 2]
    }

    /// A `WATCHDOG_USEC` too short for any ping (1 µs, 100 µs: microseconds written where
    /// seconds were meant, say) does not make the daemon send `WATCHDOG=1` without pause: it
    /// pings every 10 ms (`minimumPingInterval`), as it would for a timeout of 20 ms, and
    /// warns, naming the variable. Most gaps are about 10 ms: neither pings without pause,
    /// nor once per 20 ms.
    @Test(arguments: ["1", "100"])
    func tinyWatchdogTimeout_isPingedAtTheFloor_andWarned(usec: String) throws {
        let floor = Duration.milliseconds(10)  // the daemon's minimumPingInterval
        let (gaps, log) = try pingGaps(watchdogUSec: usec, pings: 41)
        #expect(gaps.count == 40)
        // The mean over the 40 gaps (the span from the first ping to the last): pings read
        // late in batches make gaps of 0 that would pull a median down, not the span.
        let mean = gaps.reduce(.zero, +) / max(gaps.count, 1)
        #expect(mean >= floor / 2 && mean <= floor * 1.5, "mean gap \(mean); gaps \(gaps) with WATCHDOG_USEC=\(usec)")
        #expect(log.contains("warning daemon: WATCHDOG_USEC=\(usec) (\(usec) µs) is shorter than the daemon can ping within"),
                "\(log)")
    }

    /// A `WATCHDOG_USEC` of centuries (half of it past the clock's range in nanoseconds) is
    /// waited on as long as the clock counts: the daemon serves and stops as usual.
    @Test(arguments: ["18446744073709552", "18446744073000000"])
    func aWatchdogTimeoutOfCenturies_isServed(usec: String) throws {
        let daemon = try DaemonProcess(environment: ["WATCHDOG_USEC": usec])
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        #expect(try client.call("io.weavedi.Daemon.Ping").parameter("version") != nil)
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A `WATCHDOG_USEC` that is no number of microseconds turns the watchdog off, and says so.
    @Test func unreadableWatchdogTimeout_isWarned() throws {
        let daemon = try DaemonProcess(environment: ["WATCHDOG_USEC": "30s"])
        #expect(daemon.waitForLog("ready;"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        #expect(daemon.log.contains(#"warning daemon: WATCHDOG_USEC="30s" is not a number of microseconds; no watchdog pings"#),
                "\(daemon.log)")
    }

    @Test func watchdogForAnotherProcess_isIgnored() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(
            environment: ["WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"], directory: directory, notify: notify)
        #expect(notify.wait(forLine: "READY=1"))
        #expect(!notify.wait(timeout: .milliseconds(500)) { $0 == "WATCHDOG=1" })
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func sigtermUnderLoad_closesConnections_andExitsZero() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(directory: directory, notify: notify)
        #expect(notify.wait(forLine: "READY=1"))
        var clients: [FileDescriptor] = []
        for _ in 0..<30 {
            let client = try connectControl(daemon.defaultSocket)
            try client.sendAll(Array(#"{"method":"io.weavedi.Daemon.Ping"}"#.utf8) + [0])
            clients.append(client)
        }
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        #expect(notify.wait(forLine: "STOPPING=1"))
        #expect(!fileExists(daemon.defaultSocket))
        for client in clients {
            // The daemon closed every connection: reads reach end of file.
            var sawEnd = false
            for _ in 0..<100 {
                if let bytes = try? client.receive(upToCount: 4096), bytes.isEmpty { sawEnd = true; break }
            }
            #expect(sawEnd)
            try? client.close()
        }
    }

    /// A control socket directory that cannot be made refuses the start naming what put the
    /// socket there: a configuration field, systemd's `RUNTIME_DIRECTORY`, or an
    /// `XDG_RUNTIME_DIR` inherited from a login session (no setting of the daemon's at all).
    @Test(arguments: [
        ("runtimeDirectory", "from runtimeDirectory", "set control.socket (or runtimeDirectory)"),
        ("control.socket", "from control.socket", "set control.socket to a path"),
        ("RUNTIME_DIRECTORY", "from RUNTIME_DIRECTORY in the environment", "set control.socket (or runtimeDirectory)"),
        ("XDG_RUNTIME_DIR", "from XDG_RUNTIME_DIR in the environment", "set control.socket (or runtimeDirectory)"),
    ])
    func aSocketDirectoryThatCannotBeMade_refusesTheStart_namingWhatPutItThere(origin: String, named: String, remedy: String) throws {
        let directory = TemporaryDirectory()
        // A regular file where the directory's parent would be: ENOTDIR.
        let file = directory.write("file", "not a directory")
        var environment: [String: String] = [:]
        var config = "{}"
        var socketDirectory = file + "/run"
        switch origin {
        case "runtimeDirectory": config = #"{"runtimeDirectory": "\#(file)/run"}"#
        case "control.socket": config = #"{"control": {"socket": "\#(file)/run/control.sock"}}"#
        case "RUNTIME_DIRECTORY": environment["RUNTIME_DIRECTORY"] = file + "/run"
        default:
            environment["RUNTIME_DIRECTORY"] = ""
            environment["XDG_RUNTIME_DIR"] = file
            socketDirectory = file + "/weavedi"
        }
        let path = directory.write("weavedid.json", config)
        let daemon = try DaemonProcess(["--config", path], environment: environment, directory: directory)
        #expect(daemon.wait() == .exited(1), "\(daemon.log)")
        #expect(
            daemon.log.contains(#"cannot create "\#(socketDirectory)", the control socket's directory (\#(named)): "#),
            "\(daemon.log)")
        #expect(daemon.log.contains("Not a directory (ENOTDIR); create it, or \(remedy)"), "\(daemon.log)")
    }

    @Test func staleSocket_isReplaced_butALiveOneRefusesTheStart() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/run", withIntermediateDirectories: true)
        let stalePath = directory.path + "/run/control.sock"
        // A socket file nobody listens on: bind, then close without unlinking.
        try UnixSocket.listen(at: UnixSocketAddress(path: stalePath)).close()
        let first = try DaemonProcess(directory: directory)
        #expect(first.waitForLog("ready;"))
        // Quoted, as every path from outside is.
        #expect(first.log.contains("removed the stale socket \"\(stalePath)\" (nobody was listening)"), "\(first.log)")
        // A state directory of its own: one the first daemon holds would refuse it before.
        let second = try DaemonProcess(environment: ["STATE_DIRECTORY": directory.path + "/state2"], directory: directory)
        #expect(second.wait() == .exited(1))
        #expect(second.log.contains("another daemon is listening on \"\(stalePath)\""))
        // Said once, naming the service: "control: …".
        #expect(second.log.components(separatedBy: "another daemon is listening on").count == 2, "\(second.log)")
        #expect(second.log.contains("daemon: control: another daemon is listening on"), "\(second.log)")
        // Refused before it made its state directory (and a lock file there).
        #expect((try? FileStatus(path: directory.path + "/state2", followSymlinks: false)) == nil, "\(second.log)")
        first.send(.terminate)
        #expect(first.wait() == .exited(0))
        #expect(first.log.contains("control: removed \"\(stalePath)\""), "\(first.log)")
    }

    /// A socket whose listener does not accept (an old daemon stopped with SIGSTOP, or
    /// wedged) with its listen queue full refuses the start as a live one, at once: the
    /// start's connect does not wait for a place in that queue. Before, it waited for as long
    /// as the listener did not accept.
    @Test func aListenedSocketWithAFullQueue_refusesTheStart_withoutWaitingForAPlace() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/run", withIntermediateDirectories: true)
        let path = directory.path + "/run/control.sock"
        let address = try UnixSocketAddress(path: path)
        // Listening, never accepting; filled until a connect that does not wait is refused.
        let listener = try UnixSocket.listen(at: address, backlog: 0)
        var queued: [FileDescriptor] = []
        while true {
            let client = try UnixSocket.make(.stream, nonBlocking: true).release()
            queued.append(client)
            let refused: Errno?
            do { try client.connect(to: address); refused = nil } catch { refused = error }
            if let refused {
                try #require(refused == .wouldBlock, "connect: \(refused)")
                break
            }
        }
        let daemon = try DaemonProcess(directory: directory)
        #expect(daemon.wait() == .exited(1), "\(daemon.log)")
        #expect(daemon.log.contains("daemon: control: another daemon is listening on \"\(path)\""), "\(daemon.log)")
        #expect((try? FileStatus(path: directory.path + "/state", followSymlinks: false)) == nil, "\(daemon.log)")
        for client in queued { _ = Glibc.close(client.rawValue) }
        try listener.close()
    }

    @Test func journaldPrefixes_whenJournalStreamMatchesStandardError() throws {
        let directory = TemporaryDirectory()
        let logPath = directory.path + "/stderr.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let status = try FileStatus(path: logPath, followSymlinks: true)
        let daemon = try DaemonProcess(
            environment: ["JOURNAL_STREAM": "\(status.device):\(status.inode)"], directory: directory, logFile: logPath)
        #expect(daemon.waitForLog("ready;"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        let lines = daemon.log.split(separator: "\n")
        #expect(!lines.isEmpty)
        #expect(lines.allSatisfy { $0.hasPrefix("<") && $0.dropFirst(2).hasPrefix(">") })
        #expect(lines.contains { $0.hasPrefix("<5>daemon: weavedid") && $0.contains("ready;") })
        let stamped = lines.filter { $0.range(of: Self.timestamp, options: .regularExpression) != nil }
        #expect(stamped.isEmpty, "\(stamped)")
    }

    /// A log line's timestamp, when it has one (not under journald, which stamps it itself).
    static let timestamp = #"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"#

    @Test func withoutJournal_linesCarryATimestamp() throws {
        let daemon = try DaemonProcess(environment: ["JOURNAL_STREAM": "1:2"])
        #expect(daemon.waitForLog("ready;"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        let first = daemon.log.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.range(of: "^" + Self.timestamp + " info    daemon: ", options: .regularExpression) != nil, "\(first)")
    }

    @Test func logFilter_fromTheEnvironment() throws {
        let quiet = try DaemonProcess(environment: ["WEAVEDID_LOG": "warning,daemon=notice"])
        #expect(quiet.waitForLog("ready;"))
        quiet.send(.terminate)
        #expect(quiet.wait() == .exited(0))
        #expect(!quiet.log.contains(" info "))
        #expect(quiet.log.contains("notice  daemon: weavedid"))
        let bad = try DaemonProcess(environment: ["WEAVEDID_LOG": "info,sync=loud"])
        #expect(bad.waitForLog("ready;"))
        bad.send(.terminate)
        #expect(bad.wait() == .exited(0))
        #expect(bad.log.components(separatedBy: "WEAVEDID_LOG").count == 2)
        #expect(bad.log.contains(#"warning daemon: WEAVEDID_LOG="info,sync=loud" is not valid ("sync=loud": unknown level "loud"); using info everywhere"#),
            "\(bad.log)")
    }

    /// An empty `WEAVEDID_LOG` or `WEAVEDI_*` counts as unset, as an empty directory variable
    /// does (`Environment=WEAVEDID_LOG=` in a drop-in unsets it): no warning, the defaults used.
    @Test func emptyEnvironmentValues_countAsUnset_withoutAWarning() throws {
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", #"{"runtimeDirectory": "\#(directory.path)/run", "stateDirectory": "\#(directory.path)/state"}"#)
        // Exported by the shell: the helper leaves out a variable given as "".
        let names = [
            "WEAVEDID_LOG", "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "WEAVEDI_REGISTRY_HEALTH_LOGGING", "WEAVEDI_REGISTRY_AUTO_HEALTH",
            "WEAVEDI_REGISTRY_AUTO_FIX", "WEAVEDI_INJECTED_ENV", "WEAVEDI_LOG_LEVEL",
        ]
        let daemon = try DaemonProcess(["--config", config], directory: directory, prefix: "export " + names.map { $0 + "=" }.joined(separator: " ") + ";")
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        #expect(!daemon.log.contains("warning "), "\(daemon.log)")
        #expect(!daemon.log.contains("not valid"), "\(daemon.log)")
        // `info` everywhere, as unset.
        #expect(daemon.log.contains("info    daemon: weavedid"), "\(daemon.log)")
    }

    /// A `WEAVEDI_*` value the library ignores, using its default, is a warning, as a bad
    /// `WEAVEDID_LOG` is, and said in the same shape: the variable, its value quoted, what is
    /// wrong, what is used instead.
    @Test func badEnvironmentValues_areWarnings_ofOneShape() throws {
        let daemon = try DaemonProcess(environment: [
            "WEAVEDID_LOG": "loud", "WEAVEDI_REGISTRY_AUTO_FIX": "maybe", "WEAVEDI_INJECTED_ENV": "prod\n", "WEAVEDI_LOG_LEVEL": "loud",
        ])
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        let expected = [
            #"warning daemon: WEAVEDID_LOG="loud" is not valid (unknown level "loud"); using info everywhere"#,
            #"warning weavedi.configuration: WEAVEDI_REGISTRY_AUTO_FIX="maybe" is not valid (accepted: 1, true, yes, on, 0, false, no or off (any case)); using the current setting (on)"#,
            #"warning weavedi.configuration: WEAVEDI_INJECTED_ENV="prod\n" is not valid (accepted: live, test, preview or automatic); using automatic detection"#,
            #"warning weavedi.configuration: WEAVEDI_LOG_LEVEL="loud" is not valid (accepted: all, registration, optimization, errors, off); using the current level (all)"#,
        ]
        for line in expected { #expect(daemon.log.contains(line), "\(line)\n\(daemon.log)") }
        #expect(!daemon.log.contains("error   weavedi.configuration"), "\(daemon.log)")
    }
}
