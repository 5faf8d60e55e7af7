import WeaveDI
import WeaveDIControl
import WeaveDIDaemon

/// `weavedictl run-job NAME [--wait]`: starts a run of a sync job and reports how it ended.
struct RunJobCommand: CtlCommand {
    static let configuration = CommandConfiguration(
        name: "run-job",
        abstract: "Start a run of a sync job now; with --wait, follow it to its end.",
        arguments: "NAME [--wait]",
        discussion: """
            Arguments:
              NAME     the job (see `weavedictl jobs`)
            Options:
              --wait   follow the run with progress updates until it ends: a bar redrawn in
                       place on a terminal, one line per update otherwise (with --json, one JSON
                       object per update), the files that failed so far counted once there are
                       any (`3/10 files (2 failed)`), then how it ended. A run waiting for a slot is said
                       queued, then started once it has one. The daemon's first answer is
                       waited for as any call's (--timeout, default 30 s); then the run is
                       followed for as long as it takes, unless --timeout is given. Ctrl-C
                       stops following, not the run, and says so; so do a reply of the run
                       weavedictl cannot read and a --timeout run out (exit 69).

            Without --wait the daemon answers as soon as the run has started, with its id
            (`job NAME: run NAME-3 started; …`), and the run goes on in the daemon: however long
            it takes, `weavedictl jobs` shows how it ended. While sync.maxConcurrentRuns runs
            are going, the run waits for one of them to end, and is said queued (`job NAME: run
            NAME-3 queued: 2 runs going (maxConcurrentRuns 2); …`). A job already running is not
            run twice: the run asked for is skipped, and said so with why (`job NAME: skipped:
            run NAME-3 is already going`; with --json, its `run` has a null id and the going
            run's id in `goingRunId`). A daemon too old to answer once the run has
            started is asked to run the job as before: the answer comes when the run ends,
            within that daemon's control.callTimeout.

            Needs administrator rights (see `weavedictl fix --help`).

            Exit status: 0 when the run started or was queued (without --wait), or succeeded
            (with --wait); 1 when it did not succeed or was skipped, or the job does not exist;
            69 when the daemon cannot be reached or sends no valid reply; 77 without the rights.
            """,
        method: "RunJob")

    /// The job.
    var name: String
    /// `--wait`: call with `more` and show progress.
    var wait = false

    init(parsing reader: inout ArgumentReader) throws(UsageError) {
        var name: String?
        while let token = reader.next() {
            switch token {
            case let .option("--wait", value):
                try reader.flag("--wait", inline: value)
                wait = true
            case let .option(option, value): try reader.shared(option, inline: value)
            case let .argument(argument):
                guard name == nil else { throw reader.unexpected(argument) }
                name = argument
            }
        }
        guard let name else { throw reader.error("missing argument NAME (the job to run)") }
        self.name = name
    }

    func run(in context: CtlContext) async throws(CtlError) -> Int32 {
        let client = try context.connect()
        guard wait else { return try start(on: client, in: context) }
        // The daemon answers at once that the run started (or is queued): that first reply is
        // waited for as any call's (30 s, or --timeout), so that a daemon that never answers
        // costs the timeout, not a wait for ever. Then a run can take hours, with no reply while
        // one large file is copied: the rest is waited for as long as it takes, unless --timeout
        // says otherwise.
        client.replyTimeout = context.options.replyTimeout()
        var answered = false
        let call = VarlinkCall(method: DaemonInterface.name + ".RunJob", parameters: [("name", .string(name))], more: true)
        let job = name.escapingControlCharacters
        // Once the call is sent, a run it starts goes on whatever becomes of weavedictl; until
        // the daemon names the run, it may not have started one (one already going is skipped).
        InterruptNotice.set(
            "weavedictl: interrupted; a run of \(job) the daemon started goes on there (`weavedictl jobs` shows whether and how it ends)")
        defer { InterruptNotice.clear() }
        let bar = ProgressBar()
        var drawn = false
        var runID: String?
        var saidQueued = false
        var saidStarted = false
        // The daemon sends the last counts again when the run ends: the same update is shown once.
        var shown: JSONValue?
        let final: VarlinkReply?
        do {
            final = try context.perform(call, on: client) { reply in
                if !answered {
                    answered = true
                    client.replyTimeout = context.options.replyTimeout(standard: nil)
                }
                guard reply.continues else { return }
                if let id = reply.parameter("runId")?.stringValue {
                    let run = id.escapingControlCharacters
                    if runID == nil {
                        runID = id
                        InterruptNotice.set("weavedictl: interrupted; the run \(run) goes on in the daemon (`weavedictl jobs` shows how it ends)")
                    }
                    // A run waiting for a slot is named with `queued`; any reply without it comes
                    // once the run has started (a client that does not keep up may miss the
                    // reply that says so, and get a progress reply first).
                    let queued = reply.parameter("queued").flatMap { $0.objectMembers != nil ? $0 : nil }
                    var line: String?
                    if let queued, !saidQueued, !saidStarted {
                        saidQueued = true
                        line = "job \(job): run \(run) queued: \(Self.going(queued)); it starts when one ends"
                    } else if queued == nil, !saidStarted {
                        saidStarted = true
                        line = "job \(job): run \(run) started"
                    }
                    if let line, !context.options.json {
                        if drawn, context.terminal.isTerminal { context.terminal.line() }
                        context.terminal.line(line)
                        InterruptNotice.barDrawn(false)
                    }
                }
                if context.options.json {
                    context.printJSON(reply.object)
                } else if let progress = reply.parameter("progress"), progress != .null, progress != shown,
                    !ProgressBar.countsNothing(progress) {
                    // A run that stopped before its walk (a source that cannot be opened) sends
                    // counts of nothing: no `0/0 files` as though it had walked an empty tree.
                    // Flagged before it is drawn: a signal between the two would otherwise put
                    // the message on the bar's line (flagged first, the worst is an empty line).
                    InterruptNotice.barDrawn(context.terminal.isTerminal)
                    context.terminal.write(bar.update(progress, isTerminal: context.terminal.isTerminal))
                    shown = progress
                    drawn = true
                }
            }
        } catch {
            // The bar's line ends first, so that an error (the daemon gone, no reply in time)
            // starts a line of its own on the terminal.
            InterruptNotice.clear()
            if drawn, context.terminal.isTerminal { context.terminal.line() }
            // A reply weavedictl cannot read, more to follow, ends the following, not the run,
            // as Ctrl-C does, and so does a --timeout run out once the daemon answered: said so,
            // or one would believe the run failed or stopped.
            switch error {
            case .invalidReply(_, _, _, continues: true, _): break
            case .timedOut where answered: break
            default: throw error
            }
            let note = runID.map { "The run \($0.escapingControlCharacters) goes on in the daemon (`weavedictl jobs` shows how it ends)." }
                ?? "A run of \(job) the daemon started goes on there (`weavedictl jobs` shows whether and how it ends)."
            throw .noted(error, note: note)
        }
        InterruptNotice.clear()
        if drawn, context.terminal.isTerminal { context.terminal.line() }
        // The last reply is the run's end: without its run, it says nothing of how it went.
        let run = try context.required("run", of: final, to: "RunJob", on: client)
        if context.options.json {
            context.printJSON(final?.object ?? .object([]))
        } else {
            context.terminal.line(Self.summary(run, job: name, on: context.terminal))
            for line in Self.failedItems(run) { context.terminal.line(line) }
        }
        return run.string("result") == "success" ? ExitStatus.ok : ExitStatus.failure
    }

    /// The run's failed items, one line each below its summary (`  docs/a.txt: open: Permission
    /// denied (EACCES)`), then how many more failed than the daemon keeps (20); none for a run
    /// with one, which its summary says already.
    static func failedItems(_ run: JSONValue) -> [String] {
        guard (run.int("errors") ?? 0) > 1 else { return [] }
        let items = run[member: "failedItems"]?.arrayValue ?? []
        var lines = items.map { item in
            "  " + (item.string("path") ?? "?").escapingControlCharacters + ": " + (item.string("reason") ?? "?").escapingControlCharacters
        }
        let more = (run.int("errors") ?? 0) - items.count
        if !items.isEmpty, more > 0 { lines.append("  … and \(more) more (the daemon keeps the first \(items.count))") }
        return lines
    }

    /// Without --wait: asks for a run and returns once it has started (`detach`), so that a run
    /// longer than the daemon's `control.callTimeout` is no failure. A daemon older than
    /// `detach` refuses it as an unknown parameter: it is asked again without it, and answers
    /// when the run ends (within its `control.callTimeout`), as weavedictl used to wait for it.
    private func start(on client: VarlinkClient, in context: CtlContext) throws(CtlError) -> Int32 {
        let method = DaemonInterface.name + ".RunJob"
        let call = VarlinkCall(method: method, parameters: [("name", .string(name)), ("detach", .bool(true))])
        let reply: VarlinkReply?
        do {
            reply = try context.perform(call, on: client)
        } catch {
            guard Self.refusesDetach(error) else { throw error }
            reply = try context.perform(VarlinkCall(method: method, parameters: [("name", .string(name))]), on: client)
        }
        let id = reply?.parameter("runId")?.stringValue
        // Not started (a run already going): the run the daemon describes says why.
        let run = id == nil ? try context.required("run", of: reply, to: "RunJob", on: client, unless: "runId") : .null
        if context.options.json { context.printJSON(reply?.object ?? .object([])) }
        if let id {
            if !context.options.json {
                let run = "job \(name.escapingControlCharacters): run \(id.escapingControlCharacters)"
                if let queued = reply?.parameter("queued"), queued.objectMembers != nil {
                    // Every slot taken: the run starts once one of the runs going ends.
                    context.terminal.line("\(run) queued: \(Self.going(queued)); it starts when one ends, and goes on in the daemon "
                        + "(`weavedictl jobs` shows how it ends)")
                } else {
                    context.terminal.line("\(run) started; it goes on in the daemon (`weavedictl jobs` shows how it ends)")
                }
            }
            return ExitStatus.ok
        }
        if !context.options.json { context.terminal.line(Self.summary(run, job: name, on: context.terminal)) }
        return run.string("result") == "success" ? ExitStatus.ok : ExitStatus.failure
    }

    /// `2 runs going (maxConcurrentRuns 2)`, from a `SlotWait` object.
    static func going(_ queued: JSONValue) -> String {
        let going = queued.int("runsGoing") == 1 ? "1 run going" : "\(queued.intText("runsGoing")) runs going"
        return "\(going) (maxConcurrentRuns \(queued.intText("maxConcurrentRuns")))"
    }

    /// Whether `error` is the daemon's `InvalidParameter` naming `detach`: a daemon that does
    /// not know the parameter.
    static func refusesDetach(_ error: CtlError) -> Bool {
        guard case let .failure(failure, _) = error, failure.name == "org.varlink.service.InvalidParameter" else { return false }
        return failure.parameters.first { $0.0 == "parameter" }?.1 == .string("detach")
    }

    /// `job NAME: run NAME-3 RESULT in DURATION (copied 3, updated 1, deleted 0, skipped 9, errors 0, 1.5 MiB)`:
    /// the daemon log's line for the run's end (`SyncRunSummary`), after the job's name.
    static func summary(_ run: JSONValue, job: String, on terminal: Terminal) -> String {
        "job \(job.escapingControlCharacters): " + outcome(run, on: terminal)
    }

    /// `run NAME-3 RESULT in DURATION (copied 3, …)`: `summary` without the job.
    /// A run asked for that never started (`skipped`, with no id, or the placeholder
    /// `NAME-skipped` an older daemon gives) is only what happened: `skipped: run docs-1
    /// is already going`, with no duration or counts, as it did nothing.
    static func outcome(_ run: JSONValue, on terminal: Terminal) -> String {
        let result = run.string("result") ?? "unknown"
        let shown = result.escapingControlCharacters
        let styled = terminal.styled(shown, Terminal.Style.status(shown))
        let id = run.string("id")
        if result == "skipped", id == nil || id == run.string("job").map({ $0 + "-skipped" }) {
            let message = run.string("message").map { ": " + $0.escapingControlCharacters } ?? ""
            return styled + message
        }
        // The run by its id, as its start was said.
        let summary = SyncRunSummary(
            id: id, result: result, duration: run.number("duration"),
            copied: run.int("filesCopied"), updated: run.int("filesUpdated"), deleted: run.int("filesDeleted"),
            skipped: run.int("filesSkipped"), errors: run.int("errors"), bytes: run.int("bytes"), message: run.string("message"))
        // What the reply says (the message may quote a file name) has its control characters escaped.
        return summary.text(shownResult: styled, escaping: \.escapingControlCharacters)
    }
}
