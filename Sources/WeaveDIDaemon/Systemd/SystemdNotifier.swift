import WeaveDIPosix

/// Talks to systemd over `NOTIFY_SOCKET` by hand (`sd_notify(3)`): a path, or an abstract name
/// written `@name` (sent with the exact address length). Without `NOTIFY_SOCKET` it sends
/// nothing at all.
public final class SystemdNotifier: Sendable {
    /// Where notifications go; nil when `NOTIFY_SOCKET` is unset or empty.
    public let address: UnixSocketAddress?
    /// Why `NOTIFY_SOCKET` could not be used, if it was set but invalid.
    public let problem: String?
    /// The datagram socket every notification is sent from, made once at the start: a daemon
    /// out of descriptors still tells systemd it is alive (`WATCHDOG=1`) and what is wrong.
    /// Nil without an address, or if it could not be made (each notification then makes its own).
    private let socket: FileDescriptor?

    /// Reads `NOTIFY_SOCKET` from `environment`.
    public init(environment: [String: String]) {
        guard let value = environment["NOTIFY_SOCKET"], !value.isEmpty else {
            address = nil
            problem = nil
            socket = nil
            return
        }
        do {
            address = try UnixSocketAddress(value)
            problem = nil
            socket = try? UnixSocket.make(.datagram).release()
        } catch {
            address = nil
            problem = "NOTIFY_SOCKET=\(value) is not usable: \(error)"
            socket = nil
        }
    }

    deinit { try? socket?.close() }

    /// Whether notifications are sent at all.
    public var isEnabled: Bool { address != nil }

    /// Sends `fields` (`READY=1`, `STATUS=…`) as one datagram; returns whether it was sent.
    @discardableResult
    public func notify(_ fields: String...) -> Bool {
        notify(fields)
    }

    /// Sends `fields` as one datagram, newline-separated; returns whether it was sent.
    @discardableResult
    public func notify(_ fields: [String]) -> Bool {
        guard let address else { return false }
        let message = fields.map { $0.replacingNewlines() }.joined(separator: "\n")
        if let socket { return (try? socket.send(Array(message.utf8), to: address)) != nil }
        return (try? UnixSocket.sendDatagram(Array(message.utf8), to: address)) != nil
    }

    /// `STATUS=…`: one line saying what the daemon is doing.
    @discardableResult
    public func status(_ text: String) -> Bool { notify("STATUS=\(text)") }
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

    /// Nil when the watchdog is off for this process.
    public init?(environment: [String: String], pid: Int32) {
        guard Self.isForThisProcess(environment, pid: pid), let raw = environment["WATCHDOG_USEC"], let usec = UInt64(raw), usec > 0 else {
            return nil
        }
        timeout = .microseconds(Int64(clamping: usec))
    }

    private static func isForThisProcess(_ environment: [String: String], pid: Int32) -> Bool {
        guard let owner = environment["WATCHDOG_PID"], !owner.isEmpty else { return true }
        return Int32(owner) == pid
    }

    /// What is wrong with `WATCHDOG_USEC` for this process, for a warning: a value that is no
    /// number of microseconds (the watchdog stays off), zero (off), or one shorter than twice
    /// `minimumPingInterval` (pinged at that interval, too seldom for systemd). Nil when the
    /// value is fine, unset or meant for another process.
    public static func problem(environment: [String: String], pid: Int32) -> String? {
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
