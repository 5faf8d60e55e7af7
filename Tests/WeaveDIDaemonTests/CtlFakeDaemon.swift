import Foundation
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// A stand-in for weavedid on a socket of its own: it answers each call with the replies
/// scripted for its method and records the calls. Tests use it for what the real daemon does
/// not produce on demand: job progress, unhealthy checks, component issues, cycles, and the
/// answers of an older daemon (a script per call: refused the first time, answered the next).
final class FakeDaemon: @unchecked Sendable {  // immutable after init; the log has its own lock
    let directory = TemporaryDirectory("weavedictl-fake")
    let socket: String
    private let listener: FileDescriptor
    private let log = CallLog()
    private var thread: PosixThread?

    /// The calls received, behind a lock (the serving thread appends, the test reads).
    private final class CallLog: @unchecked Sendable {
        private let lock = NSLock()
        private var calls: [VarlinkCall] = []


        var all: [VarlinkCall] {
            lock.lock()
            defer { lock.unlock() }
            return calls
        }

        /// Records `call`; returns how many calls of the same method came before it.
        func append(_ call: VarlinkCall) -> Int {
            lock.lock()
            defer { lock.unlock() }
            let before = calls.count(where: { $0.method == call.method })
            calls.append(call)
            return before
        }
    }

    /// What one call gets: bytes to send, each followed by a short pause or not.
    private typealias Script = [(bytes: [UInt8], pause: Bool)]

    /// Serves `replies`, keyed by the method's short name (`RunJob`); a method without replies
    /// gets its connection closed without an answer.
    convenience init(_ replies: [String: [VarlinkReply]]) throws {
        try self.init(perCall: replies.mapValues { [$0] })
    }

    /// Serves each call of a method the next of the scripts given for it, keyed by the method's
    /// short name: the first call gets the first script, the second the second, and so on; the
    /// last one is served to every call after it.
    convenience init(perCall replies: [String: [[VarlinkReply]]]) throws {
        try self.init(scripts: replies.mapValues { $0.map { $0.map { (bytes: $0.encoded() + [0], pause: $0.continues) } } })
    }

    /// Serves the bytes scripted for each method as they are (a hostile or broken daemon:
    /// NUL terminators are the script's to write), then reads on until the client closes.
    convenience init(raw replies: [String: [[UInt8]]]) throws {
        try self.init(scripts: replies.mapValues { [$0.map { (bytes: $0, pause: false) }] })
    }

    private init(scripts replies: [String: [Script]]) throws {
        socket = directory.path + "/control.sock"
        let listener = try UnixSocket.listen(at: UnixSocketAddress(path: socket), nonBlocking: false).release()
        self.listener = listener
        let log = self.log
        thread = try PosixThread {
            while let connection = try? listener.accept(nonBlocking: false).release() {
                FakeDaemon.answer(on: connection, replies: replies, log: log)
                try? connection.close()
            }
        }
    }

    deinit {
        try? listener.shutdown(.readWrite)  // wakes accept(2), which then fails
        thread?.join()
        try? listener.close()
    }

    /// The calls received so far.
    var calls: [VarlinkCall] { log.all }

    private static func answer(on connection: FileDescriptor, replies: [String: [Script]], log: CallLog) {
        var buffer: [UInt8] = []
        while true {
            guard let chunk = try? connection.receive(upToCount: 65_536), !chunk.isEmpty else { return }
            buffer += chunk
            while let end = buffer.firstIndex(of: 0) {
                let message = Array(buffer[..<end])
                buffer.removeFirst(end + 1)
                guard let call = try? VarlinkCall.decode(message) else { return }
                let before = log.append(call)
                let method = String(call.method.split(separator: ".").last ?? "")
                guard let scripts = replies[method], let last = scripts.last else { return }
                for reply in before < scripts.count ? scripts[before] : last {
                    guard (try? connection.sendAll(reply.bytes)) != nil else { return }
                    if reply.pause { usleep(20_000) }
                }
            }
        }
    }
}

extension VarlinkReply {
    /// A `Progress` reply of `RunJob` with `more`.
    static func progress(files: Int, of total: Int, bytes: Int, of bytesTotal: Int) -> VarlinkReply {
        VarlinkReply(parameters: [
            ("run", .null),
            ("progress", .object([
                ("filesDone", .int(files)), ("filesTotal", .int(total)), ("bytesDone", .int(bytes)), ("bytesTotal", .int(bytesTotal)),
            ])),
        ], continues: true)
    }

    /// The final reply of `RunJob`: a `JobRun` with `result`.
    static func jobRun(_ job: String, result: String) -> VarlinkReply {
        VarlinkReply(parameters: [
            ("run", .object([
                ("id", .string("run-1")), ("job", .string(job)), ("result", .string(result)), ("startedAt", .double(1000)),
                ("endedAt", .double(1002.5)), ("duration", .double(2.5)), ("filesCopied", .int(4)), ("filesUpdated", .int(0)),
                ("filesDeleted", .int(1)), ("filesSkipped", .int(0)), ("errors", .int(result == "success" ? 0 : 2)),
                ("bytes", .int(4096)), ("message", result == "success" ? .null : .string("2 files could not be read")),
            ])),
            ("progress", .null),
        ])
    }

    /// A `GetHealth` / `RunChecks` reply with one check in `status`.
    static func health(_ status: String) -> VarlinkReply {
        let check = JSONValue.object([
            ("name", .string("disk.space")), ("tags", .array([.string("liveness")])), ("status", .string(status)),
            ("message", .string("92% used")), ("data", .object([])), ("duration", .double(0.002)), ("lastRun", .double(1000)),
            ("lastSuccess", .null), ("lastFailure", .double(1000)), ("consecutiveFailures", .int(3)), ("fixable", .bool(true)),
            ("fixesTried", .int(1)), ("fixHeldBack", .null), ("breaker", .string("closed")),
        ])
        return VarlinkReply(parameters: [
            ("health", .object([
                ("status", .string(status)), ("score", .int(status == "degraded" ? 50 : 0)), ("takenAt", .double(1000)),
                ("checks", .array([check])),
            ])),
        ])
    }
}

/// Objects of `io.weavedi.Daemon` whole, as the daemon sends them (every member the interface
/// does not mark optional), for fakes that vary a few members with `with`: weavedictl refuses
/// a reply that lacks one (`ReplyContract`).
extension JSONValue {
    /// This object with `changes`: a member of the same name replaced, others appended.
    func with(_ changes: [(String, JSONValue)]) -> JSONValue {
        var members = objectMembers ?? []
        for (key, value) in changes {
            if let index = members.firstIndex(where: { $0.0 == key }) { members[index].1 = value } else { members.append((key, value)) }
        }
        return .object(members)
    }

    /// A `Check` that passed.
    static let check = JSONValue.object([
        ("name", .string("disk.space")), ("tags", .array([.string("liveness")])), ("status", .string("healthy")),
        ("message", .string("40% used")), ("data", .object([])), ("duration", .double(0.002)), ("lastRun", .double(1000)),
        ("lastSuccess", .double(1000)), ("lastFailure", .null), ("consecutiveFailures", .int(0)), ("fixable", .bool(false)),
        ("fixesTried", .int(0)), ("fixHeldBack", .null), ("fixInProgress", .null), ("breaker", .string("closed")),
    ])

    /// A healthy `Health` with `checks`.
    static func health(_ checks: [JSONValue]) -> JSONValue {
        .object([("status", .string("healthy")), ("score", .int(100)), ("takenAt", .double(1000)), ("checks", .array(checks))])
    }

    /// A `Job` (a mirror) that is scheduled and never ran.
    static let job = JSONValue.object([
        ("name", .string("docs")), ("kind", .string("mirror")), ("enabled", .bool(true)), ("paused", .bool(false)),
        ("running", .bool(false)), ("queued", .null), ("removedRunStopping", .null), ("interval", .double(300)),
        ("consecutiveFailures", .int(0)), ("skippedRuns", .int(0)), ("nextRunIn", .double(60)), ("lastRun", .null), ("mirror", .null),
    ])

    /// A `JobRun` that succeeded.
    static let jobRun = JSONValue.object([
        ("id", .string("docs-1")), ("job", .string("docs")), ("result", .string("success")), ("startedAt", .double(1000)),
        ("endedAt", .double(1001)), ("duration", .double(1)), ("filesCopied", .int(1)), ("filesUpdated", .int(0)),
        ("filesDeleted", .int(0)), ("filesSkipped", .int(0)), ("errors", .int(0)), ("bytes", .int(10)), ("message", .null),
        ("failedItems", .array([])),
    ])

    /// A control `Session`.
    static let session = JSONValue.object([
        ("id", .string("s1")), ("kind", .string("control")), ("uid", .int(1000)), ("gid", .int(1000)), ("pid", .int(42)),
        ("age", .double(1)), ("instances", .int(0)), ("requests", .int(1)),
    ])

    /// A `Fix` that succeeded.
    static let fix = JSONValue.object([
        ("time", .double(1000)), ("check", .string("disk.space")), ("trigger", .string("manual")), ("outcome", .string("succeeded")),
        ("message", .string("freed 1 GiB")), ("error", .null), ("duration", .double(0.5)),
    ])

    /// A `Registration`.
    static let registration = JSONValue.object([
        ("type", .string("Clock")), ("scope", .string("singleton")), ("module", .string("core")), ("dependencies", .array([])),
        ("built", .bool(true)),
    ])

    /// A `ComponentIssue`.
    static let issue = JSONValue.object([
        ("type", .string("Clock")), ("kind", .string("duplicateProvider")), ("providers", .array([.string("a"), .string("b")])),
        ("detail", .string("two modules register it")),
    ])
}
