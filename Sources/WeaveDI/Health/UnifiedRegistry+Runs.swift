/// The runs of a check, shared by its callers: at most one run of a check goes at a time. A
/// caller that finds none going starts one; a caller that comes while one goes waits for it to
/// end (its result, which looked before the call, is not the caller's) and then shares the next
/// run with every caller that came meanwhile. So any number of callers cost at most one run going
/// and one waiting, per check, and each gets the result of a run that started after it asked.
/// Each run started counts once in the check's `runsStarted`, whoever shares it.
extension UnifiedRegistry {
    /// What `runOne` answers its caller.
    enum RunAnswer: Sendable {
        /// The check is not registered (any more).
        case removed
        /// A result recorded in the check's state: the run's, its timeout's, or that the run
        /// that timed out is still going.
        case recorded(HealthCheckResult)
        /// The caller's timeout passed while the run it waited for still went (within its own
        /// timeout): this result answers the caller, unrecorded, after waiting so long; the
        /// run's own result is recorded when it returns.
        case waitedTooLong(HealthCheckResult, Duration)

        var result: HealthCheckResult? {
            switch self {
            case .removed: nil
            case let .recorded(result), let .waitedTooLong(result, _): result
            }
        }
    }

    /// A caller waiting for a run's result.
    struct RunCaller {
        /// When it asked; for a `patient` caller, once it waited behind a run, when its own run
        /// started.
        var called: Duration
        /// The check's timeout as the caller selected it: it waits no longer.
        var timeout: Duration
        let continuation: CheckedContinuation<RunAnswer, Never>
        /// It waits for the result of its own run, however long the run before it took (no
        /// `waitedTooLong`): a fix's run of its check, which judges the fix by it.
        var patient = false
        /// Tells it apart among the callers waiting behind a run (a `State.serial`).
        var ticket: UInt64 = 0
        var deadline: Duration { called + timeout }
    }

    /// The run of a check going now: at most one per check, kept past its timeout until it
    /// returns.
    struct RunInFlight {
        /// The run's number (`State.serial`).
        let id: UInt64
        let started: Duration
        let timeout: Duration
        /// The run passed its timeout: its callers were answered so, and the check is not run
        /// again until it returns.
        var timedOut = false
        /// A round that may fix asked for it: a failure counts toward auto-fix's threshold.
        var fixing: Bool
        /// The callers it answers.
        var callers: [RunCaller]
        var deadline: Duration { started + timeout }
    }

    /// The callers that came while a run of the check went: they share the run after it.
    struct NextRun {
        var fixing = false
        var callers: [RunCaller] = []
        /// The timers of its callers that would wait past their own timeout
        /// (`Admission.waitsPastItsTimeout`), by ticket: cancelled once the group leaves.
        var timers: [UInt64: Task<Void, Never>] = [:]

        mutating func join(_ caller: RunCaller, fixingRound: Bool) {
            callers.append(caller)
            fixing = fixing || fixingRound
        }

        /// Ends its callers' timers: they left the group (called outside the lock).
        func cancelTimers() {
            for timer in timers.values { timer.cancel() }
        }
    }

    /// A run to start, as decided under the lock.
    struct RunStart {
        let check: HealthCheck
        let id: UInt64
        let deadline: Duration
    }

    /// A change of a check's state, to log and tell outside the lock.
    struct Transition {
        let check: String
        let from: HealthStatus?
        let to: HealthStatus
        let message: String
        let logging: Bool
    }

    /// Runs `check` (or has it run) and records its result, as the type's note above says. A
    /// run of it that timed out and has not returned yet is not joined by another: the check
    /// counts as timed out again, unrun. `fixingRound`: the caller is a round that may fix, so
    /// the failure of the run it gets counts toward auto-fix's threshold (a run shared with
    /// callers that only look counts if any caller sharing it may fix). `patient`: the caller's
    /// timeout counts from the start of its run, not from its call (`RunCaller.patient`).
    @discardableResult
    func runOne(_ check: HealthCheck, fixingRound: Bool, patient: Bool = false) async -> RunAnswer {
        await withCheckedContinuation { (continuation: CheckedContinuation<RunAnswer, Never>) in
            let now = clock.now
            let wall = clock.wallTime
            var caller = RunCaller(called: now, timeout: check.timeout, continuation: continuation, patient: patient)
            enum Admission {
                case removed
                case waits
                /// Waits behind a run whose timeout comes after its own (a run of the check this
                /// one replaced, with a longer timeout): a timer of its own answers it.
                case waitsPastItsTimeout(ticket: UInt64, deadline: Duration)
                case start(RunStart)
                case stillRunning(HealthCheckResult, Transition?)
            }
            let admission: Admission = state.withLock { state in
                guard state.checks[check.name] != nil else { return .removed }
                if let going = state.runsInFlight[check.name] {
                    if going.timedOut || going.deadline <= now {
                        let (result, transition) = stillRunning(check.name, going, now: now, wall: wall, fixingRound: fixingRound, in: &state)
                        return .stillRunning(result, transition)
                    }
                    state.serial &+= 1
                    caller.ticket = state.serial
                    state.nextRuns[check.name, default: NextRun()].join(caller, fixingRound: fixingRound)
                    return caller.deadline < going.deadline
                        ? .waitsPastItsTimeout(ticket: caller.ticket, deadline: caller.deadline) : .waits
                }
                state.serial &+= 1
                state.checks[check.name]!.runsStarted += 1
                state.runsInFlight[check.name] = RunInFlight(
                    id: state.serial, started: now, timeout: check.timeout, fixing: fixingRound, callers: [caller])
                return .start(RunStart(check: check, id: state.serial, deadline: now + check.timeout))
            }
            switch admission {
            case .removed:
                continuation.resume(returning: .removed)
            case .waits:
                break
            case let .waitsPastItsTimeout(ticket, deadline):
                let timer = Task.detached {
                    do { try await self.clock.sleep(for: deadline - self.clock.now) } catch { return }
                    self.expireWaiting(check.name, ticket: ticket)
                }
                // Kept to be cancelled when the caller leaves the group; at once, if it has.
                let kept = state.withLock { state in
                    guard state.nextRuns[check.name]?.callers.contains(where: { $0.ticket == ticket }) == true else { return false }
                    state.nextRuns[check.name]?.timers[ticket] = timer
                    return true
                }
                if !kept { timer.cancel() }
            case let .start(run):
                start(run)
            case let .stillRunning(result, transition):
                announce(transition)
                continuation.resume(returning: .recorded(result))
            }
        }
    }

    /// Starts `run` in tasks of its own, which no caller's cancellation or task-local values
    /// reach: the run is everyone's who shares it. Its timer answers the callers whose time is
    /// up, and at the run's timeout cancels it.
    private func start(_ run: RunStart) {
        let tasks = RunTasks()
        let name = run.check.name
        let body = run.check.run
        let work = Task.detached {
            // The remedy the last fix started is asked about once a run, before the check.
            await self.refreshRemedy(name)
            let result = await body()
            self.runReturned(name, id: run.id, result: result, tasks: tasks)
        }
        let timer = Task.detached {
            await self.watch(name, id: run.id, deadline: run.deadline, tasks: tasks)
        }
        tasks.attach(work: work, timer: timer)
    }

    /// The run `id` of `name` returned with `result`: records it (unless it timed out, or the
    /// check was removed meanwhile), answers its callers, and starts the run the callers that
    /// came meanwhile share.
    private func runReturned(_ name: String, id: UInt64, result: HealthCheckResult, tasks: RunTasks) {
        tasks.returned()
        let now = clock.now
        let wall = clock.wallTime
        typealias Step = (transition: Transition?, callers: [RunCaller], next: RunStart?, removed: [RunCaller], timers: NextRun?)
        let step: Step? = state.withLock { state in
            guard let run = state.runsInFlight[name], run.id == id else { return nil }
            state.runsInFlight[name] = nil
            var transition: Transition?
            if !run.timedOut {
                transition = state.record(name, run: id, result, duration: now - run.started, at: wall, fixingRound: run.fixing)
            }
            guard let waiting = state.nextRuns.removeValue(forKey: name) else { return (transition, run.callers, nil, [], nil) }
            guard let check = state.checks[name]?.check else { return (transition, run.callers, nil, waiting.callers, waiting) }
            state.serial &+= 1
            state.checks[name]!.runsStarted += 1
            // A patient caller's time counts from here, its own run's start.
            let callers = waiting.callers.map { caller in
                guard caller.patient else { return caller }
                var rebased = caller
                rebased.called = now
                rebased.timeout = check.timeout
                return rebased
            }
            state.runsInFlight[name] = RunInFlight(
                id: state.serial, started: now, timeout: check.timeout, fixing: waiting.fixing, callers: callers)
            return (transition, run.callers, RunStart(check: check, id: state.serial, deadline: now + check.timeout), [], waiting)
        }
        guard let step else { return }
        // Told before the next run starts: that run's change comes after this one's.
        announce(step.transition)
        if let next = step.next { start(next) }
        for caller in step.callers { caller.continuation.resume(returning: .recorded(result)) }
        for caller in step.removed { caller.continuation.resume(returning: .removed) }
        // Its callers left the group: their run's timer (or the answer above) takes them.
        step.timers?.cancelTimers()
    }

    /// The timer of the run `id` of `name`: answers each caller whose own timeout passes
    /// before the run's (one that waited for the run before it), then, at `deadline`, the run's
    /// callers and the callers waiting behind it as timed out, and cancels the run. Cancelled
    /// when the run returns.
    private func watch(_ name: String, id: UInt64, deadline: Duration, tasks: RunTasks) async {
        while true {
            let next: Duration = state.withLock { state in
                guard let run = state.runsInFlight[name], run.id == id, !run.timedOut else { return deadline }
                return run.callers.map(\.deadline).filter { $0 < deadline }.min() ?? deadline
            }
            do { try await clock.sleep(for: next - clock.now) } catch { return }
            if expire(name, id: id, deadline: deadline) {
                tasks.timedOut()
                return
            }
        }
    }

    /// Answers the callers of the run `id` of `name` whose time is up; returns whether the run's
    /// own timeout has come.
    private func expire(_ name: String, id: UInt64, deadline: Duration) -> Bool {
        let now = clock.now
        let wall = clock.wallTime
        enum Expiry {
            case none
            case callers([RunCaller], started: Duration)
            case timedOut([(caller: RunCaller, result: HealthCheckResult)], [Transition?], waiting: NextRun?)
        }
        let expiry: Expiry = state.withLock { state in
            guard var run = state.runsInFlight[name], run.id == id, !run.timedOut else { return .none }
            guard now >= run.deadline else {
                let due = run.callers.filter { $0.deadline <= now }
                guard !due.isEmpty else { return .none }
                run.callers.removeAll { $0.deadline <= now }
                state.runsInFlight[name] = run
                return .callers(due, started: run.started)
            }
            run.timedOut = true
            let timedOut = HealthCheckResult.unhealthy("timed out after \(format(run.timeout))")
            var answers = run.callers.map { (caller: $0, result: timedOut) }
            run.callers = []
            state.runsInFlight[name] = run
            var transitions = [state.record(name, run: id, timedOut, duration: now - run.started, at: wall, fixingRound: run.fixing)]
            // The callers waiting behind it: no run starts beside the one still going, so they
            // are told so, once, as a caller that comes now is.
            let waiting = state.nextRuns.removeValue(forKey: name)
            if let waiting {
                let (stillRunning, transition) = stillRunning(name, run, now: now, wall: wall, fixingRound: waiting.fixing, in: &state)
                transitions.append(transition)
                answers += waiting.callers.map { (caller: $0, result: stillRunning) }
            }
            return .timedOut(answers, transitions, waiting: waiting)
        }
        switch expiry {
        case .none:
            return now >= deadline
        case let .callers(due, started):
            for caller in due {
                let result = HealthCheckResult.unhealthy(
                    "timed out after \(format(caller.timeout)) waiting for its run, which started \(format(started - caller.called)) "
                        + "after the call, once the run going then had ended, and is still going (its result is recorded when it returns)")
                caller.continuation.resume(returning: .waitedTooLong(result, now - caller.called))
            }
            return false
        case let .timedOut(answers, transitions, waiting):
            waiting?.cancelTimers()
            transitions.forEach(announce)
            for answer in answers { answer.caller.continuation.resume(returning: .recorded(answer.result)) }
            return true
        }
    }

    /// The caller `ticket` of `name`, waiting behind a run, reached its timeout (see
    /// `Admission.waitsPastItsTimeout`): answered so, unrecorded, unless its run started
    /// meanwhile (whose timer then answers it).
    private func expireWaiting(_ name: String, ticket: UInt64) {
        let caller: RunCaller? = state.withLock { state in
            guard var group = state.nextRuns[name], let index = group.callers.firstIndex(where: { $0.ticket == ticket }) else {
                return nil
            }
            let caller = group.callers.remove(at: index)
            group.timers[ticket] = nil
            state.nextRuns[name] = group.callers.isEmpty ? nil : group
            return caller
        }
        guard let caller else { return }
        let result = HealthCheckResult.unhealthy(
            "timed out after \(format(caller.timeout)) waiting behind a run that started before the call and is still going "
                + "(the check was registered again meanwhile; that run's result is recorded when it returns)")
        caller.continuation.resume(returning: .waitedTooLong(result, clock.now - caller.called))
    }

    /// What a caller of `name` is told, and the check records, while `run` goes past its
    /// timeout: the check is not run again until it returns.
    private func stillRunning(
        _ name: String, _ run: RunInFlight, now: Duration, wall: Double, fixingRound: Bool, in state: inout State
    ) -> (HealthCheckResult, Transition?) {
        let result = HealthCheckResult.unhealthy(
            "timed out after \(format(run.timeout)), and still running \(format(now - run.started)) after it started: "
                + "not run again until it returns")
        state.serial &+= 1
        return (result, state.record(name, run: state.serial, result, duration: .zero, at: wall, fixingRound: fixingRound))
    }

    /// Logs (with health logging on) and tells the observer of `transition`, if any.
    func announce(_ transition: Transition?) {
        guard let transition else { return }
        if transition.logging {
            // The name quoted as the registration's complaints quote it, and the message (often
            // an error from outside: a path, a server's answer) with its control characters
            // escaped as the daemon's log escapes them: the default sink writes lines as they
            // are, and a newline in either would forge one.
            WeaveDILog.log(
                transition.to == .healthy ? .health : .error, subsystem: "health",
                "\(JSONValue.quotedForMessage(transition.check)): \(transition.from.map(\.rawValue) ?? "unknown") -> "
                    + "\(transition.to.rawValue): " + ControlCharacters.escaped(transition.message))
        }
        tell(.transition(check: transition.check, from: transition.from, to: transition.to, message: transition.message))
    }

    /// Takes the runs of the check named `name` (removed) out of the state: the callers they
    /// would answer are returned, to be answered that the check is gone. A run still going goes
    /// on, and is cancelled at its timeout, but records nothing and holds back no check
    /// registered later under the same name.
    static func dropRuns(of name: String, in state: inout State) -> (callers: [RunCaller], waiting: NextRun?) {
        let going = state.runsInFlight.removeValue(forKey: name)?.callers ?? []
        let waiting = state.nextRuns.removeValue(forKey: name)
        return (going + (waiting?.callers ?? []), waiting)
    }
}

/// The tasks of one run: the timer cancels the work at the run's timeout; the work's return
/// cancels the timer.
final class RunTasks: Sendable {
    private struct State {
        var work: Task<Void, Never>?
        var timer: Task<Void, Never>?
        var returned = false
        var timedOut = false
    }

    private let state = Locked(State())

    func attach(work: Task<Void, Never>, timer: Task<Void, Never>) {
        let (returned, timedOut) = state.withLock { state in
            state.work = work
            state.timer = timer
            return (state.returned, state.timedOut)
        }
        if returned { timer.cancel() }
        if timedOut { work.cancel() }
    }

    func returned() {
        state.withLock { state in
            state.returned = true
            return state.timer
        }?.cancel()
    }

    func timedOut() {
        state.withLock { state in
            state.timedOut = true
            return state.work
        }?.cancel()
    }
}

extension UnifiedRegistry.State {
    /// Records `result` of the run numbered `run` of `name`, unless the check is gone or a
    /// later run's result is recorded; returns the change of state it made, if any.
    mutating func record(
        _ name: String, run: UInt64, _ result: HealthCheckResult, duration: Duration, at wall: Double, fixingRound: Bool
    ) -> UnifiedRegistry.Transition? {
        guard var entry = checks[name], entry.lastRecordedRun < run else { return nil }
        entry.lastRecordedRun = run
        let old = entry.status
        entry.apply(result, duration: duration, at: wall, fixingRound: fixingRound)
        checks[name] = entry
        guard old != entry.status, let new = entry.status else { return nil }
        return UnifiedRegistry.Transition(check: name, from: old, to: new, message: result.message, logging: healthLogging)
    }
}
