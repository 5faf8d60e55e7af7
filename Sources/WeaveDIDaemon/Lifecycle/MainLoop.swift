import Synchronization
import WeaveDI
import WeaveDIPosix

/// The main thread's loop: waits for signals (through a signalfd, the signals having been
/// blocked before any thread existed) and for the async side to finish, and sends the
/// watchdog pings.
///
/// `WATCHDOG=1` is sent only while the async side makes progress: a heartbeat task on the
/// cooperative pool bumps a counter; a ping goes out only if it moved since the last one.
final class MainLoop {
    private let signals: SignalReader
    private let context: DaemonContext
    private let supervisor: Supervisor
    private let watchdog: WatchdogSettings?
    /// The configuration's `shutdownTimeout` when the shutdown began (the one in effect then,
    /// a reload having changed it perhaps), read once for the whole shutdown
    /// (`ConfigurationStore.beginShutdown()`).
    private var shutdownTimeout: Duration = .zero
    private let heartbeat = Heartbeat()
    /// The withheld pings, said at most 3 times a minute: with a short `WATCHDOG_USEC` a stall
    /// would otherwise write a line every few milliseconds.
    private let withheldPings = LogThrottle(interval: .seconds(60), burst: 3)
    /// The signals read only to be ignored (SIGUSR1, SIGUSR2), said at most 10 times a minute:
    /// a sender in a loop must not flood the log.
    private let ignoredSignals = LogThrottle(interval: .seconds(60), burst: 10)
    /// The stop signals that come while the daemon stops, said at most 10 times a minute.
    private let repeatedStops = LogThrottle(interval: .seconds(60), burst: 10)

    init(signals: consuming SignalReader, context: DaemonContext, supervisor: Supervisor, watchdog: WatchdogSettings?) {
        self.signals = signals
        self.context = context
        self.supervisor = supervisor
        self.watchdog = watchdog
    }

    /// Runs until the daemon finishes; returns the exit status.
    func run() -> Int32 {
        let supervisor = self.supervisor
        Task { await supervisor.start() }
        if let watchdog { heartbeat.start(every: watchdog.pingInterval / 2) }
        var shutdownDeadline: Duration?
        var lastBeat = heartbeat.count
        var nextPing = watchdog.map { now() + $0.pingInterval }
        while true {
            if let code = context.waker.exitCode {
                // A shutdown that finished after its deadline overran it, even if this loop
                // (on a busy machine) woke only afterwards.
                if let deadline = shutdownDeadline, let finished = context.waker.finishedAtNanoseconds,
                    Duration.nanoseconds(Int64(finished)) > deadline
                {
                    return overran()
                }
                // Lines of threads still going (a stuck one's) would come after `stopped`.
                context.log.close()
                return code
            }
            var timeout: Duration? = nil
            if let nextPing { timeout = max(.zero, nextPing - now()) }
            if let deadline = shutdownDeadline { timeout = min(timeout ?? .seconds(3600), max(.zero, deadline - now())) }
            // A state notification systemd was not told (its queue full) is sent again each second.
            let resending = context.notifier.hasPending
            if resending { timeout = min(timeout ?? Self.resendInterval, Self.resendInterval) }
            var descriptors = [
                PollDescriptor(signals.fileDescriptor, events: .readable),
                PollDescriptor(context.waker.readEnd, events: .readable),
            ]
            _ = try? PollDescriptor.poll(&descriptors, timeout: timeout)
            if descriptors[1].returnedEvents.contains(.readable) { context.waker.drain() }
            if descriptors[0].returnedEvents.contains(.readable) {
                while let received = try? signals.read() {
                    switch received.signal {
                    case .terminate, .interrupt:
                        if shutdownDeadline != nil {
                            // Asked again (timeout(1) and a kill of the process group send
                            // two): the shutdown under way is the answer, bounded by its
                            // deadline; it is not cut short, which would leave the socket
                            // file and the runs' last writes behind.
                            repeatedStops.notice(context.log, "daemon", "\(received.signal.name) from pid \(received.senderPID) "
                                + "while stopping: the shutdown goes on (within shutdownTimeout, \(shutdownTimeout)); "
                                + "SIGKILL ends the daemon at once, without its cleanup")
                            continue
                        }
                        shutdownTimeout = supervisor.store.beginShutdown()
                        shutdownDeadline = now() + shutdownTimeout
                        let reason = "\(received.signal.name) from pid \(received.senderPID)"
                        Task { await supervisor.shutdown(reason: reason) }
                    case .hangup:
                        let sender = "\(received.signal.name) from pid \(received.senderPID)"
                        Task { await supervisor.reloadForSignal(sender: sender) }
                    default:
                        ignoredSignals.notice(context.log, "daemon", "\(received.signal.name) from pid \(received.senderPID) ignored: "
                            + "weavedid stops on SIGTERM or SIGINT and reloads its configuration on SIGHUP, and uses no other signal")
                    }
                }
            }
            if resending { context.notifier.resendPending() }
            if let deadline = shutdownDeadline, now() >= deadline, context.waker.exitCode == nil {
                return overran()
            }
            if let interval = watchdog?.pingInterval, let due = nextPing, now() >= due {
                let beat = heartbeat.count
                if beat != lastBeat {
                    context.notifier.notify("WATCHDOG=1")
                    lastBeat = beat
                } else {
                    withheldPings.warning(context.log, "daemon", "no progress since the last watchdog ping; withholding WATCHDOG=1")
                }
                nextPing = due + interval
            }
        }
    }

    /// How often a state notification that could not be sent (`SystemdNotifier.hasPending`)
    /// is tried again.
    static let resendInterval: Duration = .seconds(1)

    /// Exit status 1, said in the log as its last line: the shutdown took longer than
    /// `shutdownTimeout`. The services are left as they are, but the control socket file
    /// goes: a file no process listens on would refuse every client until the next start.
    private func overran() -> Int32 {
        let removed = context.socketFiles.removeAll()
        let noted = removed.isEmpty ? "" : " (removed \(removed.map(JSONValue.quotedPathForMessage).joined(separator: ", ")))"
        context.log.last(.error, "daemon", "shutdown did not finish within \(shutdownTimeout); exiting\(noted)")
        return 1
    }

    private func now() -> Duration {
        .nanoseconds(Int64(SystemClock.monotonicNanoseconds()))
    }
}

/// A counter bumped by a task on the cooperative pool: proof that async work still runs.
final class Heartbeat: Sendable {
    private let beats = Atomic<UInt64>(0)

    var count: UInt64 { beats.load(ordering: .relaxed) }

    func start(every interval: Duration) {
        Task.detached { [self] in
            while !Task.isCancelled {
                beats.add(1, ordering: .relaxed)
                try? await Task.sleep(for: interval)
            }
        }
    }
}
