import Glibc
import Synchronization

/// What weavedictl says when Ctrl-C (SIGINT) or SIGTERM ends it while it waits on the daemon
/// for something that goes on without it (`run-job --wait`): ending weavedictl does not end
/// the run, and a silent exit would let one believe it did.
///
/// A signal handler may only do what is async-signal-safe: the message is written into one of
/// two fixed buffers beforehand, and published with its length in one atomic word. The
/// handler ends a progress bar's line first (on a terminal, so that neither the message nor
/// the shell's prompt lands on the bar), writes the message to standard error, and lets the
/// signal end the process as it would have (its default action, restored on entry): the shell
/// still sees a process killed by SIGINT.
enum InterruptNotice {
    /// The longest message, in bytes (a longer one is cut).
    static let capacity = 1024

    /// Two buffers of `capacity` bytes: the one published is not written again while it is.
    /// (Unsafe: the buffers are shared with the handler; `state`, published after each write,
    /// orders them.)
    nonisolated(unsafe) private static let storage: UnsafeMutablePointer<UInt8> = .allocate(capacity: 2 * capacity)
    /// A newline for standard output. (Unsafe: written once, before anything reads it.)
    nonisolated(unsafe) private static let newline: UnsafeMutablePointer<UInt8> = {
        let byte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        byte.initialize(to: UInt8(ascii: "\n"))
        return byte
    }()
    /// `length << 3 | barDrawn << 2 | slot`, slot 0 for no message, else 1 or 2.
    private static let state = Atomic<Int>(0)
    private static let installed = Atomic<Bool>(false)

    /// Says `message` (a line, without its newline) if a SIGINT or SIGTERM comes from now on.
    static func set(_ message: String) {
        _ = storage
        _ = newline
        let bytes = Array((message + "\n").utf8.prefix(capacity))
        let current = state.load(ordering: .acquiring)
        let slot = current & 3 == 1 ? 2 : 1
        let buffer = storage + (slot - 1) * capacity
        bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: $0.count) }
        update { $0 & 4 | bytes.count << 3 | slot }
        install()
    }

    /// Whether a progress bar is drawn on the terminal's current line, to be ended first.
    static func barDrawn(_ drawn: Bool) {
        update { drawn ? $0 | 4 : $0 & ~4 }
    }

    /// Forgets the message: the wait is over.
    static func clear() {
        update { _ in 0 }
    }

    private static func update(_ change: (Int) -> Int) {
        var current = state.load(ordering: .relaxed)
        while true {
            let (exchanged, original) = state.compareExchange(
                expected: current, desired: change(current), successOrdering: .releasing, failureOrdering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// Installs the handler for SIGINT and SIGTERM once; a signal the process was started
    /// with ignored (`nohup`, a background job of a script) stays ignored.
    private static func install() {
        guard !installed.exchange(true, ordering: .relaxed) else { return }
        for signal in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = interrupted
            action.sa_flags = Int32(truncatingIfNeeded: SA_RESETHAND)  // 0x80000000: the sign bit
            sigemptyset(&action.sa_mask)
            var previous = sigaction()
            guard sigaction(signal, nil, &previous) == 0 else { continue }
            if let handler = previous.__sigaction_handler.sa_handler, unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) {
                continue
            }
            _ = sigaction(signal, &action, nil)
        }
    }

    /// The handler: async-signal-safe calls only (`write`, `raise`).
    fileprivate static func say(_ signal: Int32) {
        let current = state.load(ordering: .acquiring)
        let slot = current & 3
        guard slot != 0 else { return }
        if current & 4 != 0 { _ = write(STDOUT_FILENO, newline, 1) }
        _ = write(STDERR_FILENO, storage + (slot - 1) * capacity, current >> 3)
    }
}

/// The handler of SIGINT and SIGTERM (reset to the default action on entry, `SA_RESETHAND`):
/// says the message, then raises the signal again, which ends the process once it returns.
private func interrupted(_ signal: Int32) {
    InterruptNotice.say(signal)
    raise(signal)
}
