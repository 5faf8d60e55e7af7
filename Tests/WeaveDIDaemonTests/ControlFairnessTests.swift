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
}
