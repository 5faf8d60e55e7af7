import Foundation
import Synchronization
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// One client sending without pause cannot keep the control socket's I/O thread from the others.
@Suite struct ControlFairnessTests {
    @Test func aClientFloodingOnewayCalls_doesNotDelayOthers() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess([], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        // Oneway calls answered at once: no reply piles up and no call stays in flight, so only
        // the reading itself can stop; each read was followed by another while the socket
        // held a full buffer's worth, and a sender faster than the parsing held the thread.
        let flood = try RawClient(daemon.defaultSocket)
        var size: Int32 = 4 << 20  // so that the socket always holds more than one read takes
        setsockopt(flood.descriptor.rawValue, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let descriptor = flood.descriptor
        let batch = Array(String(repeating: call("io.weavedi.Daemon.Ping", extra: #","oneway":true"#), count: 20_000).utf8)
        let stop = Atomic<Bool>(false)
        let floodFailed = Atomic<Bool>(false)
        let writer = try PosixThread {
            while !stop.load(ordering: .relaxed) {
                if (try? descriptor.sendAll(batch)) == nil { floodFailed.store(true, ordering: .relaxed); return }
            }
        }
        usleep(300_000)
        // Without fairness the thread reads the flood for as long as it lasts, and these Pings
        // are never answered; with it, each is answered while the flood goes on. How fast is
        // the machine's business (a shared one may take seconds), so the wait is long and
        // nothing is timed: what is checked is that the answers came while the flood lasted.
        for attempt in 0..<3 {
            let other = try RawClient(daemon.defaultSocket)
            try other.send(call("io.weavedi.Daemon.Ping"))
            try #require(other.reply(timeout: .seconds(30))?.contains(#""version":"#) == true, "Ping \(attempt + 1) beside the flood")
        }
        let floodEnded = floodFailed.load(ordering: .relaxed)
        #expect(!floodEnded, "the flood ended before the Pings were answered: \(daemon.log)")
        stop.store(true, ordering: .relaxed)
        try? descriptor.shutdown(.readWrite)  // ends a send that blocks
        writer.join()
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A connection's turn is a bounded number of calls, however small they are: while one
    /// client has thousands pipelined, another's calls are dispatched between them. Both
    /// clients' calls are in their sockets before the daemon reads any (it is stopped
    /// meanwhile); three malformed calls mark the order in the log (their warnings, written
    /// by the I/O thread as it dispatches each): the first and last of 2,002 on one connection,
    /// and the 101st of the other's. Bounded in bytes (256 KiB a turn), each turn took all
    /// of a connection's calls, and the other's mark came before both or after both.
    @Test func aClientsTurn_isBoundedInCalls_notInBytes() throws {
        let daemon = try readyDaemonWithoutJobs()
        let busy = try RawClient(daemon.defaultSocket), other = try RawClient(daemon.defaultSocket)
        for client in [busy, other] {  // both accepted before the daemon stops
            try client.send(call("io.weavedi.Daemon.Ping"))
            try #require(client.reply()?.contains(#""version":"#) == true, "\(daemon.log)")
        }
        var size: Int32 = 4 << 20  // every call in the socket at once
        setsockopt(busy.descriptor.rawValue, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        try #require(stopped(daemon), "the daemon did not stop")
        let ping = call("io.weavedi.Daemon.Ping")
        try busy.send(call("io.weavedi.Daemon.markFirst") + String(repeating: ping, count: 2_000) + call("io.weavedi.Daemon.markLast"))
        try other.send(String(repeating: ping, count: 100) + call("io.weavedi.Daemon.markOther"))
        daemon.send(.continue)
        var busyAnswered = 0, otherAnswered = 0
        for _ in 0..<2_002 where busy.reply() != nil { busyAnswered += 1 }
        for _ in 0..<101 where other.reply() != nil { otherAnswered += 1 }
        #expect(busyAnswered == 2_002 && otherAnswered == 101, "\(daemon.log)")
        let marks = daemon.log.split(separator: "\n").filter { $0.contains("malformed message") }.compactMap { line in
            ["markFirst", "markOther", "markLast"].first { line.contains($0) }
        }
        #expect(marks == ["markFirst", "markOther", "markLast"], "\(daemon.log)")
        #expect(daemon.log.contains("(pid \(getpid()), uid \(getuid())): malformed message: "), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A `oneway` call of a method that changes nothing is not run: nothing would come of it.
    /// It is counted as a call, but its parameters are not read, so a wrong one is no error.
    @Test func onewayCallsOfMethodsThatChangeNothing_areCounted_butNotRun() throws {
        let daemon = try readyDaemonWithoutJobs()
        let client = try RawClient(daemon.defaultSocket)
        let oneway = #","oneway":true"#
        try client.send(
            call("io.weavedi.Daemon.Ping", #"{"x":1}"#, extra: oneway) + call("io.weavedi.Daemon.CheckCycles", #"{"x":1}"#, extra: oneway)
                + call("io.weavedi.Daemon.ListJobs", #"{"x":1}"#, extra: oneway)
                + call("org.varlink.service.GetInterfaceDescription", #"{"interface":"nope"}"#, extra: oneway)
                + call("io.weavedi.Daemon.GetMetrics"))
        let text = try #require(client.varlinkReply()?.parameter("text")?.stringValue, "\(daemon.log)")
        #expect(text.contains(#"weavedi_control_calls_total{method="io.weavedi.Daemon.CheckCycles"} 1"#), "\(text)")
        #expect(text.contains(#"weavedi_control_calls_total{method="io.weavedi.Daemon.ListJobs"} 1"#), "\(text)")
        #expect(!text.contains("weavedi_control_errors_total{"), "\(text)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}

extension ControlFairnessTests {
    /// A `oneway` call of a method `org.varlink.service` does not have is run as any unknown
    /// method's, and counted as an error (`MethodNotFound`), with no reply.
    @Test func aOnewayCallOfAnUnknownServiceMethod_isCountedAsAnError() throws {
        let daemon = try readyDaemonWithoutJobs()
        let client = try RawClient(daemon.defaultSocket)
        try client.send(call("org.varlink.service.Nope", extra: #","oneway":true"#) + call("io.weavedi.Daemon.GetMetrics"))
        let text = try #require(client.varlinkReply()?.parameter("text")?.stringValue, "\(daemon.log)")
        #expect(text.contains(#"weavedi_control_errors_total{error="org.varlink.service.MethodNotFound"} 1"#), "\(text)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}

extension ControlFairnessTests {
    /// The daemon on a configuration without jobs (so nothing but the calls writes to its
    /// log), once it is ready.
    func readyDaemonWithoutJobs() throws -> DaemonProcess {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(
            ["--config", directory.write("weavedid.json", #"{"sync": {"jobs": []}}"#)], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        return daemon
    }
}

/// Stops the daemon (`SIGSTOP`) and waits until it is stopped: what clients send meanwhile is
/// all in their sockets when it goes on (`SIGCONT`), and it reads as one wake-up does.
func stopped(_ daemon: DaemonProcess) -> Bool {
    daemon.send(.stop)
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
        // The field after the command's parenthesis in /proc/PID/stat.
        let state = (try? String(contentsOfFile: "/proc/\(daemon.pid)/stat", encoding: .utf8))?
            .split(separator: ")").last?.split(separator: " ").first
        if state == "T" { return true }
        usleep(1_000)
    }
    return false
}
