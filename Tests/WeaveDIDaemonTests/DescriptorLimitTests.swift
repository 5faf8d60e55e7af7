import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIControl
@testable import WeaveDIDaemon
import WeaveDIPosix

/// The real daemon under a low limit on open descriptors (set with `ulimit` in the shell that
/// starts it): it raises its soft limit to the hard limit, and running out of descriptors is a
/// clear error, never a spin.
@Suite struct DescriptorLimitTests {
    /// A source tree `depth` directories deep, with a file at the bottom and one at the top.
    struct DeepTree {
        let directory = TemporaryDirectory()
        var source: String { directory.path + "/source" }
        var destination: String { directory.path + "/mirror" }

        init(depth: Int) throws {
            let bottom = source + (1...depth).map { "/d\($0)" }.joined()
            try FileManager.default.createDirectory(atPath: bottom, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
            directory.write("source/top.txt", "top")
            _ = FileManager.default.createFile(atPath: bottom + "/bottom.txt", contents: Data("bottom".utf8))
        }

        /// Starts the daemon with `limits` (shell code, `ulimit -Sn 64; ...`) run before exec.
        func start(limits: String) throws -> DaemonProcess {
            let config = directory.write("weavedid.json", """
                {"sync": {"jobs": [{"name": "deep", "source": "\(source)", "destination": "\(destination)",
                  "interval": 3600, "workers": 2}]}}
                """)
            let daemon = try DaemonProcess(["--config", config], directory: directory, prefix: limits + ";")
            try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
            return daemon
        }
    }

    /// Runs the job by hand; returns its run record.
    func runJob(_ daemon: DaemonProcess) throws -> JSONValue? {
        let client = try VarlinkClient(path: daemon.defaultSocket)
        return try client.call("io.weavedi.Daemon.RunJob", [("name", .string("deep"))]).parameter("run")
    }

    /// The `Max open files` limits of process `pid`, as `/proc/PID/limits` writes them.
    func openFileLimits(_ pid: Int32) -> (soft: String, hard: String)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Max open files") })
        else { return nil }
        let fields = line.dropFirst("Max open files".count).split(separator: " ")
        return (String(fields[0]), String(fields[1]))
    }

    @Test func aLowSoftLimit_isRaisedToTheHardLimit_andATreeDeeperThanItAllows_isMirrored() throws {
        // 150 levels need over 150 descriptors at the bottom of the walk: far more than 64.
        let hard = min(try ResourceLimit.openFiles().hard, 4096)
        guard hard >= 512 else {
            try Test.cancel("the hard limit on descriptors here is \(hard); the test needs 512")
        }
        let tree = try DeepTree(depth: 150)
        let daemon = try tree.start(limits: "ulimit -Sn 64; ulimit -Hn \(hard)")
        #expect(openFileLimits(daemon.pid)?.soft == "\(hard)")
        #expect(daemon.log.contains("descriptor limit (RLIMIT_NOFILE): raised the soft limit from 64 to the hard limit, \(hard)"))
        let run = try runJob(daemon)
        #expect(run?[member: "result"]?.stringValue == "success", "\(run?[member: "message"]?.stringValue ?? "no run")")
        #expect(try TreeFixture.snapshot(tree.destination) == TreeFixture.snapshot(tree.source))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aTreeDeeperThanTheHardLimitAllows_isReportedWhereItRanOut_namingTheLimit_andTheRestIsMirrored() throws {
        let tree = try DeepTree(depth: 150)
        let daemon = try tree.start(limits: "ulimit -n 64")
        let run = try runJob(daemon)
        #expect(run?[member: "result"]?.stringValue == "partial")
        let message = run?[member: "message"]?.stringValue ?? ""
        #expect(message.contains("Too many open files (EMFILE): the descriptor limit is 64 (RLIMIT_NOFILE; hard limit 64)"), "\(message)")
        // Only the directory that could not be opened is missing: the rest is mirrored.
        #expect(tree.directory.read("mirror/top.txt") == "top")
        #expect(fileExists(tree.destination + "/d1/d2/d3"))
        #expect(daemon.log.contains("run deep-1 partial"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func aChainOfDirectories_costsOneDescriptorPerLevel_notTwo() throws {
        // 200 levels under a limit of 256: the walk may keep only the destination directories
        // along its path open (a source directory is closed once its subdirectory is open).
        let depth = 200
        let tree = try DeepTree(depth: depth)
        let daemon = try tree.start(limits: "ulimit -n 256")
        let run = try runJob(daemon)
        #expect(run?[member: "result"]?.stringValue == "success", "\(run?[member: "message"]?.stringValue ?? "no run")")
        #expect(try TreeFixture.snapshot(tree.destination) == TreeFixture.snapshot(tree.source))
        // Each directory got its source's mode and mtime, from the status taken when it was opened.
        var relative = ""
        for level in 0...depth {
            if level > 0 { relative += "/d\(level)" }
            let source = try FileStatus(path: tree.source + relative, followSymlinks: false)
            let mirrored = try FileStatus(path: tree.destination + relative, followSymlinks: false)
            #expect(mirrored.modificationTime == source.modificationTime && mirrored.permissions == source.permissions, "level \(level)")
        }
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func runningOutOfDescriptors_isExplainedWithTheLimit_otherErrorsAsThemselves() throws {
        let limit = try ResourceLimit.openFiles()
        #expect(MirrorFailure.system("open", .tooManyOpenFiles).description
            == "open: Too many open files (EMFILE): the descriptor limit is \(limit.soft) (RLIMIT_NOFILE; hard limit \(limit.hard)), "
            + "and every descriptor is in use")
        #expect(MirrorFailure.system("open", .tooManyOpenFilesInSystem).description
            == "open: Too many open files in system (ENFILE): the system-wide limit on open files (fs.file-max) is reached")
        #expect(MirrorFailure.system("open", .permissionDenied).description == "open: Permission denied (EACCES)")
    }

    @Test func outOfDescriptors_theControlSocketPausesInsteadOfSpinning_theWatchdogIsFed_andClientsAreAnsweredOnceSomeAreFree() throws {
        let limit = 48
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        // The last clients stay in the listen queue once only the descriptors kept free for
        // the runtime are left, and the listener stays readable.
        var (daemon, clients) = try flooded(limit: limit, directory: directory, notify: notify, environment: ["WATCHDOG_USEC": "400000"])
        let reserve = DescriptorReserve.recommendedSize(forSoftLimit: UInt64(limit))
        var full = false
        let deadline = ContinuousClock.now + .seconds(30)
        while !full, ContinuousClock.now < deadline {
            full = openDescriptors(daemon.pid, below: limit) >= limit - reserve
            if !full { usleep(10_000) }
        }
        try #require(full, "the daemon has \(openDescriptors(daemon.pid, below: limit)) descriptors open, not \(limit - reserve)")
        let before = processTicks(daemon.pid)
        let pingsBefore = notify.lines.filter { $0 == "WATCHDOG=1" }.count
        notify.wait(timeout: .seconds(2)) { _ in false }  // collect for 2 s
        let spent = processTicks(daemon.pid) - before
        // The watchdog still hears from it (every 200 ms): its notify socket was made at the start.
        let pings = notify.lines.filter { $0 == "WATCHDOG=1" }.count - pingsBefore
        #expect(pings >= 3, "\(pings) watchdog pings in 2 s while out of descriptors")
        // Polling the listener while accept fails took both seconds (about 170 ticks here).
        #expect(spent < ticksPerSecond / 4, "the daemon spent \(spent) ticks in 2 s while out of descriptors")
        let warnings = daemon.log.split(separator: "\n").filter { $0.contains("cannot accept a connection") }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains("Too many open files (EMFILE): the descriptor limit is \(limit) (RLIMIT_NOFILE; hard limit \(limit)), "
            + "and every descriptor is in use but the last \(reserve), kept free for the Swift runtime") == true, "\(warnings)")
        // The runtime's descriptors were left alone: no connection was taken into the reserve.
        let taken = socketsKept(daemon.pid, from: limit - reserve, below: limit)
        #expect(taken.isEmpty, "connections in the reserve: \(taken)")
        // No client waiting was accepted into the reserve, to be closed unanswered.
        let dropped = clients.filter { $0.closedByPeer(timeout: .milliseconds(1)) }.count
        #expect(dropped == 0, "\(dropped) clients were closed unanswered")
        // Descriptors free again: the clients waiting are accepted (and closed, as they are
        // gone), and a new one is answered.
        clients.removeAll()
        let client: RawClient
        do { client = try RawClient(daemon.defaultSocket) } catch {
            Issue.record("the client after the others left: \(error)\n\(daemon.log)")
            return
        }
        try client.send(call("io.weavedi.Daemon.Ping"))
        #expect(client.reply()?.contains(#""version":"#) == true)
        #expect(daemon.waitForLog("control: accepting connections again"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }

    @Test func outOfDescriptors_workQueuedOnTheRuntimesThreads_doesNotEndTheDaemon() throws {
        // The dispatch library looks at its worker threads through /proc about once a second
        // while work is queued, and ends the process when it cannot open a file there: the
        // daemon's clients may not take the descriptors it needs.
        let limit = 48
        var (daemon, clients) = try flooded(limit: limit)
        try #require(daemon.waitForLog("cannot accept a connection"), "\(daemon.log)")
        // The clients the daemon took call it over and over for 4 s: each call is work for the
        // runtime's threads.
        for client in clients { try client.send(call("io.weavedi.Daemon.Ping")) }
        var connected = clients.filter { $0.reply(timeout: .milliseconds(500)) != nil }
        // How many the daemon took depends on how many descriptors the runtime holds at that
        // moment (more threads on a busy machine): 8 or more, 4 is enough to keep it busy.
        try #require(connected.count >= 4 && connected.count < clients.count, "\(connected.count) of \(clients.count) clients answered")
        let deadline = ContinuousClock.now + .seconds(4)
        let ceiling = limit - DescriptorReserve.recommendedSize(forSoftLimit: UInt64(limit))
        var rounds = 0
        while ContinuousClock.now < deadline {
            for client in connected { try? client.send(call("io.weavedi.Daemon.RunChecks")) }
            let answered = connected.filter { $0.reply() != nil }.count
            try #require(answered == connected.count, "round \(rounds + 1): \(answered) of \(connected.count) calls answered\n\(daemon.log)")
            rounds += 1
            // The reserve holds what the runtime makes of its own (timers' descriptors, the
            // monitor's look into /proc; how many depends on the machine's load), never a
            // connection.
            let taken = socketsKept(daemon.pid, from: ceiling, below: limit)
            if !taken.isEmpty {
                Issue.record("round \(rounds): connections in the reserve: \(taken)")
                break
            }
        }
        connected.removeAll()
        clients.removeAll()
        let client = try RawClient(daemon.defaultSocket)
        try client.send(call("io.weavedi.Daemon.Ping"))
        #expect(client.reply()?.contains(#""version":"#) == true, "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// The daemon under `ulimit -n limit`, allowing many more clients than that, and `limit +
    /// 16` clients connected to it: more than it has descriptors for.
    func flooded(
        limit: Int, directory: TemporaryDirectory = TemporaryDirectory(), notify: NotifyListener? = nil, environment: [String: String] = [:]
    ) throws -> (DaemonProcess, [RawClient]) {
        let config = directory.write("weavedid.json", #"{"control": {"maxClients": 4096, "idleTimeout": 60}}"#)
        let daemon = try DaemonProcess(
            ["--config", config], environment: environment, directory: directory, notify: notify, prefix: "ulimit -n \(limit);")
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        var clients: [RawClient] = []
        for index in 0..<limit + 16 {
            do { clients.append(try RawClient(daemon.defaultSocket)) } catch {
                Issue.record("client \(index + 1): \(error)\n\(daemon.log)")
                throw error
            }
        }
        return (daemon, clients)
    }

    /// How many descriptors process `pid` has open (numbered below `limit`).
    /// The sockets process `pid` has open numbered `from` up to `limit`, as `number=target`.
    func sockets(_ pid: Int32, from lowest: Int, below limit: Int) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return ["/proc/\(pid)/fd unreadable"] }
        return names.compactMap { name -> String? in
            guard let number = Int(name), number >= lowest, number < limit,
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(name)"),
                target.hasPrefix("socket:")
            else { return nil }
            return "\(number)=\(target)"
        }
    }

    /// The sockets of `sockets(_:from:below:)` that stay there: in each of five samples, 100 ms
    /// apart. A call that makes a descriptor can be given one in the reserve by the kernel
    /// (the lowest number free), which it closes at once (`DescriptorReserve.admit`) or moves
    /// below the reserve (`acceptOutsideReserve`): a single sample may catch it in between, the
    /// more so on a busy machine. A connection kept in the reserve stays as long as its client.
    func socketsKept(_ pid: Int32, from lowest: Int, below limit: Int) -> [String] {
        var kept = Set(sockets(pid, from: lowest, below: limit))
        for _ in 0..<4 where !kept.isEmpty {
            usleep(100_000)
            kept.formIntersection(sockets(pid, from: lowest, below: limit))
        }
        return kept.sorted()
    }

    func openDescriptors(_ pid: Int32, below limit: Int = .max) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return -1 }
        return names.filter { (Int($0) ?? .max) < limit }.count
    }
}
