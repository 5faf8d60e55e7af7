import Glibc
import Testing
import WeaveDI
@testable import WeaveDIControl
import WeaveDIPosix

/// `VarlinkClient` (weavedictl's) against a peer that answers anything at all: whatever listens
/// on the socket path is input from outside.
@Suite struct VarlinkClientTests {
    /// Listens in a directory of its own; the one connection it accepts reads the call, then
    /// gets `answer` (repeated `repeats` times), and is closed.
    final class RawPeer: @unchecked Sendable {  // immutable after init
        let directory = TemporaryDirectory("varlink-peer")
        let socket: String
        private let thread: PosixThread

        /// With `bytePause`, the answer goes out one byte at a time, with that pause (in
        /// microseconds) after each: a peer that trickles.
        /// With `readsCall` false, the peer answers and closes without reading the call.
        init(answer: [UInt8], repeats: Int = 1, bytePause: UInt32? = nil, readsCall: Bool = true) throws {
            socket = directory.path + "/control.sock"
            let listener = try UnixSocket.listen(at: UnixSocketAddress(path: socket), nonBlocking: false).release()
            thread = try PosixThread {
                defer { try? listener.close() }
                guard let connection = try? listener.accept(nonBlocking: false).release() else { return }
                defer { try? connection.close() }
                if readsCall { _ = try? connection.receive(upToCount: 65_536) }
                for _ in 0..<repeats {
                    guard let bytePause else {
                        guard (try? connection.sendAll(answer)) != nil else { return }
                        continue
                    }
                    for byte in answer {
                        guard (try? connection.sendAll([byte])) != nil else { return }
                        usleep(bytePause)
                    }
                }
            }
        }

        /// Waits for the peer's thread (which ends once its client is gone or all is sent).
        func join() { thread.join() }
    }

    @Test func aReplyWithoutItsNUL_isRefusedPastTheLimit_notBufferedWithoutEnd() throws {
        // 17 MiB of a string that never ends, then the peer closes.
        let peer = try RawPeer(answer: Array(#"{"parameters":{"x":""#.utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 65_536), repeats: 272)
        var described = ""
        var (received, searched) = (0, 0)
        do {
            let client = try VarlinkClient(path: peer.socket)
            defer { (received, searched) = (client.bytesReceived, client.bytesSearched) }
            _ = try client.call("io.weavedi.Daemon.Ping")
            Issue.record("the call succeeded")
        } catch {
            described = "\(error)"
        }
        #expect(described == "the reply is not a valid varlink reply: more than \(JSONLimits().maxBytes) bytes without the NUL that ends a reply",
            "\(described)")
        // Each byte searched once: searching the whole buffer again at each read took a minute
        // for these 17 MiB (the bytes searched grew with the square of the bytes received).
        #expect(received > JSONLimits().maxBytes)
        #expect(searched == received)
        peer.join()  // the client is gone: the peer stops sending
    }

    @Test func aReplyTrickledInByteByByte_endsInTimedOut_withinItsReplyTimeout() throws {
        // 200 bytes, one every 50 ms: 10 s for the reply, each read answered well within 1 s.
        let text = #"{"parameters":{"version":""# + String(repeating: "a", count: 170) + #""}}"#
        let peer = try RawPeer(answer: Array(text.utf8) + [0], bytePause: 50_000)
        do {
            let client = try VarlinkClient(path: peer.socket, timeout: .seconds(1))
            let reply = try client.call("io.weavedi.Daemon.Ping")
            Issue.record("the call succeeded: \(reply.parameters.count) parameters")
        } catch let VarlinkClient.ConnectionError.timedOut(wait) {
            #expect(wait == .seconds(1))
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        peer.join()  // the client is gone: the peer's next byte fails
    }

    /// A daemon with no place left answers `LimitExceeded` and closes, maybe before the call
    /// is sent: the call fails with that answer, not with the broken pipe of its send.
    @Test func anAnswerSentBeforeTheCall_isTheCallsFailure_notABrokenPipe() throws {
        let refusal = #"{"error":"io.weavedi.Daemon.LimitExceeded","parameters":{"limit":"clients","value":1}}"#
        let peer = try RawPeer(answer: Array(refusal.utf8) + [0], readsCall: false)
        let client = try VarlinkClient(path: peer.socket, timeout: .seconds(10))
        peer.join()  // answered and closed: the call's send fails
        do {
            _ = try client.call("io.weavedi.Daemon.Ping")
            Issue.record("the call succeeded")
        } catch let failure as VarlinkFailure {
            #expect(failure.name == "io.weavedi.Daemon.LimitExceeded")
            #expect(failure.parameters.first?.1 == .string("clients"))
        } catch {
            Issue.record("unexpected error: \(error)")
        }
    }

    @Test func repliesWithMembersOfTheWrongType_areRefused_notTakenForSuccess() throws {
        let cases: [(String, String)] = [
            (#"{"error":5,"parameters":{}}"#, #""error" must be a string, got integer"#),
            (#"{"parameters":[1]}"#, #""parameters" must be an object, got array"#),
            (#"{"parameters":{},"continues":"yes"}"#, #""continues" must be a boolean, got string"#),
            (#"[]"#, "a reply is a JSON object, got array"),
        ]
        for (text, reason) in cases {
            #expect(throws: (any Error).self, "\(text)") { try VarlinkReply.decode(Array(text.utf8)) }
            do {
                _ = try VarlinkReply.decode(Array(text.utf8))
            } catch {
                #expect(error.reason == reason, "\(text)")
            }
        }
        // Members it does not know are left alone (a later version of the protocol may add some).
        let reply = try VarlinkReply.decode(Array(#"{"parameters":{"a":1},"continues":true,"extra":[]}"#.utf8))
        #expect(reply.parameters.first?.0 == "a" && reply.continues && reply.error == nil)
        // And over the socket: weavedictl's client reports it rather than a success.
        let peer = try RawPeer(answer: Array(#"{"error":5,"parameters":{}}"#.utf8) + [0])
        let client = try VarlinkClient(path: peer.socket)
        #expect(throws: VarlinkClient.ConnectionError.self) { try client.call("io.weavedi.Daemon.Ping") }
        peer.join()
    }
}
