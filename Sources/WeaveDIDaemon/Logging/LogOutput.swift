import Glibc
import WeaveDIPosix

/// Where `DaemonLog` writes its lines (standard error), written so that a reader that takes
/// nothing cannot hold the daemon: a full pipe (a logger that stopped reading, journald that
/// does not answer) would otherwise block every thread that logs, the main loop with them,
/// and a SIGTERM would go unanswered for ever.
///
/// A line waits at most `stallLimit` for the output to take it; a line it does not take by
/// then, and every line after it until the output takes more, is dropped and counted, without
/// waiting. The first line written again is preceded by a warning saying how many were
/// dropped (and, if one was cut short, a newline ending it). The descriptor's own flags are
/// left alone (`O_NONBLOCK` would change them for every process sharing it, the shell's
/// terminal included): the writes wait in `poll(2)` instead, and a pipe is written
/// `PIPE_BUF` bytes at a time, which `poll` saying it is writable guarantees to fit.
struct LogOutput {
    /// The descriptor written to.
    let descriptor: FileDescriptor
    /// Whether it is a socket (journald's stream): written with `MSG_DONTWAIT`.
    private let isSocket: Bool
    /// Lines dropped since the output last took one.
    private(set) var dropped = 0
    /// Whether the last line was cut short (the output took part of it).
    private var cut = false
    /// Whether the log wrote its last line (`close()`): the process is exiting.
    private(set) var isClosed = false

    /// How long one line may wait for the output to take it.
    static let stallLimit: Duration = .seconds(1)
    /// The most written at once to a descriptor that is not a socket: `PIPE_BUF`.
    private static let chunk = 4096

    /// Writes to `descriptor`.
    init(_ descriptor: FileDescriptor) {
        self.descriptor = descriptor
        isSocket = (try? descriptor.status())?.kind == .socket
    }

    /// Takes no more lines: the process is exiting, and nothing may follow the line that
    /// says so.
    mutating func close() {
        isClosed = true
    }

    /// Writes `line` (one or more whole lines); `droppedWarning(count)` is the line said
    /// before it when lines were dropped.
    mutating func write(_ line: [UInt8], droppedWarning: (Int) -> [UInt8]) {
        if dropped > 0 {
            // Stalled: a line is tried only once the output takes something at once.
            guard isWritable(within: .zero) else {
                dropped += 1
                return
            }
            var warning = cut ? [UInt8(ascii: "\n")] : []
            warning += droppedWarning(dropped)
            guard write(warning) else {
                dropped += 1
                return
            }
            dropped = 0
        }
        if !write(line) { dropped = 1 }
    }

    /// Writes all of `bytes`, waiting at most `stallLimit` for the output to take more;
    /// false when it took nothing for that long. An error other than a full output (a closed
    /// descriptor, a reader gone) ends the line as written: waiting would not help, and
    /// nothing could say it.
    private mutating func write(_ bytes: [UInt8]) -> Bool {
        let deadline = ContinuousClock.now + Self.stallLimit
        var offset = 0
        while offset < bytes.count {
            guard isWritable(within: max(.zero, deadline - ContinuousClock.now)) else {
                cut = offset > 0
                return false
            }
            let result = bytes.withUnsafeBytes { buffer in
                let rest = UnsafeRawBufferPointer(rebasing: buffer[offset...])
                return Result { () throws(Errno) -> Int in
                    if isSocket { return try descriptor.send(rest, flags: Int32(MSG_DONTWAIT)) }
                    return try descriptor.write(UnsafeRawBufferPointer(rebasing: rest.prefix(Self.chunk)))
                }
            }
            switch result {
            case let .success(count): offset += count
            case .failure(.wouldBlock): continue
            case .failure: offset = bytes.count
            }
        }
        cut = false
        return true
    }

    /// Whether the output can take bytes now, or within `timeout`.
    private func isWritable(within timeout: Duration) -> Bool {
        var entries = [PollDescriptor(descriptor, events: .writable)]
        guard (try? PollDescriptor.poll(&entries, timeout: timeout)) != nil else { return true }
        // An error, a hang-up or a closed descriptor: the write says it at once, without waiting.
        return !entries[0].returnedEvents.isEmpty
    }
}
