import Foundation
import WeaveDIPosix

/// Plays systemd's part: a datagram socket the test owns, given to the daemon as NOTIFY_SOCKET.
final class NotifyListener: @unchecked Sendable {  // used from one test at a time
    let address: String
    private let descriptor: FileDescriptor
    private(set) var received: [String] = []
    /// Every line received so far, with when its datagram was read.
    private(set) var arrivals: [(line: String, at: ContinuousClock.Instant)] = []

    /// A listener on a path inside `directory`, or on an abstract name.
    init(abstract: Bool, directory: TemporaryDirectory, name: String = "notify.sock") throws {
        address = abstract ? "@weavedi-test-\(UInt64.random(in: 0...UInt64.max))" : directory.path + "/" + name
        descriptor = try UnixSocket.bindDatagram(at: UnixSocketAddress(address), nonBlocking: true).release()
    }

    deinit { try? descriptor.close() }

    /// Every datagram that arrives within `timeout`, until one satisfies `done`; returns
    /// whether one did.
    @discardableResult
    func wait(timeout: Duration = .seconds(30), until done: (String) -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        if received.contains(where: done) { return true }
        while ContinuousClock.now < deadline {
            var entries = [PollDescriptor(descriptor, events: .readable)]
            _ = try? PollDescriptor.poll(&entries, timeout: deadline - ContinuousClock.now)
            while let message = try? descriptor.receive(upToCount: 4096), !message.isEmpty {
                let text = String(decoding: message, as: UTF8.self)
                let now = ContinuousClock.now
                received.append(text)
                arrivals += text.split(separator: "\n").map { (String($0), now) }
                if done(text) { return true }
            }
        }
        return false
    }

    /// Waits for a datagram containing the line `line`.
    @discardableResult
    func wait(forLine line: String, timeout: Duration = .seconds(30)) -> Bool {
        wait(timeout: timeout) { $0.split(separator: "\n").contains { $0 == line } }
    }

    /// Fills the listener's receive queue with filler datagrams (`X_FILLER=1`, sent from a
    /// socket of the test's own) until the kernel refuses more: as systemd when it does not
    /// read. The daemon's notifications are then dropped (never waited for) until the test
    /// reads (`wait`).
    func fill() throws {
        let sender = try UnixSocket.make(.datagram, nonBlocking: true)
        let target = try UnixSocketAddress(address)
        var sent = 0
        while (try? sender.descriptor.send(Array("X_FILLER=1".utf8), to: target)) != nil { sent += 1 }
        precondition(sent > 0, "the notify socket took no filler")
    }

    /// All lines received so far.
    var lines: [String] { received.flatMap { $0.split(separator: "\n").map(String.init) } }
}
