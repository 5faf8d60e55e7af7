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
