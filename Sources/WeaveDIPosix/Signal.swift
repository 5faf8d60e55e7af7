import Glibc

/// A POSIX signal number with Swift names for the signals a daemon deals with.
public struct Signal: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The raw signal number.
    public let rawValue: Int32

    /// Wraps a raw signal number.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// Hangup, conventionally "reload configuration" for daemons (`SIGHUP`).
    public static var hangup: Signal { Signal(rawValue: SIGHUP) }
    /// Interrupt from the terminal (`SIGINT`).
    public static var interrupt: Signal { Signal(rawValue: SIGINT) }
    /// Quit from the terminal (`SIGQUIT`).
    public static var quit: Signal { Signal(rawValue: SIGQUIT) }
    /// Abort (`SIGABRT`).
    public static var abort: Signal { Signal(rawValue: SIGABRT) }
    /// Kill; cannot be caught, blocked or ignored (`SIGKILL`).
    public static var kill: Signal { Signal(rawValue: SIGKILL) }
    /// User-defined signal 1 (`SIGUSR1`).
    public static var user1: Signal { Signal(rawValue: SIGUSR1) }
    /// User-defined signal 2 (`SIGUSR2`).
    public static var user2: Signal { Signal(rawValue: SIGUSR2) }
    /// Write to a pipe or socket with no reader (`SIGPIPE`).
    public static var pipe: Signal { Signal(rawValue: SIGPIPE) }
    /// Timer expired (`SIGALRM`).
    public static var alarm: Signal { Signal(rawValue: SIGALRM) }
    /// Polite termination request, sent by systemd on stop (`SIGTERM`).
    public static var terminate: Signal { Signal(rawValue: SIGTERM) }
    /// A child process stopped or exited (`SIGCHLD`).
    public static var child: Signal { Signal(rawValue: SIGCHLD) }
    /// Continue if stopped (`SIGCONT`).
    public static var `continue`: Signal { Signal(rawValue: SIGCONT) }
    /// Stop; cannot be caught or ignored (`SIGSTOP`).
    public static var stop: Signal { Signal(rawValue: SIGSTOP) }
    /// Window size change (`SIGWINCH`).
    public static var windowChange: Signal { Signal(rawValue: SIGWINCH) }

    /// The symbolic name such as `SIGTERM`, or `SIG<number>` when unknown.
    public var name: String {
        switch rawValue {
        case SIGHUP: "SIGHUP"
        case SIGINT: "SIGINT"
        case SIGQUIT: "SIGQUIT"
        case SIGILL: "SIGILL"
        case SIGTRAP: "SIGTRAP"
        case SIGABRT: "SIGABRT"
        case SIGBUS: "SIGBUS"
        case SIGFPE: "SIGFPE"
        case SIGKILL: "SIGKILL"
        case SIGUSR1: "SIGUSR1"
        case SIGSEGV: "SIGSEGV"
        case SIGUSR2: "SIGUSR2"
        case SIGPIPE: "SIGPIPE"
        case SIGALRM: "SIGALRM"
        case SIGTERM: "SIGTERM"
        case SIGCHLD: "SIGCHLD"
        case SIGCONT: "SIGCONT"
        case SIGSTOP: "SIGSTOP"
        case SIGTSTP: "SIGTSTP"
        case SIGWINCH: "SIGWINCH"
        default: "SIG\(rawValue)"
        }
    }

    /// The name and number, such as `SIGTERM (15)`.
    public var description: String {
        "\(name) (\(rawValue))"
    }

    /// Sends this signal to process `pid` (`kill(2)`); `pid` 0 means the caller's process group.
    public func send(to pid: Int32) throws(Errno) {
        try nothingOrErrno { Glibc.kill(pid, rawValue) }
    }

    /// Sends this signal to the calling thread only (`pthread_kill(pthread_self())`).
    public func sendToCurrentThread() throws(Errno) {
        try checkReturnedErrno(pthread_kill(pthread_self(), rawValue))
    }

    /// Sets the process-wide disposition to ignore the signal (`sigaction` with `SIG_IGN`).
    public func ignore() throws(Errno) {
        try setDisposition(SIG_IGN)
    }

    /// Restores the process-wide default disposition (`sigaction` with `SIG_DFL`).
    public func restoreDefaultAction() throws(Errno) {
        try setDisposition(SIG_DFL)
    }

    /// Ignores `SIGPIPE` process-wide, so writes to closed sockets fail with `EPIPE` instead.
    public static func ignoreBrokenPipe() throws(Errno) {
        try Signal.pipe.ignore()
    }

    private func setDisposition(_ handler: (@convention(c) (Int32) -> Void)?) throws(Errno) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        try nothingOrErrno { sigaction(rawValue, &action, nil) }
    }
}
