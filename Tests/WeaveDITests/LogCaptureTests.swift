import Testing
@testable import WeaveDI

/// Two tasks arriving at the same point wait for each other there.
private actor Rendezvous {
    private let parties: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ parties: Int) { self.parties = parties }

    func arrive() async {
        if waiting.count + 1 == parties {
            for continuation in waiting { continuation.resume() }
            waiting = []
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }
}

/// `LogCapture`: what the tests that read the library's log rely on. Not serialized: these run
/// alongside the rest, as the captures they check do.
@Suite struct LogCaptureTests {
    /// Two captures open at once, each logging only while the other is open too: each gets its
    /// own lines, all of them, and none of the other's, nor any other test's. Lines logged by the
    /// library (a component with nothing to provide) and by a `Task {}` the work starts count.
    @Test func twoCapturesAtOnce_eachGetsExactlyItsOwnLines() async {
        let bothOpen = Rendezvous(2), bothLogged = Rendezvous(2)
        @Sendable func work(_ name: String) async -> [String] {
            let log = LogCapture()
            await log.during {
                await bothOpen.arrive()
                for i in 0..<20 {
                    WeaveDILog.emit(LogRecord(category: .diagnostic, message: "\(name) \(i)", subsystem: "capture-test"))
                }
                EmptyComponent.registerAll(in: WeaveDI.Container())
                await Task {
                    WeaveDILog.emit(LogRecord(category: .diagnostic, message: "\(name) in a task", subsystem: "capture-test"))
                }.value
                await bothLogged.arrive()
            }
            return log.messages
        }
        async let first = work("first")
        async let second = work("second")
        let (firstLines, secondLines) = await (first, second)
        func expected(_ name: String) -> [String] {
            (0..<20).map { "\(name) \($0)" }
                + ["component EmptyComponent has no @Provide property (or the program was built without reflection "
                    + "metadata); nothing registered"]
                + ["\(name) in a task"]
        }
        #expect(firstLines == expected("first"), "\(firstLines)")
        #expect(secondLines == expected("second"), "\(secondLines)")
    }

    /// A capture inside another takes the lines logged in it; the outer one, those before and after.
    @Test func aNestedCapture_takesItsLines_fromTheOuterOne() {
        let outer = LogCapture(), inner = LogCapture()
        outer.during {
            WeaveDILog.emit(LogRecord(category: .diagnostic, message: "before", subsystem: "capture-test"))
            inner.during {
                WeaveDILog.emit(LogRecord(category: .diagnostic, message: "inside", subsystem: "capture-test"))
            }
            WeaveDILog.emit(LogRecord(category: .diagnostic, message: "after", subsystem: "capture-test"))
        }
        #expect(outer.messages == ["before", "after"])
        #expect(inner.messages == ["inside"])
    }
}
