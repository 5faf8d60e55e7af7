import Synchronization

/// One log line as WeaveDI emits it.
public struct LogRecord: Sendable {
    /// What the message is about.
    public var category: LogCategory
    /// The message itself, one line. What the library emits has its control characters
    /// escaped (`\n`, `\r`, `\t`, `\u{1B}`, ...: `ControlCharacters`), whatever text from outside
    /// it quotes (a factory's error, a session's id), so a sink may write it as it is.
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

    /// The default sink: `[WeaveDI] <category>: <message>` on standard error, one line. The
    /// message's control characters are escaped here too (the library's own records have them
    /// escaped already, and escaping is idempotent): a record a program builds and passes on
    /// itself forges no line either.
    public static let standardError: LogSink = { record in
        var line = "[WeaveDI] \(record.category.rawValue): \(ControlCharacters.escaped(record.message))\n"
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

    /// Sends a record to the sink, unfiltered: its message and subsystem with their control
    /// characters escaped, once, here, whatever text from outside they quote, so that every
    /// sink (the default, weavedid's, a program's own) gets one line that sends nothing to a
    /// terminal. Escaping is idempotent: text escaped before (a health line's message) is
    /// left as it is.
    @usableFromInline
    static func emit(_ record: LogRecord) {
        var record = record
        record.message = ControlCharacters.escaped(record.message)
        record.subsystem = ControlCharacters.escaped(record.subsystem)
        let box = sinkStore.withLock { $0 }
        box.sink(record)
    }
}
