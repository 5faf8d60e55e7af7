import WeaveDI
import WeaveDIPosix

/// The control listener's pause after a failed `accept(2)`.
///
/// When the process is out of descriptors (`EMFILE`, `ENFILE`) or memory, accept fails but the
/// connection stays in the listen queue, so poll reports the listener readable again at once:
/// polled on, the I/O thread would spin at full speed for as long as the shortage lasts.
/// Instead, as nginx and HAProxy do, the listener is left out of poll for `retryDelay` after
/// each failure. Clients wait in the listen queue and are accepted once a retry succeeds;
/// connections already open are served as usual meanwhile.
///
/// A failure is logged as a warning that names the descriptor limit, at most once every
/// `warningInterval` (the failures in between are counted in the next one), and the first
/// accept after a warning as a notice: a shortage that comes and goes with every connection
/// closed costs two lines a minute, not two per connection.
struct AcceptPause {
    /// How long the listener is left alone after a failed accept.
    static let retryDelay: Duration = .milliseconds(100)
    /// The least time between two warnings.
    static let warningInterval: Duration = .seconds(60)

    /// Until when the listener is left alone after the last failure.
    private var resumesAt: Duration?
    /// When the last warning was logged, and whether an accept has worked since.
    private var lastWarning: Duration?
    private var warningAnswered = true
    /// Failed accepts not logged yet, and failed accepts since the last warning.
    private var unlogged = 0
    private var failuresSinceWarning = 0

    /// Whether the listener is to be left out of poll at `now`.
    func isPaused(at now: Duration) -> Bool {
        pausedUntil(now) != nil
    }

    /// When the pause in effect at `now` ends; nil when none is.
    func pausedUntil(_ now: Duration) -> Duration? {
        guard let resumesAt, now < resumesAt else { return nil }
        return resumesAt
    }

    /// Records a failed accept at `now`: pauses the listener, and logs it unless a warning was
    /// logged within `warningInterval`. `connections` is how many clients are connected.
    mutating func failed(_ error: Errno, at now: Duration, connections: Int, log: DaemonLog) {
        resumesAt = now + Self.retryDelay
        failuresSinceWarning += 1
        if let lastWarning, now - lastWarning < Self.warningInterval {
            unlogged += 1
            return
        }
        let earlier = unlogged == 0 ? "" : " (and \(unlogged) times since the last warning)"
        log.warning("control", "cannot accept a connection\(earlier): \(DescriptorLimit.explain(error)); \(connections) clients "
            + "are connected; new clients wait in the listen queue while accept is retried every \(Int(seconds(Self.retryDelay) * 1000)) ms")
        lastWarning = now
        warningAnswered = false
        unlogged = 0
        failuresSinceWarning = 1
    }

    /// Records an accepted connection: ends the pause, and logs the first one after a warning.
    mutating func succeeded(at now: Duration, log: DaemonLog) {
        resumesAt = nil
        guard !warningAnswered, let lastWarning else { return }
        log.notice("control", "accepting connections again, \(String(format2: seconds(now - lastWarning))) s after the warning (\(failuresSinceWarning) failed attempts)")
        warningAnswered = true
        failuresSinceWarning = 0
    }
}
