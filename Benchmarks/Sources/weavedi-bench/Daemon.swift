#if canImport(Glibc)
import Glibc
#endif

// weavedid: start to READY=1, idle resident memory, idle wakeups. The harness plays systemd's
// part: a datagram socket it owns is the daemon's NOTIFY_SOCKET, and the runtime and state
// directories are in a temporary directory. The baseline is this harness started as a child
// that only sends READY=1 and then sleeps (`--child-ready-idle`): a Swift program doing
// nothing, started and measured the same way in the same run.

/// Where the package that holds the daemon is: the directory above `Benchmarks/`.
func packageRoot() -> String {
    var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    parts.removeLast(4)  // Benchmarks/Sources/weavedi-bench/Daemon.swift
    return parts.joined(separator: "/")
}

/// The release `weavedid`: the one given with `--daemon`, else built now with
/// `swift build -c release --product weavedid` in the package root (a no-op when up to date).
func locateDaemon(_ options: Options) -> String? {
    if let path = options.daemonPath {
        guard System.isExecutable(path) else {
            print("  cannot execute \(path)")
            return nil
        }
        return path
    }
    let root = options.root ?? packageRoot()
    if !options.noBuild {
        print("building the release daemon: swift build -c release --product weavedid --package-path \(root)")
        let build = System.run("swift", ["build", "-c", "release", "--product", "weavedid", "--package-path", root])
        if build.status != 0 {
            print(build.output)
            print("  the build failed (status \(build.status)); daemon, control and mirror figures skipped")
            return nil
        }
    }
    let binPath = System.run("swift", ["build", "-c", "release", "--package-path", root, "--show-bin-path"])
    let directory = binPath.output.split(separator: "\n").last.map(String.init) ?? root + "/.build/release"
    let path = directory + "/weavedid"
    guard System.isExecutable(path) else {
        print("  no release weavedid at \(path): build it with `swift build -c release --product weavedid` in \(root)")
        return nil
    }
    return path
}

/// A process started with a NOTIFY_SOCKET of ours, in a directory of its own.
final class NotifiedProcess {
    let pid: pid_t
    let directory: String
    let notifyPath: String
    let notifyFD: Int32
    let spawnedAt: UInt64
    private(set) var readyAt: UInt64?

    /// Starts `path arguments…` with `environment` plus NOTIFY_SOCKET.
    init?(_ path: String, _ arguments: [String], environment: [String], directory: String, label: String) {
        self.directory = directory
        notifyPath = directory + "/notify-\(label).sock"
        notifyFD = System.bindDatagram(notifyPath)
        guard notifyFD >= 0 else { return nil }
        let env = environment + ["NOTIFY_SOCKET=\(notifyPath)"]
        spawnedAt = System.now()
        guard let pid = System.spawn(path, arguments, environment: env, output: directory + "/\(label).log") else {
            close(notifyFD)
            return nil
        }
        self.pid = pid
    }

    deinit { close(notifyFD) }

    /// Waits for a datagram with the line READY=1; the time it arrived, or nil after `timeout`.
    func waitReady(timeout: Double = 15) -> UInt64? {
        let deadline = System.now() + UInt64(timeout * 1e9)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while readyAt == nil {
            let now = System.now()
            if now >= deadline { return nil }
            _ = System.waitReadable(notifyFD, timeout: Double(deadline - now) / 1e9)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(notifyFD, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                let text = String(decoding: buffer[..<n], as: UTF8.self)
                if text.split(separator: "\n").contains("READY=1") {
                    readyAt = System.now()
                    break
                }
            }
        }
        return readyAt
    }

    func stop() { System.stop(pid) }
}

/// The environment a benchmarked daemon gets: a minimal one with its directories.
func daemonEnvironment(_ directory: String) -> [String] {
    [
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "RUNTIME_DIRECTORY=\(directory)/run",
        "STATE_DIRECTORY=\(directory)/state",
    ]
}

/// The configuration file a benchmarked daemon reads: every default, no sync jobs.
func writeDaemonConfiguration(_ directory: String) -> String {
    let path = directory + "/weavedid.json"
    System.writeFile(path, "{}\n")
    return path
}

/// The child mode that serves as the baseline: send READY=1, then sleep until told to stop.
func childReadyIdle() -> Never {
    if let path = System.environment("NOTIFY_SOCKET") {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let message = Array("READY=1".utf8)
        _ = System.withAddress(path) { address, length in
            message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, address, length) }
        }
        close(fd)
    }
    while true { pause() }
}

func selfExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    return n > 0 ? String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
}

func benchDaemon(_ settings: Settings, _ report: Report, daemon: String) {
    print("daemon: \(daemon)")
    let directory = System.makeTemporaryDirectory("weavedi-bench")
    defer { System.removeTree(directory) }
    let config = writeDaemonConfiguration(directory)
    let env = daemonEnvironment(directory)
    let me = selfExecutable()

    // Start to READY=1, alternating with the baseline.
    var starts: [Double] = [], baseline: [Double] = []
    for sample in 0...settings.slowSamples {
        guard let d = NotifiedProcess(daemon, ["--config", config], environment: env, directory: directory, label: "weavedid"),
            let ready = d.waitReady()
        else {
            print("  weavedid did not send READY=1 (log: \(System.readFile(directory + "/weavedid.log") ?? ""))")
            return
        }
        let took = Double(ready - d.spawnedAt)
        d.stop()
        guard let b = NotifiedProcess(me, ["--child-ready-idle"], environment: env, directory: directory, label: "baseline"),
            let bReady = b.waitReady()
        else {
            print("  the baseline child did not send READY=1")
            return
        }
        let bTook = Double(bReady - b.spawnedAt)
        b.stop()
        if sample > 0 {  // the first start warms the page cache
            starts.append(took)
            baseline.append(bTook)
        }
    }
    report.add(Figure(
        group: "daemon", name: "weavedid: start to READY=1", unit: .time, stats: Stats(starts),
        baselineName: "Swift no-op", baseline: Stats(baseline), target: .atMost(50_000_000),
        note: "posix_spawn to the READY=1 datagram; baseline: a Swift program that only sends READY=1"))

    // Idle: the daemon and the baseline side by side, a fresh pair for each sample.
    print("  idle: \(settings.idleSamples) samples, each a fresh pair settling \(fixed(settings.idleSettle, 0)) s, wakeups counted over \(fixed(settings.idleWindow, 0)) s")
    // Threads that started within the window count whole; threads that ended within it are
    // missed (their counts go with them), so this errs low only by what such threads did.
    func wakeups(_ before: [Int: Int], _ after: [Int: Int], _ window: Double) -> Double {
        var total = 0
        for (tid, count) in after { total += max(0, count - (before[tid] ?? 0)) }
        return Double(total) / window
    }
    func rss(_ pid: pid_t) -> Double {
        Double(System.statusField("/proc/\(pid)/status", "VmRSS") ?? 0) * 1024 / 1e6
    }
    var rssD: [Double] = [], rssB: [Double] = [], wakeD: [Double] = [], wakeB: [Double] = []
    var threads: Set<Int> = [], windows: [Double] = []
    for _ in 0..<settings.idleSamples {
        guard let d = NotifiedProcess(daemon, ["--config", config], environment: env, directory: directory, label: "weavedid"),
            d.waitReady() != nil,
            let b = NotifiedProcess(me, ["--child-ready-idle"], environment: env, directory: directory, label: "baseline"),
            b.waitReady() != nil
        else {
            print("  could not start the idle pair")
            return
        }
        System.sleep(seconds: settings.idleSettle)
        let before = (System.wakeups(d.pid), System.wakeups(b.pid))
        let windowStart = System.now()
        System.sleep(seconds: settings.idleWindow)
        let after = (System.wakeups(d.pid), System.wakeups(b.pid))
        let window = Double(System.now() - windowStart) / 1e9
        rssD.append(rss(d.pid))
        rssB.append(rss(b.pid))
        wakeD.append(wakeups(before.0, after.0, window))
        wakeB.append(wakeups(before.1, after.1, window))
        threads.insert(after.0.count)
        windows.append(window)
        d.stop()
        b.stop()
    }
    let threadText = threads.sorted().map { "\($0)" }.joined(separator: " or ")
    report.add(Figure(
        group: "daemon", name: "weavedid: idle resident memory (VmRSS)", unit: .megabytes, stats: Stats(rssD),
        baselineName: "Swift no-op", baseline: Stats(rssB), target: .atMost(15),
        note: "after READY=1 and \(fixed(settings.idleSettle + settings.idleWindow, 0)) s idle; one sample per start, \(settings.idleSamples) starts"))
    report.add(Figure(
        group: "daemon", name: "weavedid: idle wakeups (all \(threadText) threads)", unit: .perSecond,
        stats: Stats(wakeD), baselineName: "Swift no-op", baseline: Stats(wakeB),
        target: .atMost(1),
        note: "voluntary context switches of every thread in /proc/PID/task over \(fixed(Stats(windows).median, 1)) s; one sample per start, \(settings.idleSamples) starts"))
}
