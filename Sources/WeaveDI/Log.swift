import Synchronization

/// One log line as WeaveDI emits it.
public struct LogRecord: Sendable {
    /// What the message is about.
    public var category: LogCategory
    /// The message itself, one line.
    public var message: String
    /// The source of the message: `container`, `health`, `injected`, … (the daemon adds its own).
    public var subsystem: String

    /// Creates a record.
    public init(category: LogCategory, message: String, subsystem: String) {
        self.category = category
        self.message = message
        self.subsystem = subsystem
    }
}

/// Where WeaveDI's log lines go. The default writes to standard error; the daemon installs one
/// that talks to journald. A sink must be cheap and must not call back into WeaveDI.
public typealias LogSink = @Sendable (LogRecord) -> Void

/// The library's logger: a level (read lock-free on every call) and a pluggable sink.
/// Messages are `@autoclosure`s, so a filtered-out message costs no string building.
public enum WeaveDILog {
    @usableFromInline
    static let levelRank = Atomic<UInt8>(LogLevel.all.rank)

    /// The sink, in a class box. (A closure stored directly in a `Locked` and read with
    /// `withLock { $0 }` comes back through the inout access re-abstracted, and is written back
    /// wrapped in one more thunk: every emitted line made the next one slower, and after enough
    /// lines the nested thunks overflowed the stack.)
    private static let sinkStore = Locked(SinkBox(WeaveDILog.standardError))

    private final class SinkBox: Sendable {
        let sink: LogSink
        init(_ sink: @escaping LogSink) { self.sink = sink }
    }

    /// The current level.
    public static var level: LogLevel {
        get { LogLevel(rank: levelRank.load(ordering: .relaxed)) }
        set { levelRank.store(newValue.rank, ordering: .relaxed) }
    }

    /// Replaces where log lines go.
    public static func setSink(_ sink: @escaping LogSink) {
        let box = SinkBox(sink)
        sinkStore.withLock { $0 = box }
    }

    /// The default sink: `[WeaveDI] <category>: <message>` on standard error.
    public static let standardError: LogSink = { record in
        var line = "[WeaveDI] \(record.category.rawValue): \(record.message)\n"
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = writeToStandardError(bytes.baseAddress! + offset, bytes.count - offset)
                if n <= 0 { break }
                offset += n
            }
        }
    }

    /// Whether a message of `category` would be emitted now.
    @inlinable
    public static func isEnabled(_ category: LogCategory) -> Bool {
        LogLevel(rank: levelRank.load(ordering: .relaxed)).admits(category)
    }

    /// Emits `message` if the level admits `category`; builds the string only then.
    @inlinable
    public static func log(
        _ category: LogCategory, subsystem: String = "container", _ message: @autoclosure () -> String
    ) {
        guard isEnabled(category), !quietedHere() else { return }
        emit(LogRecord(category: category, message: message(), subsystem: subsystem))
    }

    /// Whether this is the library's health machinery run quietly, whose lines (a factory
    /// failing a resolve) are health logs, which `WEAVEDI_REGISTRY_HEALTH_LOGGING` keeps out:
    /// the `container.graph` check's synchronous builds with health logging off (a thread's
    /// flag, `ResolutionStack.quietly`: a task that a factory starts runs elsewhere, later, and
    /// logs as any other; one started with `Task.immediate` runs there until it first suspends,
    /// quiet meanwhile), and the closing of its probe session, whose disposals await
    /// (`quietedTask`).
    @usableFromInline
    static func quietedHere() -> Bool {
        ResolutionStack.isQuiet || quietedTask
    }

    /// Set around the `container.graph` check's closing of its probe session with health
    /// logging off: the disposals it awaits are the check's. (A task a `dispose()` starts
    /// inherits it: a rare thing for a disposal to do.)
    @TaskLocal static var quietedTask = false

    /// Sends a record to the sink, unfiltered.
    @usableFromInline
    static func emit(_ record: LogRecord) {
        let box = sinkStore.withLock { $0 }
        box.sink(record)
    }
}
