@testable import WeaveDI

/// The lines the library logs while a test's work runs: all of them, and no other test's.
///
/// The library's sink is one for the whole process, and suites run in parallel: a test that set
/// a sink of its own to read lines could have it replaced by another test meanwhile, and lose its
/// lines to that one, or read that one's. So no test sets the sink. The first capture installs
/// one, for the rest of the process, that hands each line to the capture bound where the line is
/// logged (`during`: a task-local, so the innermost one), and sends a line logged where none is
/// bound to standard error, as the library's default sink does.
///
/// A task-local is inherited by child tasks and by `Task {}` (the library starts no other kind:
/// its disposals, health loop and check rounds are those), not by `Task.detached` or a thread a
/// test starts: a line logged there is not captured, unless the test binds the capture there too.
final class LogCapture: Sendable {
    private let lines = Locked<[LogRecord]>([])
    private let each: (@Sendable (LogRecord) -> Void)?

    /// A capture; `each` is called with each line it takes, where the line is logged.
    init(each: (@Sendable (LogRecord) -> Void)? = nil) {
        self.each = each
        _ = Self.router
    }

    /// The lines taken so far, in the order they were logged.
    var records: [LogRecord] { lines.withLock { $0 } }

    /// The messages of the lines taken so far.
    var messages: [String] { records.map(\.message) }

    /// Runs `body` taking the lines logged in it.
    func during<R>(_ body: () throws -> R) rethrows -> R {
        try Self.$current.withValue(self, operation: body)
    }

    /// Runs `body` taking the lines logged in it, and in the tasks it starts that inherit it.
    func during<R>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> R) async rethrows -> R {
        try await Self.$current.withValue(self, operation: body)
    }

    private func take(_ record: LogRecord) {
        lines.withLock { $0.append(record) }
        each?(record)
    }

    @TaskLocal private static var current: LogCapture?

    /// Installs the routing sink, once.
    private static let router: Void = UnifiedDI.setLogSink { route($0) }

    private static func route(_ record: LogRecord) {
        if let capture = current {
            capture.take(record)
        } else {
            WeaveDILog.standardError(record)
        }
    }
}
