import Foundation
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// A bare control-socket client for hostile-input tests: raw bytes out, NUL-framed replies in.
final class RawClient {
    let descriptor: FileDescriptor
    private var buffer: [UInt8] = []

    init(_ path: String) throws {
        descriptor = try connectControl(path)
    }

    deinit { try? descriptor.close() }

    func send(_ text: String) throws { try descriptor.sendAll(Array(text.utf8)) }
    func send(bytes: [UInt8]) throws { try descriptor.sendAll(bytes) }

    /// The next reply (without NUL), or nil at end of file or after `timeout`: generous by
    /// default, as the wait ends with the reply, and a slow, busy machine can take seconds.
    func reply(timeout: Duration = .seconds(30)) -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let end = buffer.firstIndex(of: 0) {
                let message = Array(buffer[..<end])
                buffer.removeFirst(end + 1)
                return String(decoding: message, as: UTF8.self)
            }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { return nil }
            var entries = [PollDescriptor(descriptor, events: .readable)]
            _ = try? PollDescriptor.poll(&entries, timeout: remaining)
            // Nothing to read yet (the wait ended or was interrupted): a receive would block.
            if entries[0].returnedEvents.isEmpty { continue }
            guard let chunk = try? descriptor.receive(upToCount: 65_536), !chunk.isEmpty else { return nil }
            buffer += chunk
        }
    }

    /// Whether the daemon closed the connection within `timeout` (generous by default: the
    /// wait ends at the close).
    func closedByPeer(timeout: Duration = .seconds(30)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var entries = [PollDescriptor(descriptor, events: .readable)]
            _ = try? PollDescriptor.poll(&entries, timeout: deadline - ContinuousClock.now)
            if entries[0].returnedEvents.isEmpty { continue }
            guard let chunk = try? descriptor.receive(upToCount: 65_536) else { return true }
            if chunk.isEmpty { return true }
            buffer += chunk
        }
        return false
    }
}

func call(_ method: String, _ parameters: String = "{}", extra: String = "") -> String {
    #"{"method":"\#(method)","parameters":\#(parameters)\#(extra)}"# + "\0"
}

extension RawClient {
    /// The next reply, decoded; nil at end of file, after `timeout`, or when it is no varlink reply.
    func varlinkReply(timeout: Duration = .seconds(30)) -> VarlinkReply? {
        reply(timeout: timeout).flatMap { try? VarlinkReply.decode(Array($0.utf8)) }
    }
}

extension DaemonProcess {
    /// Sends a call of the daemon's interface (`io.weavedi.Daemon.METHOD`) on a connection of
    /// its own, and returns the connection, to read the reply from.
    func sendCall(_ method: String, _ parameters: String = "{}") throws -> RawClient {
        let client = try RawClient(defaultSocket)
        try client.send(call("io.weavedi.Daemon.\(method)", parameters))
        return client
    }
}

extension VarlinkClient {
    /// The check named `name` in the daemon's health, as `method` (`RunChecks`, which runs the
    /// checks first, or `GetHealth`) reports it; nil when no check has that name.
    func check(_ name: String, method: String = "RunChecks", _ parameters: [(String, JSONValue)] = []) throws -> JSONValue? {
        let checks = try call("io.weavedi.Daemon." + method, parameters).parameter("health")?[member: "checks"]?.arrayValue ?? []
        return checks.first { $0[member: "name"]?.stringValue == name }
    }
}
