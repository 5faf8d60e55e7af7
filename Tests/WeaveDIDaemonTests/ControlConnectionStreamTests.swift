import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// The replies a `more` call streams before its end, on a connection whose client does not read
/// them: only the newest progress waits, and the final reply always comes.
///
/// At the socket this takes a client that leaves hundreds of kilobytes unread (the kernel's send
/// buffer absorbs the rest): `ControlConnectionLimitTests` has one; the connection's books are
/// checked here.
@Suite struct ControlConnectionStreamTests {
    private static func connection() -> ControlConnection {
        let container = WeaveDI.Container()
        return ControlConnection(
            id: 1, descriptor: FileDescriptor(rawValue: -1),
            peer: ControlPeer(connectionID: 1, credentials: PeerCredentials(pid: 1, uid: 0, gid: 0), groups: []),
            session: container.openSession(id: "stream-test"), now: .zero)
    }

    private static func wire(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    private static func progress(_ files: Int) -> [UInt8] {
        wire(#"{"parameters":{"progress":{"filesDone":\#(files)}},"continues":true}"#)
    }

    private static func pending(_ connection: ControlConnection) -> String {
        String(decoding: connection.output[connection.outputOffset...], as: UTF8.self)
    }

    /// What the I/O thread does once the socket took everything.
    private static func written(_ connection: ControlConnection) {
        connection.outputOffset = connection.output.count
        connection.flushInOrder()
    }

    @Test func progressWhileRepliesWait_isCoalescedToTheNewest_theFinalReplyIsNot() {
        let connection = Self.connection()
        connection.nextCallSequence = 1  // call 0 runs
        connection.stream(Self.progress(1), sequence: 0)
        #expect(Self.pending(connection) == String(decoding: Self.progress(1), as: UTF8.self), "nothing waited: it goes out")
        for files in 2...1000 { connection.stream(Self.progress(files), sequence: 0) }
        #expect(Self.pending(connection) == String(decoding: Self.progress(1), as: UTF8.self))
        #expect(connection.progress[0] == Self.progress(1000), "only the newest is kept")

        // The client takes what waits: the newest progress follows.
        Self.written(connection)
        #expect(Self.pending(connection) == String(decoding: Self.progress(1000), as: UTF8.self))
        #expect(connection.progress.isEmpty)

        // Progress still waiting when the call ends is superseded by its final reply.
        connection.stream(Self.progress(1001), sequence: 0)
        let final = Self.wire(#"{"parameters":{"run":{"result":"success"}}}"#)
        connection.finish(0, replies: final)
        #expect(Self.pending(connection) == String(decoding: Self.progress(1000) + final, as: UTF8.self))
        #expect(connection.progress.isEmpty)
        #expect(connection.nextReplySequence == 1)
    }

    @Test func progressOfACallBehindARunningOne_keepsOnlyTheNewest_untilItsTurn() {
        let connection = Self.connection()
        connection.nextCallSequence = 2  // call 0 runs, call 1 streams behind it
        for files in 1...1000 { connection.stream(Self.progress(files), sequence: 1) }
        #expect(connection.output.isEmpty)
        #expect(connection.progress[1] == Self.progress(1000))

        connection.finish(0, replies: Self.wire("{}"))
        #expect(connection.nextReplySequence == 1)
        #expect(Self.pending(connection) == "{}\0", "call 1's progress waits until call 0's reply is taken")
        Self.written(connection)
        #expect(Self.pending(connection) == String(decoding: Self.progress(1000), as: UTF8.self))

        connection.finish(1, replies: Self.wire("{}"))
        #expect(Self.pending(connection) == String(decoding: Self.progress(1000), as: UTF8.self) + "{}\0")
        #expect(connection.nextReplySequence == 2 && connection.progress.isEmpty && connection.finished.isEmpty)
    }
}
