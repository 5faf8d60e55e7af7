/// When auto-fix may act: only after a check's failure threshold, each attempt bounded by a
/// timeout, exponential backoff with full jitter between failed attempts, a cap on attempts per
/// window, and a circuit breaker that opens after repeated failed fixes and lets one trial
/// through (half-open) after a cool-down.
public struct AutoFixPolicy: Sendable, Equatable {
    /// How long one fix may run before it counts as failed.
    public var attemptTimeout: Duration = .seconds(10)
    /// The backoff after the first failed fix; doubled after each further failure.
    public var backoffBase: Duration = .seconds(1)
    /// The longest backoff.
    public var backoffCap: Duration = .seconds(300)
    /// Most attempts (automatic and manual) per `window`.
    public var maxAttemptsPerWindow: Int = 5
    /// The window `maxAttemptsPerWindow` counts in.
    public var window: Duration = .seconds(600)
    /// Failed fixes in a row that open the circuit breaker.
    public var breakerThreshold: Int = 3
    /// How long the breaker stays open before one trial attempt.
    public var breakerCooldown: Duration = .seconds(300)

    /// The defaults above.
    public init() {}
}

/// The circuit breaker's state for one check's fix.
public enum BreakerState: Sendable, Equatable, Codable {
    /// Fixes may run.
    case closed
    /// Automatic fixes are refused until the cool-down ends (in a report: wall-clock time,
    /// seconds since the epoch).
    case open(untilSeconds: Double)
    /// One trial fix may run; its outcome closes or re-opens the breaker.
    case halfOpen
}

/// The auto-fix bookkeeping of one check: a pure state machine, driven by the registry's clock.
struct FixGovernor: Sendable {
    enum Decision: Equatable {
        case attempt
        case skip(String)
    }

    var consecutiveFailures = 0
    var nextAllowed: Duration?
    var attempts: [Duration] = []
    var breaker: BreakerState = .closed
    private var openUntil: Duration = .zero

    /// Whether an automatic fix may run at `now`; records the attempt if so.
    mutating func decide(at now: Duration, policy: AutoFixPolicy) -> Decision {
        if case .open = breaker {
            guard now >= openUntil else {
                return .skip("circuit breaker open for \(format(openUntil - now)) more after \(consecutiveFailures) failed fixes")
            }
            breaker = .halfOpen
        }
        if let nextAllowed, now < nextAllowed {
            return .skip("backing off for \(format(nextAllowed - now)) more after \(consecutiveFailures) failed fix(es)")
        }
        if let refusal = admitWithinWindow(at: now, policy: policy) { return .skip(refusal) }
        return .attempt
    }

    /// Whether a manual fix may run: it skips backoff and the breaker, not the window cap.
    mutating func decideManual(at now: Duration, policy: AutoFixPolicy) -> Decision {
        if let refusal = admitWithinWindow(at: now, policy: policy) { return .skip(refusal) }
        return .attempt
    }

    private mutating func admitWithinWindow(at now: Duration, policy: AutoFixPolicy) -> String? {
        attempts.removeAll { now - $0 >= policy.window }
        if attempts.count >= policy.maxAttemptsPerWindow {
            return "attempt limit reached: \(policy.maxAttemptsPerWindow) per \(format(policy.window))"
        }
        attempts.append(now)
        return nil
    }

    /// Forgets the attempt admitted at `time`, which had nothing to do (`FixNotApplicable`): it
    /// takes no place among those `maxAttemptsPerWindow` allows.
    mutating func giveBack(attemptAt time: Duration) {
        if let index = attempts.lastIndex(of: time) { attempts.remove(at: index) }
    }

    /// Records an attempt's outcome; `jitter` maps the full backoff to the one used. A fix that
    /// returned but left its check failing is recorded as failed: counted as a success, it
    /// would reset the backoff and the breaker, and auto-fix would run it every round.
    mutating func record(success: Bool, at now: Duration, policy: AutoFixPolicy, jitter: (Duration) -> Duration) {
        if success {
            healed()
            return
        }
        consecutiveFailures += 1
        var backoff = policy.backoffBase
        for _ in 1..<max(1, consecutiveFailures) where backoff < policy.backoffCap { backoff = backoff * 2 }
        nextAllowed = now + jitter(min(backoff, policy.backoffCap))
        if breaker == .halfOpen || consecutiveFailures >= policy.breakerThreshold {
            openUntil = now + policy.breakerCooldown
            breaker = .open(untilSeconds: seconds(openUntil))
        }
    }

    /// Forgets the failed fixes (not the attempts the window counts): a fix worked, or the
    /// check is healthy again by itself.
    mutating func healed() {
        consecutiveFailures = 0
        nextAllowed = nil
        breaker = .closed
    }

    /// The breaker as it stands at `now`: an open one past its cool-down lets the next fix
    /// through, so it reads as half-open even before a fix is tried. An open one's time is
    /// given in wall-clock seconds (`wallNow` is the wall-clock time at `now`), like the
    /// report's other times.
    func breaker(at now: Duration, wallNow: Double) -> BreakerState {
        guard case .open = breaker else { return breaker }
        return now >= openUntil ? .halfOpen : .open(untilSeconds: wallNow + seconds(openUntil - now))
    }
}

/// `1.5 s`, `300 s`, `250 ms`.
func format(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    if seconds == 0 { return "\(attoseconds / 1_000_000_000_000_000) ms" }
    let tenths = attoseconds / 100_000_000_000_000_000
    return tenths == 0 ? "\(seconds) s" : "\(seconds).\(tenths) s"
}

/// Full jitter: a uniformly random duration between zero and the full backoff (a backoff past
/// `Int64.max` nanoseconds, some 292 years, as if it were that).
public let fullJitter: @Sendable (Duration) -> Duration = { backoff in
    guard backoff > .zero else { return .zero }
    let (seconds, attoseconds) = min(backoff, .nanoseconds(Int64.max)).components
    return .nanoseconds(Int64.random(in: 0...(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)))
}
