import Glibc
import WeaveDI
import WeaveDIPosix

/// Standard output and standard error, written with `write(2)` so that nothing waits in a
/// buffer (a progress bar redrawn with `\r` shows at once), and ANSI styles for terminals.
struct Terminal {
    /// A text style.
    enum Style {
        case green, yellow, red, bold, dim

        /// The SGR escape sequence that starts the style.
        var code: String {
            switch self {
            case .green: "\u{1B}[32m"
            case .yellow: "\u{1B}[33m"
            case .red: "\u{1B}[31m"
            case .bold: "\u{1B}[1m"
            case .dim: "\u{1B}[2m"
            }
        }

        /// The sequence that ends any style.
        static let reset = "\u{1B}[0m"

        /// Green for healthy and success, yellow for degraded, red for unhealthy and failure.
        static func status(_ status: String) -> Style? {
            switch status {
            case "healthy", "succeeded", "success", "ok": .green
            case "degraded", "refused", "timedOut", "inProgress", "notApplicable", "pending", "partial", "skipped", "cancelled": .yellow
            case "unhealthy", "failed": .red
            default: nil
            }
        }
    }

    /// Whether standard output is a terminal (`isatty(1)`).
    let isTerminal: Bool
    /// Whether to colour standard output.
    let colors: Bool

    /// A terminal description for this process.
    init(isTerminal: Bool = isatty(STDOUT_FILENO) == 1, colors: Bool) {
        self.isTerminal = isTerminal
        self.colors = colors
    }

    /// `text` in `style`, or `text` alone when not colouring.
    func styled(_ text: String, _ style: Style?) -> String {
        guard colors, let style, !text.isEmpty else { return text }
        return style.code + text + Style.reset
    }

    /// Writes `text` to standard output as it is.
    func write(_ text: String) {
        Terminal.write(text, to: .standardOutput)
    }

    /// Writes `text` and a newline to standard output.
    func line(_ text: String = "") {
        write(text + "\n")
    }

    /// Writes `text` and a newline to standard error.
    static func error(_ text: String) {
        write(text + "\n", to: .standardError)
    }

    /// The first error writing to standard output, if any: `WeaveDICtl.main` reports it and
    /// exits 74, so that output lost to a full disk or a closed pipe is not lost in silence.
    static var outputFailure: Errno? { firstOutputFailure.withLock { $0 } }

    private static let firstOutputFailure = Locked<Errno?>(nil)

    private static func write(_ text: String, to descriptor: FileDescriptor) {
        do {
            try writeAll(Array(text.utf8), to: descriptor)
        } catch {
            // Nothing more can be said when standard error fails too.
            guard descriptor == .standardOutput else { return }
            firstOutputFailure.withLock { first in first = first ?? error }
        }
    }

    /// Writes all of `bytes`, waiting for room when the descriptor is non-blocking: one shared
    /// with another process may have been left so (by a shell, a Node.js parent), and a pipe
    /// that is full for now is no failure to write.
    private static func writeAll(_ bytes: [UInt8], to descriptor: FileDescriptor) throws(Errno) {
        let failure: Errno? = bytes.withUnsafeBytes { buffer -> Errno? in
            var offset = 0
            while offset < buffer.count {
                do throws(Errno) {
                    offset += try descriptor.write(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
                } catch .wouldBlock {
                    var entries = [PollDescriptor(descriptor, events: .writable)]
                    do throws(Errno) { _ = try PollDescriptor.poll(&entries, timeout: nil) } catch { return error }
                } catch {
                    return error
                }
            }
            return nil
        }
        if let failure { throw failure }
    }
}
