import Foundation
import Synchronization
import WeaveDIPosix

/// The real `weavedid` binary, started in its own directory with a controlled environment;
/// its standard error goes to a file the test reads.
final class DaemonProcess: @unchecked Sendable {  // used from one test at a time
    let directory: TemporaryDirectory
    let pid: Int32
    let logPath: String
    /// The `NOTIFY_SOCKET` listener it was started with, kept as long as the daemon: one that a
    /// helper made and returned only the daemon of would close under it.
    let notify: NotifyListener?
    private var process: Subprocess?
    private(set) var status: TerminationStatus?

    private static let counter = Atomic<Int>(0)

    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("weavedid").path
    }

    /// The socket the built-in default configuration uses in this directory.
    var defaultSocket: String { directory.path + "/run/control.sock" }

    /// Starts `weavedid arguments…` in `directory` with `environment` added to a minimal one
    /// (`childEnvironment`). `prefix` is shell code run before exec (e.g. `LISTEN_PID=$$`).
    init(
        _ arguments: [String] = [], environment: [String: String] = [:], directory: TemporaryDirectory = TemporaryDirectory(),
        notify: NotifyListener? = nil, prefix: String = "", wrapper: [String] = [], logFile: String? = nil
    ) throws {
        self.directory = directory
        self.notify = notify
        logPath = logFile ?? directory.path + "/stderr-\(DaemonProcess.counter.add(1, ordering: .relaxed).newValue).log"
        let env = Self.childEnvironment(environment, directory: directory.path, notify: notify?.address)
        let process: Subprocess
        if prefix.isEmpty, wrapper.isEmpty {
            process = try Subprocess.spawn(
                DaemonProcess.binary, arguments: arguments, environment: env,
                standardOutput: .file(logPath), standardError: .file(logPath), workingDirectory: directory.path)
        } else {
            let script = "cd \"$1\" && shift && \(prefix) exec \"$@\""
            process = try Subprocess.spawn(
                "/bin/sh", arguments: ["-c", script, "sh", directory.path] + wrapper + [DaemonProcess.binary] + arguments,
                environment: env, standardOutput: .file(logPath), standardError: .file(logPath))
        }
        pid = process.pid
        self.process = consume process
    }

    /// The daemon's environment: PATH, RUNTIME_DIRECTORY and STATE_DIRECTORY inside
    /// `directory`, NOTIFY_SOCKET when `notify` is given, the sanitizers' settings `parent` (by
    /// default the test process's environment) has (`SanitizerOptions`), then `environment`; a
    /// variable set to "" is left out.
    static func childEnvironment(
        _ environment: [String: String], directory: String, notify: String? = nil,
        parent: [String: String] = ProcessInfo.processInfo.environment
    ) -> [String: String] {
        var env = [
            "PATH": "/usr/local/bin:/usr/bin:/bin", "RUNTIME_DIRECTORY": directory + "/run",
            "STATE_DIRECTORY": directory + "/state", "WEAVEDI_REGISTRY_AUTO_HEALTH": "0",
        ]
        if let notify { env["NOTIFY_SOCKET"] = notify }
        env.merge(SanitizerOptions.passed(from: parent)) { $1 }
        for (key, value) in environment { env[key] = value }
        return env.filter { !$0.value.isEmpty }
    }

    deinit {
        if status == nil {
            try? Signal.kill.send(to: pid)
            _ = try? process?.wait()
        }
    }

    /// Waits until the process has blocked SIGTERM (its first own instructions ran): from then
    /// on a SIGTERM is handled, never fatal. Before that, only the dynamic loader has run.
    func waitUntilSignalsBlocked(timeout: Duration = .seconds(30)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigBlk:") }),
                let mask = UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16),
                mask & (1 << 14) != 0  // SIGTERM is signal 15: bit 14
            {
                return true
            }
            usleep(200)
        }
        return false
    }

    /// Waits until `signal`, sent to the process, is no longer pending: the daemon's main loop
    /// has read it from its signalfd.
    func waitUntilSignalTaken(_ signal: Signal, timeout: Duration = .seconds(30)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        let bit = UInt64(1) << UInt64(signal.rawValue - 1)
        while ContinuousClock.now < deadline {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
            let pending = status.split(separator: "\n").filter { $0.hasPrefix("ShdPnd:") || $0.hasPrefix("SigPnd:") }
                .compactMap { UInt64($0.drop { $0 != ":" }.dropFirst().trimmingCharacters(in: .whitespaces), radix: 16) }
            if pending.count == 2, pending.allSatisfy({ $0 & bit == 0 }) { return true }
            usleep(1_000)
        }
        return false
    }

    /// Sends `signal` to the daemon.
    func send(_ signal: Signal) {
        try? signal.send(to: pid)
    }

    /// Waits up to `timeout` for the daemon to exit. The waits of this type end as soon as what
    /// they wait for is there: their deadlines are generous, for a slow, busy machine.
    @discardableResult
    func wait(timeout: Duration = .seconds(30)) -> TerminationStatus? {
        if let status { return status }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let finished = try? process?.waitIfExited() {
                status = finished
                return finished
            }
            usleep(10_000)
        }
        return nil
    }

    /// What the daemon wrote to standard error (and output) so far.
    var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// Waits until the log contains `text`, `count` times (a line that comes again, after the
    /// one an earlier wait saw).
    @discardableResult
    func waitForLog(_ text: String, count: Int = 1, timeout: Duration = .seconds(30)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if count == 1 ? log.contains(text) : log.components(separatedBy: text).count > count { return true }
            usleep(10_000)
        }
        return false
    }
}

/// A Unix stream connection to a control socket.
func connectControl(_ path: String) throws -> FileDescriptor {
    try UnixSocket.connect(to: UnixSocketAddress(path: path)).release()
}

func fileExists(_ path: String) -> Bool {
    (try? FileStatus(path: path, followSymlinks: false)) != nil
}
