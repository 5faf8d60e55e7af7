import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// The implementations of `io.weavedi.Daemon`'s methods.
final class DaemonMethods: Sendable {
    let registry: UnifiedRegistry
    let container: WeaveDI.Container
    let supervisor: Supervisor
    let log: DaemonLog
    let jobs: any JobControl
    let metrics: ControlMetrics
    let started = ContinuousClock.now
    /// The daemon's pid, for `Ping` (read once: the daemon never forks without exec).
    let pid = Int(CurrentProcess.id)
    let healthReplies = HealthReplyCache()
    /// `Ping`'s reply up to its uptime, which is all that changes.
    let pingReplyHead: [UInt8]
    /// Held while the log level and filter are changed together (`SetLogLevel`) or read together:
    /// two calls on two connections never leave one's level with the other's filter, nor a
    /// reply that shows such a pair.
    private let logLevels = Lock()

    init(registry: UnifiedRegistry, container: WeaveDI.Container, supervisor: Supervisor, log: DaemonLog,
         jobs: any JobControl, metrics: ControlMetrics) {
        self.registry = registry
        self.container = container
        self.supervisor = supervisor
        self.log = log
        self.jobs = jobs
        self.metrics = metrics
        var head = Array(#"{"parameters":{"version":"#.utf8)
        JSONValue.writeQuoted(DaemonVersion.current, into: &head)
        head.append(contentsOf: #","pid":"#.utf8)
        JSONValue.writeInteger(pid, into: &head)
        head.append(contentsOf: #","uptime":"#.utf8)
        pingReplyHead = head
    }

    /// Methods that never suspend: the I/O thread answers them itself (`invokeInline`).
    /// (A switch: comparing short strings costs less than hashing the name for a set.)
    static func isInline(_ method: String) -> Bool {
        switch method {
        case "Ping", "GetHealth", "ListFixes", "ListSessions", "ListRegistrations", "DiagnoseComponents", "CheckCycles",
            "GetLogLevel":
            true
        default:
            false
        }
    }

    /// Answers one of the inline methods (`isInline`) without suspending, appending the reply's bytes
    /// (without the NUL terminator) to `out`; returns the reply's error name, if it is one.
    func answerInline(_ method: String, _ call: VarlinkCall, into out: inout [UInt8]) -> String? {
        if method == "Ping" {
            do { try call.accept([]) } catch {
                error.reply.write(into: &out)
                return error.name
            }
            out.append(contentsOf: pingReplyHead)
            JSONValue.writeDouble(seconds(ContinuousClock.now - started), into: &out)
            out.append(contentsOf: "}}".utf8)
            return nil
        }
        if method == "GetHealth" {
            do {
                try call.accept(["tags"])
                let tags = try healthTags(call)
                healthReplies.write(registry, tags: tags, into: &out)
                return nil
            } catch {
                error.reply.write(into: &out)
                return error.name
            }
        }
        let reply: VarlinkReply
        do { reply = try invokeInline(method, call) } catch { reply = error.reply }
        reply.write(into: &out)
        return reply.error
    }

    /// The methods whose call changes nothing and logs nothing: all that comes of one is its
    /// reply, so a `oneway` call of one is not run at all (`VarlinkService.handleInline`).
    /// `RunChecks` is not among them: its checks' results are kept, and `GetHealth` shows them.
    /// Any other method, one added later included, runs.
    static func changesNothing(_ method: String) -> Bool {
        switch method {
        case "Ping", "GetHealth", "ListFixes", "ListJobs", "ListSessions", "ListRegistrations", "DiagnoseComponents",
            "CheckCycles", "GetLogLevel", "GetMetrics":
            true
        default:
            false
        }
    }

    /// The methods answered while the daemon starts (`StartGate`): those that read nothing of
    /// the services started after the control server (the jobs, the health checks), or, as
    /// `Reload`, say themselves that the daemon is starting. Any other method, one added later
    /// included, waits for the start to be over.
    static func isAnsweredWhileStarting(_ method: String) -> Bool {
        switch method {
        case "Ping", "GetLogLevel", "SetLogLevel", "ListSessions", "ListRegistrations", "DiagnoseComponents", "CheckCycles", "Reload":
            true
        default:
            false
        }
    }

    /// Whether `method` streams replies when called with `more` (and so runs as long as its
    /// work, without the call time limit): `RunJob` only. Any other call with `more` has the
    /// limit, as without.
    static func streams(_ method: String) -> Bool {
        method == "RunJob"
    }

    /// Inline methods whose answer shows open requests: they run in a request of their own,
    /// as every async call does.
    static let requestShowingMethods: Set<String> = ["ListSessions"]

    /// Runs one of the inline methods (`isInline`) without suspending.
    func invokeInline(_ method: String, _ call: VarlinkCall) throws(VarlinkFailure) -> VarlinkReply {
        switch method {
        case "Ping":
            try call.accept([])
            let uptime = ContinuousClock.now - started
            return VarlinkReply(parameters: [
                ("version", .string(DaemonVersion.current)), ("pid", .int(pid)),
                ("uptime", .double(seconds(uptime))),
            ])
        case "GetHealth":
            try call.accept(["tags"])
            let tags = try healthTags(call)
            return VarlinkReply(parameters: [("health", ReportEncoding.health(registry.report(tags: tags)))])
        case "ListFixes":
            try call.accept(["limit"])
            let limit = try call.int("limit", in: 1...UnifiedRegistry.historyLimit) ?? UnifiedRegistry.historyLimit
            return VarlinkReply(parameters: [("fixes", .array(registry.fixHistory().suffix(limit).map(ReportEncoding.fix)))])
        case "ListSessions":
            try call.accept([])
            return VarlinkReply(parameters: [("sessions", .array(container.openSessions.map(ReportEncoding.session)))])
        case "ListRegistrations":
            try call.accept([])
            return VarlinkReply(parameters: [("registrations", .array(container.registrations.map(ReportEncoding.registration)))])
        case "DiagnoseComponents":
            try call.accept([])
            return VarlinkReply(parameters: [("issues", .array(container.diagnoseComponents().issues.map(ReportEncoding.issue)))])
        case "CheckCycles":
            try call.accept([])
            let report = container.checkCycles()
            return VarlinkReply(parameters: [
                ("componentCount", .int(report.componentCount)), ("edgeCount", .int(report.edgeCount)),
                ("cycles", .array(report.cycles.map(ReportEncoding.strings))), ("notBuilt", ReportEncoding.strings(report.notBuilt)),
            ])
        case "GetLogLevel":
            try call.accept([])
            return logLevelReply()
        default:
            throw .methodNotFound("\(DaemonInterface.name).\(method)")
        }
    }

    /// The `tags` of a `GetHealth` or `RunChecks` call, nil for none given. A tag no check has
    /// is refused (`NoSuchTag`, naming the first `unknownTagsNamed` such tags and every tag the
    /// checks have), and so is an empty list: either would leave checks out unseen, and a probe
    /// with a misspelt tag (`readyness`) would check less than it means to, or nothing, and pass.
    func healthTags(_ call: VarlinkCall) throws(VarlinkFailure) -> Set<String>? {
        guard let tags = try call.stringArray("tags") else { return nil }
        guard !tags.isEmpty else {
            throw .invalidParameter("tags", reason: "an empty list selects no check; leave tags out to select every check")
        }
        let known = registry.checkTags
        var unknown: [String] = []
        for tag in tags where !known.contains(tag) && !unknown.contains(tag) {
            unknown.append(tag)
            if unknown.count == Self.unknownTagsNamed { break }
        }
        guard unknown.isEmpty else { throw .noSuchTag(unknown, known: known.sorted()) }
        return Set(tags)
    }

    /// How many unknown tags a `NoSuchTag` names at most.
    static let unknownTagsNamed = 10

    /// Runs `method` (its short name) for `call` from the peer of `credentials` (named in the
    /// log where a change says who asked); `stream` sends a `continues` reply early.
    func invoke(
        _ method: String, _ call: VarlinkCall, from credentials: PeerCredentials, stream: @escaping @Sendable (VarlinkReply) -> Void
    ) async throws(VarlinkFailure) -> VarlinkReply {
        if Self.isInline(method) { return try invokeInline(method, call) }
        switch method {
        case "RunChecks":
            try call.accept(["tags"])
            let tags = try healthTags(call)
            // Checks only: fixes change things, which is for the loop's auto-fix and for `Fix`,
            // an administrator's call; this one is open to anyone who can connect.
            return VarlinkReply(parameters: [("health", ReportEncoding.health(await registry.runChecks(tags: tags, fixing: false)))])
        case "Fix":
            try call.accept(["check"])
            let records: [FixRecord]
            if let name = try call.string("check") {
                guard registry.checkNames.contains(name) else { throw .noSuchCheck(name) }
                records = [await registry.fix(name)]
            } else {
                records = await registry.fixAll()
            }
            return VarlinkReply(parameters: [("fixes", .array(records.map(ReportEncoding.fix)))])
        case "ListJobs":
            try call.accept([])
            return VarlinkReply(parameters: [("jobs", .array(await jobs.jobs()))])
        case "RunJob":
            try call.accept(["name", "detach"])
            guard let name = try call.string("name") else { throw .invalidParameter("name", reason: "missing: the job's name is required") }
            let detach = try call.bool("detach") == true
            // A oneway call wants no reply: it is detached too, or the connection's next call
            // would wait for the run's end (or callTimeout) to be answered.
            if detach || call.oneway {
                // The answer comes once the run has started; the run goes on without the call.
                guard !(detach && call.more) else {
                    throw .invalidParameter(
                        "detach", reason: "true cannot go with \"more\", which follows the run to its end: ask for one or the other")
                }
                return VarlinkReply(parameters: Self.startParameters(try await jobs.start(name)))
            }
            let more = call.more
            // Each reply before the last names the run: the first as soon as it is launched (with
            // `queued` while it waits for a slot, and again without once it has one), and every
            // progress reply too, as a client that does not keep up gets only the newest.
            let runID = Locked<String?>(nil)
            let run = try await jobs.run(name) { start in
                if case let .started(id) = start { runID.withLock { $0 = id } }
                if case let .queued(id, _, _) = start { runID.withLock { $0 = id } }
                if more { stream(VarlinkReply(parameters: Self.startParameters(start), continues: true)) }
            } progress: { progress in
                guard more else { return }
                let id = runID.withLock { $0 }.map(JSONValue.string) ?? .null
                stream(VarlinkReply(parameters: [("run", .null), ("progress", progress), ("runId", id)], continues: true))
            }
            return VarlinkReply(parameters: [("run", run), ("progress", .null)])
        case "PauseJob", "ResumeJob":
            try call.accept(["name"])
            guard let name = try call.string("name") else { throw .invalidParameter("name", reason: "missing: the job's name is required") }
            // A change the state file did not take holds until the daemon stops: the caller is told.
            let change = try await jobs.setPaused(name, method == "PauseJob")
            // Said only when true: a job already so (an older daemon never says it).
            var parameters: [(String, JSONValue)] = change.notSaved.map { [("notSaved", .string($0))] } ?? []
            if change.unchanged { parameters.append(("unchanged", .bool(true))) }
            return VarlinkReply(parameters: parameters)
        case "SetLogLevel":
            // All or nothing: both parameters are checked before either is changed.
            try call.accept(["level", "filter"])
            var level: LogLevel?
            if let name = try call.string("level") {
                guard let named = LogLevel(name: name) else {
                    let names = LogLevel.allCases.map(\.rawValue).joined(separator: ", ")
                    throw .invalidParameter("level", reason: "expected one of \(names), got \(FieldReader.describe(.string(name)))")
                }
                level = named
            }
            var filter: LogFilter?
            if let text = try call.string("filter") {
                switch LogFilter.parse(text) {
                case let .success(parsed): filter = parsed
                case let .failure(error):
                    throw .invalidParameter(
                        "filter", reason: "\(error) (expected a default level and subsystem=level entries, such as \"info,sync=debug\")")
                }
            }
            // A call that names neither changes nothing, and says nothing in the log.
            guard level != nil || filter != nil else { return logLevelReply() }
            // The line is written after the lock is let go: a write may wait on a stalled standard
            // error, and `GetLogLevel`, answered on the I/O thread, takes the lock.
            let (reply, line) = logLevels.withLock {
                if let level { UnifiedDI.setLogLevel(level) }
                if let filter { log.currentFilter = filter }
                return (logLevelReplyHoldingTheLock(), "log level now \(UnifiedDI.logLevel), filter \(log.currentFilter.text)")
            }
            log.notice("control", line)
            return reply
        case "GetMetrics":
            try call.accept([])
            return VarlinkReply(parameters: [("text", .string(await metrics.render(methods: self)))])
        case "Reload":
            try call.accept([])
            switch await supervisor.reload(asker: "Reload from uid \(credentials.uid) (pid \(credentials.pid))") {
            case .reloaded:
                return VarlinkReply(parameters: [("status", .string("configuration reloaded"))])
            case let .refused(problem), let .notRunning(problem):
                throw VarlinkFailure("io.weavedi.Daemon.ReloadRefused", [("reason", .string(problem))])
            }
        default:
            throw .methodNotFound("\(DaemonInterface.name).\(method)")
        }
    }

    /// The reply to `RunJob` for a run launched (`runId`; `queued` beside it for one that waits
    /// for a slot, which a client that knows nothing of it reads as one that started), or not
    /// started (the `skipped` run).
    static func startParameters(_ start: JobStart) -> [(String, JSONValue)] {
        switch start {
        case let .started(id): return [("run", .null), ("progress", .null), ("runId", .string(id))]
        case let .queued(id, runsGoing, maxConcurrentRuns):
            let queued = JobStart.slotWait(runsGoing: runsGoing, maxConcurrentRuns: maxConcurrentRuns)
            return [("run", .null), ("progress", .null), ("runId", .string(id)), ("queued", queued)]
        case let .notStarted(run): return [("run", run), ("progress", .null)]
        }
    }

    private func logLevelReply() -> VarlinkReply {
        logLevels.withLock { logLevelReplyHoldingTheLock() }
    }

    /// `logLevelReply()`, with `logLevels` held by the caller.
    private func logLevelReplyHoldingTheLock() -> VarlinkReply {
        VarlinkReply(parameters: [("level", .string(UnifiedDI.logLevel.rawValue)), ("filter", .string(log.currentFilter.text))])
    }
}

extension LogFilter {
    /// The filter in `WEAVEDID_LOG` syntax.
    public var text: String {
        ([defaultLevel.rawValue] + overrides.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.rawValue)" })
            .joined(separator: ",")
    }
}

extension VarlinkCall {
    /// Refuses parameters other than `allowed`, naming the first unknown one.
    func accept(_ allowed: Set<String>) throws(VarlinkFailure) {
        guard let unknown = parameters.first(where: { !allowed.contains($0.0) }) else { return }
        let accepted = allowed.isEmpty ? "the method takes none" : "accepted: " + allowed.sorted().joined(separator: ", ")
        throw .invalidParameter(unknown.0, reason: "unknown parameter (\(accepted))")
    }

    func string(_ name: String) throws(VarlinkFailure) -> String? {
        guard let value = parameter(name) else { return nil }
        guard let string = value.stringValue else {
            throw .invalidParameter(name, reason: "expected a string, got \(FieldReader.describe(value))")
        }
        return string
    }

    /// The integer parameter `name`, if given, read as the configuration's integer fields are
    /// (`FieldReader.integer(_:in:)`: `5.0` is 5, `5.5` is refused, the error saying the range).
    func int(_ name: String, in range: ClosedRange<Int>) throws(VarlinkFailure) -> Int? {
        guard let value = parameter(name) else { return nil }
        switch FieldReader.integer(value, in: range) {
        case let .success(integer): return integer
        case let .failure(mismatch): throw .invalidParameter(name, reason: mismatch.reason)
        }
    }

    func bool(_ name: String) throws(VarlinkFailure) -> Bool? {
        guard let value = parameter(name) else { return nil }
        guard let bool = value.boolValue else { throw .invalidParameter(name, reason: "expected true or false, got \(FieldReader.describe(value))") }
        return bool
    }

    func stringArray(_ name: String) throws(VarlinkFailure) -> [String]? {
        guard let value = parameter(name) else { return nil }
        let reason = "expected an array of strings"
        guard let items = value.arrayValue else { throw .invalidParameter(name, reason: "\(reason), got \(FieldReader.describe(value))") }
        var strings: [String] = []
        for item in items {
            guard let string = item.stringValue else {
                throw .invalidParameter(name, reason: "\(reason), got \(FieldReader.describe(item)) among them")
            }
            strings.append(string)
        }
        return strings
    }
}
