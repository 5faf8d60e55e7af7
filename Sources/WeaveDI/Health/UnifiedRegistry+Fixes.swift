extension UnifiedRegistry {
    /// Runs the fix of the check named `name` now, by hand: past its backoff and circuit
    /// breaker, but within the attempt limit and the attempt timeout. Re-runs the check after a
    /// fix that returned (a fix that leaves it failing counts as failed for the backoff and
    /// the breaker) or threw (only to look: the report then says how things are now), as an
    /// automatic fix does. While a fix of the check runs (automatic, or another by hand), it
    /// waits for that one to end (within its attempt timeout and the check's run after it):
    /// if the check passed after it, the fix is not run again, and the answer, `succeeded`,
    /// says which fix healed it (it is no attempt of its own: not recorded in `fixHistory()`,
    /// which holds the one that ran); nor if that fix started a remedy that goes on (the
    /// answer is `inProgress`, saying so); if neither, it runs now. In all it may so take
    /// about twice the attempt timeout, and the check's runs after each. A caller that goes
    /// away (its task cancelled) while it waits is answered at once, `refused`, and no fix is
    /// run for it (nor recorded: nothing ran); a fix by hand that has started runs to its end
    /// whatever its caller does. Refused while a fix that timed out has not returned yet, and
    /// when asked inside a fix of the check (by it, or by a fix it asked for): it would wait
    /// for itself; and when asked inside a fix that the check's fix running waits for (two
    /// checks whose fixes ask for each other, fixed in two tasks at once): the two would wait
    /// for each other until they timed out (which fixes a call is asked inside, it learns from
    /// its task, `FixRecord.attempt`, which the tasks a fix starts inherit: one asked from a task
    /// a fix starts and does not wait for is taken as waited for, and may be refused; one asked
    /// inside `FixRecord.outsideAnyFix` is inside none, and a cycle through it waits for the
    /// timeouts). A name no check has, or a check without a fix, is refused too, but not
    /// recorded in `fixHistory()`: asking for a fix that does not exist is no attempt.
    @discardableResult
    public func fix(_ name: String) async -> FixRecord {
        await attempt(name, trigger: .manual)
    }

    /// Runs the fix of every fixable check that is not healthy, by hand, one after another;
    /// once its caller went away (the task cancelled: weavedid's `Fix` call at
    /// `control.callTimeout`), the fixes not started yet are not run.
    @discardableResult
    public func fixAll() async -> [FixRecord] {
        let names = state.withLock { state in
            state.order.filter { name in
                guard let entry = state.checks[name] else { return false }
                return entry.check.fix != nil && entry.status != nil && entry.status != .healthy
            }
        }
        var records: [FixRecord] = []
        for name in names {
            // Its caller went away (weavedid's `Fix` call at `control.callTimeout`): no fix more.
            if Task.isCancelled { break }
            records.append(await fix(name))
        }
        return records
    }

    /// Runs the check's fix if it is past its failure threshold and the policy allows, unless
    /// auto-fix was turned off or the round cancelled (`stop()`) meanwhile. The threshold counts
    /// only the failures rounds that may fix saw (`fixingRoundFailures`): checks run only to
    /// look do not bring a fix nearer.
    func autoFixIfDue(_ name: String) async {
        let now = clock.now
        let due: Bool = state.withLock { state in
            guard state.autoFix, !Task.isCancelled, var entry = state.checks[name], entry.check.fix != nil, let status = entry.status else {
                return false
            }
            guard status != .healthy && entry.fixingRoundFailures >= entry.check.failureThreshold else { return false }
            // The remedy the last fix started still goes on (the round's run of the check asked
            // just now): running the fix again would only find it going.
            if let remedy = entry.remedy {
                entry.heldBack = "the remedy its last fix started \(format(now - remedy.since)) ago is still going "
                    + "(\(remedy.message)): auto-fix waits for it to end"
                state.checks[name] = entry
                return false
            }
            return true
        }
        if due { _ = await attempt(name, trigger: .automatic) }
    }

    /// What a fix asked for does, as decided under the lock.
    enum FixPlan: Sendable {
        /// No such fix: told, not recorded (asking for a fix that does not exist is no attempt).
        case noFix(String)
        case refuse(String)
        case hold(String)
        case run(HealthCheck, AutoFixPolicy, UInt64)
        /// A fix by hand waited for the fix of its check that was running as it was asked
        /// (`State.fixWaiters`), which ended so: `healed` when its check passed after it.
        case ended(FixRecord, healed: Bool)
        /// The caller of a fix by hand went away (its task was cancelled) while it waited for a
        /// fix of its check to end, or as it would have: no fix is run for it.
        case callerGone
    }

    private func attempt(_ name: String, trigger: FixRecord.Trigger) async -> FixRecord {
        let asked = clock.now
        let askedWall = clock.wallTime
        // The name quoted as every message quotes a value from outside: `fix(name)`'s caller
        // (weavedictl fix NAME) may give any text.
        let quoted = JSONValue.quotedForMessage(name)
        // This call's place among the fixes waiting (`FixWaiter`), for its caller to take out;
        // only a fix by hand waits (an automatic one takes no number, nor the lock for it).
        let ticket: UInt64 = trigger == .automatic ? 0 : state.withLock { state in
            state.serial &+= 1
            return state.serial
        }
        // Asked by the fix of this check that runs (in its task, or one it started), directly or
        // through another check's fix: it would wait for itself.
        let inside = FixRecord.attempt?.checks.contains(name) == true
        // The fixes it is asked inside, which do not go on while it waits (`waitCycle`).
        let insideFixes = FixRecord.attempt?.fixIDs ?? []
        // Whether it waited for a fix of the check that ended without healing it.
        var waited = false
        while true {
            let now = clock.now
            let wall = clock.wallTime
            let plan: FixPlan = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<FixPlan, Never>) in
                    let plan: FixPlan? = state.withLock { state in
                        decide(
                            name, quoted: quoted, trigger: trigger, at: now, inside: inside, waited: waited,
                            waiter: FixWaiter(ticket: ticket, continuation: continuation, inside: insideFixes), in: &state)
                    }
                    if let plan { continuation.resume(returning: plan) }
                }
            } onCancel: {
                // Its caller went away (weavedid's `Fix` call at `control.callTimeout`): it waits
                // no longer. Taken out under the lock by its ticket, as the fix that ends takes
                // its waiters out: one of the two resumes it, never both. Only a fix by hand waits:
                // an automatic one (a round's task, cancelled by `stop()`) takes no lock here.
                guard trigger == .manual else { return }
                let waiter: FixWaiter? = state.withLock { state in
                    for (id, waiters) in state.fixWaiters {
                        guard let index = waiters.firstIndex(where: { $0.ticket == ticket }) else { continue }
                        var rest = waiters
                        let waiter = rest.remove(at: index)
                        state.fixWaiters[id] = rest.isEmpty ? nil : rest
                        return waiter
                    }
                    return nil
                }
                waiter?.continuation.resume(returning: .callerGone)
            }
            switch plan {
            case let .noFix(reason), let .hold(reason):
                return FixRecord(time: wall, check: name, trigger: trigger, outcome: .refused, message: reason, error: nil, duration: 0)
            case let .refuse(reason):
                let record = FixRecord(time: wall, check: name, trigger: trigger, outcome: .refused, message: reason, error: nil, duration: 0)
                remember(record)
                return record
            case let .run(check, policy, id):
                return await run(check, policy: policy, trigger: trigger, id: id, startedAt: now, wall: wall)
            case let .ended(record, healed):
                // Healed, or its remedy goes on (run again, the fix would only find it going):
                // the fix is not run again. The answer is no attempt of its own (the history
                // holds the one that ran, once): neither recorded, logged nor told.
                let by = record.trigger == .automatic ? "the automatic fix" : "the fix by hand"
                if healed || record.outcome == .inProgress {
                    return FixRecord(
                        time: askedWall, check: name, trigger: trigger, outcome: healed ? .succeeded : .inProgress,
                        message: "\(by) running as this one was asked "
                            + (healed ? "healed the check" : "started a remedy that goes on")
                            + "; this one was not run: \(record.message)",
                        error: nil, duration: seconds(clock.now - asked))
                }
                // Not: the fix asked for runs now, as asked (or is refused as any).
                waited = true
                continue
            case .callerGone:
                // No attempt either: nothing ran, and the caller is gone (weavedid told it
                // `CallTimedOut`). Neither recorded, logged nor told, as a shared answer.
                return FixRecord(
                    time: askedWall, check: name, trigger: trigger, outcome: .refused,
                    message: "the fix of \(quoted) was not run: its caller went away while it waited for a fix of \(quoted) to end",
                    error: nil, duration: 0)
            }
        }
    }

    /// What the fix of `name` asked for does now, decided under the lock; nil when `waiter` was
    /// added to the waiters of the fix of the check running (its end gives the plan).
    private func decide(
        _ name: String, quoted: String, trigger: FixRecord.Trigger, at now: Duration, inside: Bool, waited: Bool, waiter: FixWaiter,
        in state: inout State
    ) -> FixPlan? {
        guard var entry = state.checks[name] else {
            return .noFix("no health check named \(quoted); checkNames lists the checks registered")
        }
        guard let _ = entry.check.fix else { return .noFix("\(quoted) offers no fix") }
        // Refused at once, and recorded (as a refusal by the window cap is): a fix by hand asked
        // inside a fix of its check would wait for that fix, its own caller, until it timed out.
        if trigger == .manual, inside {
            return .refuse("asked for inside a fix of \(quoted): a fix cannot wait for itself to end")
        }
        // Its caller gone (its task cancelled) while it waited, or as it would wait: no fix is
        // run for it, nor waited for. (Checked under the lock: a caller that goes away after
        // this finds it among the waiters.)
        if trigger == .manual, Task.isCancelled, waited || entry.fixInFlight?.abandoned == false {
            return .callerGone
        }
        if let running = entry.fixInFlight {
            // A fix by hand waits for the one running to end (the loop's rounds may run an
            // automatic one at any time: a refusal would be only timing), which its timeout
            // bounds; not for one past its timeout, which may never return.
            if trigger == .manual, !running.abandoned {
                // Unless the fix running waits, through the fixes it asked for, for a fix this one
                // is asked inside (two checks whose fixes ask for each other, in two tasks): the
                // two would wait for each other until they timed out.
                if let mine = Self.waitCycle(from: running.id, to: waiter.inside, in: state) {
                    let other = state.checks.first { $0.value.fixInFlight?.id == mine }.map { JSONValue.quotedForMessage($0.key) }
                    return .refuse("asked for inside the fix of \(other ?? "another check"), while the fix of \(quoted) running "
                        + "waits for that fix to end: the two would wait for each other")
                }
                state.fixWaiters[running.id, default: []].append(waiter)
                return nil
            }
            let reason = running.abandoned
                ? "the fix of \(quoted) that timed out is still running \(format(now - running.started)) after it started: none starts until it returns"
                : "a fix of \(quoted) is already running"
            guard trigger == .automatic else { return .refuse(reason) }
            entry.heldBack = reason
            state.checks[name] = entry
            return .hold(reason)
        }
        let decision = trigger == .automatic
            ? entry.governor.decide(at: now, policy: state.policy)
            : entry.governor.decideManual(at: now, policy: state.policy)
        if case let .skip(reason) = decision {
            entry.heldBack = reason
            state.checks[name] = entry
            return trigger == .automatic ? .hold(reason) : .refuse(reason)
        }
        state.serial &+= 1
        entry.fixInFlight = UnifiedRegistry.FixInFlight(id: state.serial, started: now)
        entry.heldBack = nil
        state.checks[name] = entry
        return .run(entry.check, state.policy, state.serial)
    }

    /// The fix among `inside` (those a fix by hand is asked inside) that the fix `running`
    /// waits for: directly, a fix by hand asked inside `running` waiting for it, or through
    /// others (a fix waits for the fixes that fixes by hand asked inside it wait for); nil when
    /// none, and waiting for `running` makes no cycle.
    static func waitCycle(from running: UInt64, to inside: Set<UInt64>, in state: State) -> UInt64? {
        guard !inside.isEmpty else { return nil }
        var seen: Set<UInt64> = [running]
        var next = [running]
        while let id = next.popLast() {
            if inside.contains(id) { return id }
            for (awaited, waiters) in state.fixWaiters where !seen.contains(awaited) && waiters.contains(where: { $0.inside.contains(id) }) {
                seen.insert(awaited)
                next.append(awaited)
            }
        }
        return nil
    }

    /// Ends the fix `id` for the fixes by hand that waited for it (`FixPlan.ended`); to be
    /// resumed outside the lock.
    private static func waiters(of id: UInt64, in state: inout State) -> [CheckedContinuation<FixPlan, Never>] {
        state.fixWaiters.removeValue(forKey: id)?.map(\.continuation) ?? []
    }

    private func run(
        _ check: HealthCheck, policy: AutoFixPolicy, trigger: FixRecord.Trigger, id: UInt64, startedAt: Duration, wall: Double
    ) async -> FixRecord {
        enum Outcome: Sendable {
            case done(String)
            case failed(String)
            case notApplicable(String)
        }
        let fix = check.fix!
        let context = FixAttemptContext(
            check: check.name, id: id, within: FixRecord.attempt, deadline: startedAt + policy.attemptTimeout, clock: clock)
        let outcome = await withTimeout(policy.attemptTimeout, clock: clock) { () -> Outcome in
            let outcome: Outcome = await FixRecord.$attempt.withValue(context) {
                await FixRecord.Trigger.$current.withValue(trigger) {
                    do { return .done(try await fix()) } catch let nothing as FixNotApplicable {
                        return .notApplicable(nothing.reason)
                    } catch { return .failed(String(describing: error)) }
                }
            }
            self.fixReturned(check.name, id: id)
            return outcome
        }
        // A remedy said to go on counts only for a fix that returned in time.
        let remedy = context.close()
        let end = clock.now
        // A fix that returned is judged by the check, run again at once (while no other fix of
        // it may start): one that leaves it failing counts as failed for the backoff and the
        // breaker, and says so.
        var stillFailing: String?
        switch outcome {
        case .done?:
            // Judged by the answer of a run that started after the fix returned, waited for
            // however long a run going then takes (`patient`): a look at the check that was
            // going must not make a fix that healed it time out.
            if let result = await runOne(check, fixingRound: false, patient: true).result, result.status != .healthy {
                stillFailing = result.message
            }
        case .failed?:
            // A fix that threw may have changed things, or half fixed them, before it did: the
            // check is run again too, only to look (it counts toward no threshold), so that the
            // report says how things are after the attempt, not how they were before it. So for
            // one asked for by hand, whose check last ran in some earlier round, and for an
            // automatic one, whose check ran in this round just before it.
            await runOne(check, fixingRound: false)
        case .notApplicable?, nil:
            break
        }
        let record: FixRecord
        // A fix whose remedy goes on (a long run), the check failing until it ends, is in
        // progress: judged a failure, auto-fix would back off, open the breaker, and run it
        // again every round meanwhile, only to find the remedy going.
        let going = stillFailing != nil ? remedy : nil
        switch outcome {
        case let .done(message)? where going != nil:
            record = FixRecord(
                time: wall, check: check.name, trigger: trigger, outcome: .inProgress,
                message: message + "; the check still fails while it goes on: \(stillFailing ?? "")", error: nil,
                duration: seconds(end - startedAt))
        case let .done(message)?:
            // Judged by the check: one it leaves failing failed, whatever the fix said it did.
            let note = stillFailing.map { "; the check still fails after it: \($0)" } ?? ""
            record = FixRecord(
                time: wall, check: check.name, trigger: trigger, outcome: stillFailing == nil ? .succeeded : .failed,
                message: message + note, error: nil, duration: seconds(end - startedAt))
        case let .failed(error)?:
            record = FixRecord(time: wall, check: check.name, trigger: trigger, outcome: .failed, message: "fix failed", error: error, duration: seconds(end - startedAt))
        case let .notApplicable(reason)?:
            // Nothing done: the check is not run again, and nothing counts.
            return notApplicable(check.name, reason: reason, trigger: trigger, id: id, startedAt: startedAt, wall: wall, end: end)
        case nil:
            record = FixRecord(
                time: wall, check: check.name, trigger: trigger, outcome: .timedOut,
                message: "fix timed out after \(format(policy.attemptTimeout))",
                error: "timed out after \(format(policy.attemptTimeout))", duration: seconds(end - startedAt))
        }
        let (logging, waiters): (Bool, [CheckedContinuation<FixPlan, Never>]) = state.withLock { state in
            if var entry = state.checks[check.name] {
                if var running = entry.fixInFlight, running.id == id {
                    // A fix abandoned at its timeout still runs: no other starts until it returns.
                    running.abandoned = outcome == nil && !running.returned
                    entry.fixInFlight = running.abandoned ? running : nil
                }
                entry.fixesTried += 1
                entry.lastFix = record
                if let going {
                    entry.remedy = UnifiedRegistry.RemedyInProgress(id: id, isGoing: going, since: end, message: record.message)
                } else {
                    entry.remedy = nil
                    entry.governor.record(
                        success: record.outcome == .succeeded && stillFailing == nil, at: end, policy: policy, jitter: jitter)
                }
                state.checks[check.name] = entry
            }
            return (state.healthLogging, Self.waiters(of: id, in: &state))
        }
        remember(record)
        if logging {
            WeaveDILog.log(
                record.outcome == .succeeded || record.outcome == .inProgress ? .health : .error, subsystem: "health",
                "fix of \(JSONValue.quotedForMessage(check.name)) (\(trigger.rawValue)) \(record.outcome.rawValue): "
                    + ControlCharacters.escaped(record.error ?? record.message))
        }
        let healed = record.outcome == .succeeded && stillFailing == nil
        tell(.fixed(record, healed: healed))
        for waiter in waiters { waiter.resume(returning: .ended(record, healed: healed)) }
        return record
    }

    /// Books a fix that had nothing to do (`FixNotApplicable`): neither a success nor a failure
    /// for the backoff and the breaker, and its place among the attempts the window allows given
    /// back. One asked for by hand is recorded, logged and told as any; an automatic one only
    /// says why in the check's `fixHeldBack`: it would otherwise log a line every round.
    private func notApplicable(
        _ name: String, reason: String, trigger: FixRecord.Trigger, id: UInt64, startedAt: Duration, wall: Double, end: Duration
    ) -> FixRecord {
        let record = FixRecord(
            time: wall, check: name, trigger: trigger, outcome: .notApplicable, message: reason, error: nil,
            duration: seconds(end - startedAt))
        let (logging, waiters): (Bool, [CheckedContinuation<FixPlan, Never>]) = state.withLock { state in
            if var entry = state.checks[name] {
                if entry.fixInFlight?.id == id { entry.fixInFlight = nil }
                entry.governor.giveBack(attemptAt: startedAt)
                if trigger == .automatic {
                    entry.heldBack = "its fix has nothing to do: \(reason)"
                } else {
                    entry.fixesTried += 1
                    entry.lastFix = record
                }
                state.checks[name] = entry
            }
            return (state.healthLogging, Self.waiters(of: id, in: &state))
        }
        // Told after the record is kept: what a fix by hand that waited does comes after it.
        defer { for waiter in waiters { waiter.resume(returning: .ended(record, healed: false)) } }
        guard trigger == .manual else { return record }
        remember(record)
        if logging {
            WeaveDILog.log(
                .health, subsystem: "health",
                "fix of \(JSONValue.quotedForMessage(name)) (\(trigger.rawValue)) \(record.outcome.rawValue): "
                    + ControlCharacters.escaped(record.message))
        }
        tell(.fixed(record, healed: false))
        return record
    }

    /// Asks whether the remedy the last fix of `name` started still goes on, and forgets it
    /// once it does not: auto-fix may then run the fix again.
    func refreshRemedy(_ name: String) async {
        guard let remedy = state.withLock({ $0.checks[name]?.remedy }) else { return }
        guard await !remedy.isGoing.isGoing() else { return }
        state.withLock { state in
            guard state.checks[name]?.remedy?.id == remedy.id else { return }
            state.checks[name]?.remedy = nil
        }
    }

    /// Notes that the fix `id` of `name` returned; one abandoned at its timeout is let go.
    private func fixReturned(_ name: String, id: UInt64) {
        state.withLock { state in
            guard var running = state.checks[name]?.fixInFlight, running.id == id else { return }
            running.returned = true
            state.checks[name]?.fixInFlight = running.abandoned ? nil : running
        }
    }

    private func remember(_ record: FixRecord) {
        state.withLock { state in
            state.history.append(record)
            state.recorded[record.outcome, default: 0] += 1
            if state.history.count > UnifiedRegistry.historyLimit {
                state.history.removeFirst(state.history.count - UnifiedRegistry.historyLimit)
            }
        }
    }
}

/// What the registry and a fix running now share: the attempt's check and deadline, and the
/// remedy the fix says goes on after it returns.
final class FixAttemptContext: Sendable {
    /// Whether a remedy still goes on, in a class box: a closure read out of a `Locked` comes
    /// back wrapped in one more thunk each time (see `WeaveDILog`).
    final class Probe: Sendable {
        let isGoing: @Sendable () async -> Bool
        init(_ isGoing: @escaping @Sendable () async -> Bool) { self.isGoing = isGoing }
    }

    /// The checks whose fixes run in this task: this attempt's, and those of the fixes it runs
    /// inside (a fix that asked for another check's fix).
    let checks: Set<String>
    /// The attempts' ids (`FixInFlight.id`) likewise: this one's and those it runs inside.
    let fixIDs: Set<UInt64>
    let deadline: Duration
    let clock: any HealthClock
    private let state = Locked<(open: Bool, remedy: Probe?)>((true, nil))

    /// The attempt `id` of the fix of `check`, asked for inside the attempt `within`, if any.
    init(check: String, id: UInt64, within: FixAttemptContext?, deadline: Duration, clock: any HealthClock) {
        checks = (within?.checks ?? []).union([check])
        fixIDs = (within?.fixIDs ?? []).union([id])
        self.deadline = deadline
        self.clock = clock
    }

    func setRemedy(_ probe: Probe) {
        state.withLock { state in
            if state.open { state.remedy = probe }
        }
    }

    /// Ends the attempt: a remedy said after this (by a fix that timed out, or a task it left)
    /// is not heard. Returns the one said before.
    func close() -> Probe? {
        state.withLock { state in
            state.open = false
            return state.remedy
        }
    }
}

extension FixRecord {
    /// The attempt running in this task (and the tasks it starts), if any.
    @TaskLocal static var attempt: FixAttemptContext?

    /// Said inside a fix that started a remedy which goes on after it returns (weavedid's job
    /// fix starts a run that can last hours): while `isGoing` says so, auto-fix does not run
    /// the fix again. If the check, run again after the fix, still fails, the attempt is
    /// recorded as `inProgress`, which neither resets nor counts toward the backoff and the
    /// circuit breaker; the check's runs ask `isGoing` (it should answer at once), and once it
    /// says false, or the check is healthy, auto-fix acts again as usual. Outside a fix, or
    /// after the attempt ended (its timeout), it does nothing.
    public static func remedyInProgress(while isGoing: @escaping @Sendable () async -> Bool) {
        attempt?.setRemedy(FixAttemptContext.Probe(isGoing))
    }

    /// Runs `operation` outside any fix: neither the attempt (`attemptTimeLeft`,
    /// `remedyInProgress`) nor who asked for it (`Trigger.current`) follows it, nor the tasks
    /// it starts. For work a fix starts that goes on as its own (a task, a timer).
    public static func outsideAnyFix<R: Sendable>(
        isolation: isolated (any Actor)? = #isolation, _ operation: () async -> R
    ) async -> R {
        await $attempt.withValue(nil) {
            await Trigger.$current.withValue(nil) { await operation() }
        }
    }

    /// Inside a fix, the time left before its attempt times out (`AutoFixPolicy.attemptTimeout`),
    /// never negative; nil outside a fix. A fix that waits for something can wait for no longer.
    public static var attemptTimeLeft: Duration? {
        guard let attempt else { return nil }
        return max(.zero, attempt.deadline - attempt.clock.now)
    }
}
