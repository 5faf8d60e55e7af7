import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// The replies a `more` call streams before its end, on a connection whose client does not read
/// them: kept while little waits, dropped beyond the bound, and the final reply always comes.
///
/// At the socket this takes a client that leaves hundreds of kilobytes unread (the kernel's send
/// buffer absorbs the rest) during a run of minutes, so the connection's books are checked here.
@Suite struct ControlConnectionStreamTests {
    private static func connection() -> ControlConnection {
        let container = WeaveDI.Container()
        return ControlConnection(
            id: 1, descriptor: FileDescriptor(rawValue: -1),
            peer: ControlPeer(connectionID: 1, credentials: PeerCredentials(pid: 1, uid: 0, gid: 0), groups: []),
            session: container.openSession(id: "stream-test"), now: .zero)
    }

    private static func wire(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    private static func pending(_ connection: ControlConnection) -> String {
        String(decoding: connection.output[connection.outputOffset...], as: UTF8.self)
    }

    @Test func progressBeyondTheBound_isDropped_theFinalReplyIsNot() {
        let connection = Self.connection()
        connection.nextCallSequence = 1  // call 0 runs
        let bound = 64
        let progress = Self.wire(#"{"parameters":{"progress":{"filesDone":1}},"continues":true}"#)  // 62 bytes
        #expect(connection.stream(progress, sequence: 0, bound: bound))
        #expect(connection.stream(progress, sequence: 0, bound: bound), "62 bytes wait: within the bound")
        #expect(!connection.stream(progress, sequence: 0, bound: bound), "124 bytes wait: over the bound")
        #expect(connection.output.count == 2 * progress.count)

        // The client takes what waits: progress is kept again.
        connection.outputOffset = connection.output.count
        #expect(connection.stream(progress, sequence: 0, bound: bound))

        let final = Self.wire(String(#"{"parameters":{"run":{"result":"success"}}}"#))
        connection.finished[0] = final
        connection.flushInOrder()
        #expect(Self.pending(connection) == String(decoding: progress + final, as: UTF8.self))
        #expect(connection.nextReplySequence == 1)
    }

    @Test func progressOfACallBehindARunningOne_isBoundedToo() {
        let connection = Self.connection()
        connection.nextCallSequence = 2  // call 0 runs, call 1 streams behind it
        let progress = Self.wire(#"{"continues":true}"#)  // 19 bytes
        var kept = 0
        for _ in 0..<100 where connection.stream(progress, sequence: 1, bound: 100) { kept += 1 }
        #expect(kept == 6, "19-byte replies while at most 100 bytes wait: 6 of them")
        #expect(connection.output.isEmpty)
        #expect(connection.streamed[1]?.count == 6 * progress.count)

        connection.finished[0] = Self.wire("{}")
        connection.flushInOrder()
        #expect(connection.nextReplySequence == 1)
        #expect(Self.pending(connection) == "{}\0" + String(repeating: #"{"continues":true}"# + "\0", count: 6))
    }
}
