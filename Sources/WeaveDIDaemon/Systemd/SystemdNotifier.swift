import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Talks to systemd over `NOTIFY_SOCKET` by hand (`sd_notify(3)`): a path, or an abstract name
/// written `@name` (sent with the exact address length). Without `NOTIFY_SOCKET` it sends
/// nothing at all.
///
/// Sends never wait: a notify socket whose queue is full (nobody reads it) would otherwise hold
/// the start before `READY=1`, a reload, a stop, and the main loop's watchdog pings, and with
/// them the handling of signals. A notification that cannot go out at once is dropped and said
/// (at most 6 lines a minute). One that changes the state systemd sees (`READY=1`,
/// `RELOADING=1`, `STOPPING=1`) is kept and sent again ahead of the next notification, or by
/// `resendPending()`, until it goes out or a newer one of its kind replaces it: systemd that
/// reads again learns where the daemon is.
public final class SystemdNotifier: Sendable {
    /// Where notifications go; nil when `NOTIFY_SOCKET` is unset or empty.
    public let address: UnixSocketAddress?
    /// Why `NOTIFY_SOCKET` could not be used, if it was set but invalid.
    public let problem: String?
    /// The non-blocking datagram socket every notification is sent from, made once at the
    /// start: a daemon out of descriptors still tells systemd it is alive (`WATCHDOG=1`) and
    /// what is wrong. Nil without an address, or if it could not be made (each notification
    /// then makes its own).
    private let socket: FileDescriptor?
    /// Where a dropped notification is said; nil says nothing.
    private let log: DaemonLog?
    /// Dropped notifications are said at most 3 times a minute: the state ones (kept, sent
    /// again) apart from the others (a watchdog ping every few milliseconds, perhaps).
    private let droppedStates = LogThrottle(interval: .seconds(60), burst: 3)
    private let droppedOthers = LogThrottle(interval: .seconds(60), burst: 3)
    /// The last state notification (`READY=1`, …) that could not be sent, until it is. Every
    /// send happens under this lock (sends never wait), so that notifications go out in the
    /// order the daemon's state changed: a kept `READY=1` sent again cannot pass a newer
    /// `RELOADING=1` or `STOPPING=1` on its way.
    private let pending = Locked<[String]?>(nil)

    /// The fields that change the state systemd sees: a notification carrying one is kept
    /// until sent.
    static let stateFields: Set<String> = ["READY=1", "RELOADING=1", "STOPPING=1"]

    /// Reads `NOTIFY_SOCKET` from `environment`; a notification dropped is said in `log`.
    public init(environment: [String: String], log: DaemonLog? = nil) {
        self.log = log
        guard let value = environment["NOTIFY_SOCKET"], !value.isEmpty else {
            address = nil
            problem = nil
            socket = nil
            return
        }
        switch Self.address(value) {
        case let .success(usable):
            address = usable
            problem = nil
            socket = try? UnixSocket.make(.datagram, nonBlocking: true).release()
        case let .failure(why):
            address = nil
            problem = "\(SystemdVariable.quoted("NOTIFY_SOCKET", value)) is not usable: \(why); no notifications are sent "
                + "to systemd (NOTIFY_SOCKET takes an absolute path or an abstract name, @name)"
            socket = nil
        }
    }

    /// `value` read as `sd_notify(3)` reads `NOTIFY_SOCKET`: an absolute path or an abstract
    /// name (`@name`), of 2 characters at least; or why it cannot be sent to, never naming the
    /// value (the caller quotes it, shortened). An address that can never work (a relative
    /// path, an `AF_VSOCK` one) is refused here, once, rather than tried at every notification
    /// and, for `READY=1` and the other state notifications kept until sent, every second.
    static func address(_ value: String) -> Result<UnixSocketAddress, NotifySocketProblem> {
        if ["vsock:", "vsock-stream:", "vsock-dgram:", "vsock-seqpacket:"].contains(where: value.hasPrefix) {
            return .failure(NotifySocketProblem(description: "it is an AF_VSOCK address, and the daemon notifies over Unix sockets only"))
        }
        guard value.hasPrefix("/") || value.hasPrefix("@") else {
            return .failure(NotifySocketProblem(description: "it is a relative path"))
        }
        guard value.utf8.count >= 2 else {
            return .failure(NotifySocketProblem(description: value == "@" ? "the abstract name is empty" : "it is the root directory"))
        }
        do {
            return .success(try UnixSocketAddress(value))
        } catch {
            let why = switch error {
            case let .pathTooLong(_, count, maximum): "the path is \(count) bytes, longer than the \(maximum) bytes a Unix socket address holds"
            case let .abstractNameTooLong(_, count, maximum): "the name is \(count) bytes, longer than the \(maximum) bytes a Unix socket address holds"
            case .containsNul: "it contains a NUL byte"
            case .emptyPath: "it is empty"
            }
            return .failure(NotifySocketProblem(description: why))
        }
    }

    /// Why `NOTIFY_SOCKET` cannot be sent to.
    struct NotifySocketProblem: Error, CustomStringConvertible {
        var description: String
    }

    deinit { try? socket?.close() }

    /// Whether notifications are sent at all.
    public var isEnabled: Bool { address != nil }

    /// Whether a state notification that could not be sent waits to be sent again.
    public var hasPending: Bool { pending.withLock { $0 != nil } }

    /// Sends `fields` (`READY=1`, `STATUS=…`) as one datagram; returns whether it was sent.
    @discardableResult
    public func notify(_ fields: String...) -> Bool {
        notify(fields)
    }

    /// Sends `fields` as one datagram, newline-separated, without waiting; returns whether it
    /// was sent. A state notification still pending is sent first, unless `fields` carry a
    /// newer state, which replaces it.
    @discardableResult
    public func notify(_ fields: [String]) -> Bool {
        guard address != nil else { return false }
        let fields = Self.fitted(fields.map(Self.sendable))
        let isState = fields.contains { Self.stateFields.contains($0) }
        return pending.withLock { pending in
            if isState {
                pending = nil  // a newer state replaces the one kept
            } else if let earlier = pending, !send(earlier, keep: true, pending: &pending) {
                return send(fields, keep: false, pending: &pending)
            }
            return send(fields, keep: isState, pending: &pending)
        }
    }

    /// `field` as systemd takes it: on one line (a newline becomes a space), with no NUL byte,
    /// for which systemd ignores the whole datagram (`READY=1` with it), nor any other control
    /// character (escaped, `\u{0}`). A `STATUS=` may quote a configuration file, whose keys
    /// hold any character.
    static func sendable(_ field: String) -> String {
        field.replacingNewlines().escapingControlCharacters
    }

    /// The most bytes a notification takes: systemd ignores one of `PIPE_BUF` (4096) bytes or
    /// more, whole, `READY=1` with it.
    static let maximumMessageBytes = 4000

    /// `fields` cut to fit `maximumMessageBytes` once joined: the `STATUS=` text, which may
    /// quote paths of 4 KiB, is cut short, with `...`; the other fields are short and kept.
    static func fitted(_ fields: [String]) -> [String] {
        let total = fields.reduce(fields.count - 1) { $0 + $1.utf8.count }
        guard total > maximumMessageBytes, let index = fields.firstIndex(where: { $0.hasPrefix("STATUS=") }) else { return fields }
        let room = max(fields[index].utf8.count - (total - maximumMessageBytes) - 3, "STATUS=".utf8.count)
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in fields[index].unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > room { break }
            kept.append(scalar)
        }
        var fitted = fields
        fitted[index] = String(kept) + "..."
        return fitted
    }

    /// Sends again the state notification that could not be sent, if any; returns whether
    /// none is left waiting.
    @discardableResult
    public func resendPending() -> Bool {
        pending.withLock { pending in
            guard let earlier = pending else { return true }
            return send(earlier, keep: true, pending: &pending)
        }
    }

    /// `STATUS=…`: one line saying what the daemon is doing.
    @discardableResult
    public func status(_ text: String) -> Bool { notify("STATUS=\(text)") }

    /// Sends `fields` at once, `pending` held; when it cannot, says so and, if `keep`, keeps
    /// them to be sent again.
    private func send(_ fields: [String], keep: Bool, pending: inout [String]?) -> Bool {
        guard let address else { return false }
        let message = Array(fields.joined(separator: "\n").utf8)
        let result: Result<Int, Errno>
        if let socket {
            result = Result { () throws(Errno) in try socket.send(message, to: address) }
        } else {
            result = Result { () throws(Errno) in
                let own = try UnixSocket.make(.datagram, nonBlocking: true).release()
                defer { try? own.close() }
                return try own.send(message, to: address)
            }
        }
        switch result {
        case .success:
            if pending == fields { pending = nil }
            return true
        case let .failure(error):
            if keep { pending = fields }
            if let log {
                let why = error == .wouldBlock
                    ? "its queue is full (systemd does not read it)" : "\(error)"
                let what = fields.filter { !$0.hasPrefix("STATUS=") }.first ?? fields.first ?? ""
                let after = keep ? "sent again with the next notification" : "dropped; the daemon goes on without waiting"
                (keep ? droppedStates : droppedOthers).warning(log, "daemon", "cannot notify systemd (\(what.escapingControlCharacters)) on \(SystemdVariable.quoted("NOTIFY_SOCKET", address.description)): \(why); \(after)")
            }
            return false
        }
    }
}

/// How often to send `WATCHDOG=1`: every half of `WATCHDOG_USEC`, when `WATCHDOG_PID` is unset
/// or names this process, but never more often than every `minimumPingInterval`.
public struct WatchdogSettings: Sendable, Equatable {
    /// The interval systemd expects pings within.
    public var timeout: Duration

    /// The shortest interval between pings: 10 ms. A `WATCHDOG_USEC` of a few microseconds
    /// (written where seconds were meant, say) cannot be met by any ping, and pinging every
    /// half of it would keep the daemon busy doing nothing else.
    public static let minimumPingInterval: Duration = .milliseconds(10)

    /// How often to ping: half the timeout, at least `minimumPingInterval`.
    public var pingInterval: Duration { max(timeout / 2, Self.minimumPingInterval) }

    /// Nil when the watchdog is off for this process. Numbers are read strictly, as `problem`
    /// reads them (decimal digits, no sign): a value it says turns the watchdog off does.
    public init?(environment: [String: String], pid: Int32) {
        guard Self.isForThisProcess(environment, pid: pid), let raw = environment["WATCHDOG_USEC"],
            SystemdVariable.isDecimal(raw), let usec = UInt64(raw), usec > 0
        else {
            return nil
        }
        timeout = .microseconds(Int64(clamping: usec))
    }

    private static func isForThisProcess(_ environment: [String: String], pid: Int32) -> Bool {
        guard let owner = environment["WATCHDOG_PID"], !owner.isEmpty else { return true }
        return SystemdVariable.isDecimal(owner) && Int32(owner) == pid
    }

    /// What is wrong with `WATCHDOG_USEC` for this process, for a warning: a value that is no
    /// number of microseconds (the watchdog stays off), zero (off), or one shorter than twice
    /// `minimumPingInterval` (pinged at that interval, too seldom for systemd); or, with
    /// `WATCHDOG_USEC` set, a `WATCHDOG_PID` that is no process id (off, as
    /// `sd_watchdog_enabled(3)` fails then). Nil when the value is fine, unset or meant for
    /// another process.
    public static func problem(environment: [String: String], pid: Int32) -> String? {
        if let owner = environment["WATCHDOG_PID"], !owner.isEmpty, let raw = environment["WATCHDOG_USEC"], !raw.isEmpty,
            !SystemdVariable.isDecimal(owner) || (Int32(owner) ?? 0) <= 0
        {
            return "\(SystemdVariable.quoted("WATCHDOG_PID", owner)) is not a process id; it names the process "
                + "WATCHDOG_USEC is for: no watchdog pings"
        }
        guard isForThisProcess(environment, pid: pid), let raw = environment["WATCHDOG_USEC"], !raw.isEmpty else { return nil }
        guard SystemdVariable.isDecimal(raw), let usec = UInt64(raw) else {
            return "\(SystemdVariable.quoted("WATCHDOG_USEC", raw)) is not a number of microseconds; no watchdog pings"
        }
        if usec == 0 { return "WATCHDOG_USEC=0 asks for no watchdog; no watchdog pings" }
        guard let settings = WatchdogSettings(environment: environment, pid: pid), settings.timeout / 2 < minimumPingInterval else {
            return nil
        }
        return "WATCHDOG_USEC=\(usec) (\(usec) µs) is shorter than the daemon can ping within: pinging every "
            + "\(minimumPingInterval) instead, and systemd may stop the daemon for pings it misses; WATCHDOG_USEC "
            + "counts microseconds (WatchdogSec= in the unit sets it: a few seconds at least)"
    }
}

extension String {
    func replacingNewlines() -> String {
        String(unicodeScalars.map { $0 == "\n" ? " " : Character($0) })
    }
}
