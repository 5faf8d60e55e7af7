import Glibc

/// How a child process ended, decoded from a `waitpid(2)` status.
public enum TerminationStatus: Hashable, Sendable, CustomStringConvertible {
    /// The child called `exit` with this code (`WIFEXITED`/`WEXITSTATUS`).
    case exited(Int32)
    /// The child was terminated by this signal (`WIFSIGNALED`/`WTERMSIG`).
    case signaled(Signal)

    /// Decodes a raw wait status; `nil` for stopped or continued reports.
    public init?(waitStatus status: Int32) {
        let low = status & 0x7f
        if low == 0 {
            self = .exited((status >> 8) & 0xff)
        } else if low != 0x7f {
            self = .signaled(Signal(rawValue: low))
        } else {
            return nil
        }
    }

    /// Whether the child exited with code 0.
    public var isSuccess: Bool {
        self == .exited(0)
    }

    /// A textual form such as `exited(3)` or `signaled(SIGTERM (15))`.
    public var description: String {
        switch self {
        case .exited(let code): "exited(\(code))"
        case .signaled(let signal): "signaled(\(signal))"
        }
    }
}

/// Where a child's standard input comes from.
public enum SubprocessInput: Hashable, Sendable {
    /// Share the parent's standard input.
    case inherit
    /// Read from `/dev/null`.
    case discard
}

/// Where a child's standard output or error goes.
public enum SubprocessOutput: Hashable, Sendable {
    /// Share the parent's descriptor.
    case inherit
    /// Write to `/dev/null`.
    case discard
    /// Write into a pipe whose read end the parent gets.
    case capture
    /// Append to the file at this path, created 0644 if missing.
    case file(String)
}

/// The outcome of `Subprocess.run`: termination status and captured output.
public struct SubprocessResult: Hashable, Sendable {
    /// How the child ended.
    public var status: TerminationStatus
    /// Everything the child wrote to standard output.
    public var standardOutput: [UInt8]
    /// Everything the child wrote to standard error.
    public var standardError: [UInt8]

    /// Standard output decoded as UTF-8.
    public var standardOutputText: String {
        String(decoding: standardOutput, as: UTF8.self)
    }

    /// Standard error decoded as UTF-8.
    public var standardErrorText: String {
        String(decoding: standardError, as: UTF8.self)
    }
}
