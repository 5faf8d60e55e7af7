import Glibc
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Keeps the last run of each job in the state directory (`jobs.json`, replaced atomically),
/// so that after a restart health knows how each job last went. Saves are written off the
/// caller's thread, newest first (`LatestFileWriter`); `flush` waits for them.
struct SyncStateStore: Sendable {
    let path: String
    let directory: String
    let log: DaemonLog
    private let writer: LatestFileWriter

    /// The state file's name in `directory`.
    static let fileName = "jobs.json"
    /// The largest state file read: as large as a JSON document may be (`JSONLimits`).
    static let maximumBytes = 16 << 20
    /// How many names of removed temporary files the log lists.
    static let namesListed = 10
    /// How many jobs' entries refused at start the log names, one line each, and how many whose
    /// fields were dropped; the rest are counted in one line (a damaged file may hold a million).
    static let refusalsLogged = 10

    /// `outcomeChanged`: see `LatestFileWriter.outcomeChanged`.
    init(stateDirectory: String, log: DaemonLog, outcomeChanged: (@Sendable () async -> Void)? = nil) {
        directory = stateDirectory
        path = stateDirectory + "/" + Self.fileName
        self.log = log
        writer = LatestFileWriter(
            purpose: "the jobs' state file", permissions: 0o640, durable: true, makesDirectory: true, log: log,
            outcomeChanged: outcomeChanged)
    }

    /// What the file holds: the jobs' last runs, and the number of the last run started.
    struct Contents: Sendable, Equatable {
        var jobs: [String: PersistedJobState] = [:]
        /// The number in the id (`NAME-N`) of the last run the daemon started, of any job:
        /// the next run is N + 1, so that a run id names one run across restarts. The file's
        /// `lastRunNumber`, or, from a file without it (written before it was kept), the
        /// highest number in the ids of its jobs' last runs; 0 for neither.
        var lastRunNumber = 0
        /// Why a file that is there could not be read (nil when it was, or there is none):
        /// the daemon then starts without the jobs' last results, and run ids start again at 1.
        var unreadable: Unreadable?
    }

    /// A state file that is there but could not be used at the start: why, and what became of it.
    struct Unreadable: Sendable, Equatable {
        /// What became of the file.
        enum Fate: Sendable, Equatable {
            /// Left where it is, as it may be whole (a directory in its place, a file system not
            /// answering; one the daemon may not read refuses the start before this, see
            /// `StateDirectoryLock.unreadableStateFile`) or holds nothing the daemon wrote (a named pipe, a link
            /// to a device): the next write replaces it.
            case leftInPlace
            /// Damaged, or larger than `maximumBytes`: renamed `copy` (`jobs.json.corrupt`).
            case kept(copy: String)
            /// Damaged, or too large, but the rename to `copy` failed with `error`: it stays, and
            /// the next write replaces it.
            case notKept(copy: String, error: String)
        }

        var problem: String
        var fate: Fate
    }

    /// The highest run number the file may say: far beyond any number of runs, and an integer
    /// a JSON number holds exactly everywhere (2^53 − 1).
    static let maximumRunNumber = (1 << 53) - 1

    /// The persisted last runs, by job; empty when there is no file yet. A file that cannot be
    /// read (within the step limit: see `LatestFileWriter`), is no regular file, is larger than
    /// `maximumBytes` or is damaged is reported and ignored (it is rewritten after the next
    /// run; one larger or damaged is kept aside first: see `unreadable`); so is a job's entry with values out of range, but for what only tells about its
    /// last run, which is dropped alone, the rest of the entry kept: a bad `failedItems` or
    /// `message` by itself, any other bad value of `lastRun` with the whole `lastRun`.
    ///
    /// Blocks the calling thread meanwhile (the read is on a thread of its own): the scheduler
    /// calls it as it starts, and a call that suspended would let control calls into the
    /// scheduler before it has its jobs.
    ///
    /// First it removes the temporary files that writes of the state file interrupted by a
    /// crash left in the directory (`removeStaleTemporaryFiles`).
    func load() -> Contents {
        removeStaleTemporaryFiles()
        let step = FileStep("reading the file", path)
        let read: ReadOutcome
        do {
            read = try StepDeadline.run(limit: StepDeadline.stepLimit, first: step, for: "a read of the jobs' state file") {
                [path] _ throws(FileStep.Failure) in
                try Self.read(path, step: step)
            }
        } catch {
            return unreadable(error.problem)
        }
        let bytes: [UInt8]
        switch read {
        case .none: return Contents()
        case .tooLarge: return unreadable("the file is larger than \(Self.maximumBytes) bytes", keeping: "the over-large file")
        case let .bytes(read): bytes = read
        }
        do {
            let value = try JSONValue.parse(bytes)
            // JSON of another shape is no file the daemon wrote either: damaged, not empty.
            guard value.objectMembers != nil else {
                throw PersistedStateProblem(description: "expected an object, got \(PersistedStateProblem.describe(value))")
            }
            if let jobs = value[member: "jobs"], jobs.objectMembers == nil {
                throw PersistedStateProblem(description: "jobs: expected an object, got \(PersistedStateProblem.describe(jobs))")
            }
            var states: [String: PersistedJobState] = [:]
            var refused = 0
            var trimmed = 0
            for (name, member) in value[member: "jobs"]?.objectMembers ?? [] {
                do {
                    var dropped: [PersistedStateProblem] = []
                    states[name] = try PersistedJobState(json: member, job: name, dropped: &dropped)
                    guard !dropped.isEmpty else { continue }
                    // What only tells about the last run: the entry is kept without it.
                    trimmed += 1
                    guard trimmed <= Self.refusalsLogged else { continue }
                    for problem in dropped {
                        log.warning("sync", "\(path): job \(PersistedStateProblem.quoted(name)): \(problem); \(problem.whatIsDropped) is dropped, "
                            + "the job keeps the rest of its previous results")
                    }
                } catch {
                    // Values no run writes (a count that would overflow at the next failure, a
                    // time whose age is no number of seconds) are not carried into the daemon.
                    refused += 1
                    guard refused <= Self.refusalsLogged else { continue }
                    log.warning("sync", "\(path): job \(PersistedStateProblem.quoted(name)): \(error); starting without its previous results")
                }
            }
            if refused > Self.refusalsLogged {
                log.warning("sync", "\(path): \(refused - Self.refusalsLogged) more jobs' entries refused likewise; "
                    + "those jobs start without their previous results")
            }
            if trimmed > Self.refusalsLogged {
                log.warning("sync", "\(path): \(trimmed - Self.refusalsLogged) more jobs' entries had fields dropped likewise; "
                    + "those jobs keep the rest of their previous results")
            }
            endRunsNeverEnded(&states)
            var contents = Contents(jobs: states)
            for (name, state) in states {
                if let number = state.lastRun.flatMap({ Self.runNumber(of: $0.id, job: name) }) {
                    contents.lastRunNumber = max(contents.lastRunNumber, number)
                }
            }
            do throws(PersistedStateProblem) {
                let kept = try PersistedStateProblem.count(value, "lastRunNumber", maximum: Self.maximumRunNumber, required: false)
                contents.lastRunNumber = max(contents.lastRunNumber, kept)
            } catch {
                log.warning("sync", "\(path): \(error); run ids go on after the highest of the jobs' last runs "
                    + "(the next is NAME-\(contents.lastRunNumber + 1))")
            }
            return contents
        } catch {
            return unreadable("\(error)", keeping: "the damaged file")
        }
    }

    /// Ends the runs the file says were going (`runGoing`): the daemon stopped during them
    /// without ending them (killed, crashed, the power), so none ended, and none will. Each
    /// becomes its job's last run, `failed` with a message saying so (shown by `ListJobs` and
    /// the job's health check), and counts as a failure in a row; the log says so, for the
    /// first `refusalsLogged` jobs one line each, the others counted in one line.
    private func endRunsNeverEnded(_ states: inout [String: PersistedJobState]) {
        var ended = 0
        for name in states.keys.sorted() {
            guard var state = states[name], let going = state.runGoing else { continue }
            let time = DaemonLog.timestamp(TimeSpec(
                seconds: Int64(going.startedAt.rounded(.down)),
                nanoseconds: Int64((going.startedAt - going.startedAt.rounded(.down)) * 1e9)))
            // A run that started while the job's run before it had never ended either (the job
            // ran again at once after the start, `unfinished`): two runs of the job in a row
            // stopped the daemon. One that crashes it would at every start, at once: it is not
            // run again at once (`SyncScheduler.firstWaitAtStart`).
            if state.endedUnfinished {
                state.neverEndedTwice = PersistedJobState.NeverEndedTwice(earlier: state.lastRun?.id, latest: going.id)
            }
            func message(_ id: String) -> String {
                "run \(id), started at \(time), never ended: the daemon stopped without ending it (killed, crashed, the "
                    + "power); its destination may hold part of that run's changes until the next run"
            }
            var said = message(going.id)
            if let twice = state.neverEndedTwice { said += "; " + twice.description }
            // When it stopped is not known: its end is given as its start.
            state.lastRun = SyncRunRecord(
                id: going.id, job: name, outcome: SyncOutcome(result: .failed, message: said),
                startedAt: going.startedAt, endedAt: going.startedAt, duration: 0)
            state.consecutiveFailures = min(state.consecutiveFailures + 1, PersistedJobState.maximumFailures)
            state.backoffLevel = min(state.backoffLevel + 1, PersistedJobState.maximumFailures)
            state.runGoing = nil
            state.endedUnfinished = true
            // What it left where no later walk goes (a mirror's unfinished copies) is for the
            // next run to find: asked until a run says it did (`SyncOutcome.cleanupDue`).
            state.cleanupDue = true
            states[name] = state
            ended += 1
            guard ended <= Self.refusalsLogged else { continue }
            // The id is NAME-N of this job (checked as it was read): a name no configuration
            // allows, from a damaged file, is quoted and shortened, as in the other lines.
            if DaemonConfiguration.Job.hasNameCharacters(name) {
                log.warning("sync", "\(name): \(message(going.id))")
            } else {
                let shown = PersistedStateProblem.quoted(name)
                log.warning("sync", "\(shown): \(message("\(shown)-\(Self.runNumber(of: going.id, job: name) ?? 0)"))")
            }
        }
        if ended > Self.refusalsLogged {
            log.warning("sync", "\(path): \(ended - Self.refusalsLogged) more jobs' runs never ended likewise; each is the "
                + "job's last run now, failed")
        }
    }

    /// The name, in the state directory, of the copy kept of a damaged or over-large state file.
    static let damagedCopyName = fileName + ".corrupt"

    /// The contents of a file that is there but could not be read, or is damaged: none, with
    /// `problem` said (and kept for the `sync.stateFile` check). A damaged file, or a regular
    /// file larger than `maximumBytes` (not parsed; `keeping` names which, for the log), is first
    /// renamed `jobs.json.corrupt`, replacing an earlier such copy (one at most: a file damaged
    /// at every start cannot fill the disk), so that the next write does not destroy what
    /// someone may want to mend or read. What is no regular file (a named pipe, a link to a
    /// device) holds nothing the daemon wrote: it stays, and the next write replaces it (the
    /// link, not what it leads to); so does a file that could not be read (no permission, a
    /// directory in its place, a file system not answering), which may be whole.
    private func unreadable(_ problem: String, keeping: String? = nil) -> Contents {
        var fate = "; the file is replaced at the next run's start"
        var found = Unreadable.Fate.leftInPlace
        if let keeping {
            let copyPath = directory + "/" + Self.damagedCopyName
            let copy = JSONValue.quotedPathForMessage(copyPath)
            if rename(path, copyPath) == 0 {
                fate = "; \(keeping) is kept as \(copy) (replacing an earlier copy, if any)"
                found = .kept(copy: copyPath)
            } else {
                let error = Errno.current
                fate = "; it could not be kept as \(copy) (\(error)), and is replaced at the next run's start"
                found = .notKept(copy: copyPath, error: "\(error)")
            }
        }
        log.warning("sync", "\(path): \(problem); starting without the jobs' previous results (their last runs, and their "
            + "pauses: a job paused before is scheduled again), and run ids start again at NAME-1 (they may repeat ids in "
            + "older logs)" + fate)
        var contents = Contents()
        contents.unreadable = Unreadable(problem: problem, fate: found)
        return contents
    }

    /// The number N of the run id `JOB-N` of `job`; nil for an id of another form, or a
    /// number beyond `maximumRunNumber`.
    static func runNumber(of id: String, job: String) -> Int? {
        guard id.utf8.starts(with: (job + "-").utf8) else { return nil }
        let digits = id.utf8.dropFirst(job.utf8.count + 1)
        guard !digits.isEmpty, digits.count <= 16, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let number = Int(String(decoding: digits, as: UTF8.self)), number <= maximumRunNumber
        else { return nil }
        return number
    }

    /// What a read of the file found.
    private enum ReadOutcome: Sendable {
        /// No file.
        case none
        /// A regular file larger than `maximumBytes`, not read.
        case tooLarge
        case bytes([UInt8])
    }

    /// The file's bytes, or that there is none. Not a regular file (a FIFO whose open would
    /// wait for a writer for good, a device that never ends) is refused unread; one larger than
    /// any the daemon writes is not read either (`tooLarge`).
    private static func read(_ path: String, step: FileStep) throws(FileStep.Failure) -> ReadOutcome {
        let bytes: [UInt8]?
        do {
            bytes = try DaemonConfiguration.readBounded(path: path, maxBytes: maximumBytes)
        } catch {
            switch error {
            case .system(.noSuchFileOrDirectory):
                return .none
            case let .system(error):
                throw step.failure("\(error)", errno: error.rawValue)
            case let .notRegular(kind):
                throw step.failure("not a regular file (\(DaemonConfiguration.describe(kind)))", errno: EINVAL)
            }
        }
        guard let bytes else { return .tooLarge }
        return .bytes(bytes)
    }

    /// Removes the temporary files a write of the state file makes (`.jobs.json.tmp.N`, see
    /// `AtomicFile.isTemporaryFile`) that a crash during the write left in the directory, and
    /// says so: they would otherwise stay for ever, as no write reuses one. Nothing else is
    /// touched: only regular files named exactly so. Called as the daemon starts, before any
    /// write of its own; the listing and the removals run within the step limit, as the read.
    func removeStaleTemporaryFiles() {
        let step = FileStep("listing the directory", directory)
        let outcome: TemporaryFileRemoval
        do {
            outcome = try StepDeadline.run(limit: StepDeadline.stepLimit, first: step, for: "a cleanup of the jobs' state directory") {
                [directory] _ throws(FileStep.Failure) in
                try Self.removeTemporaryFiles(in: directory, step: step)
            }
        } catch {
            log.warning("sync", "\(directory): \(error.problem); stale temporary files of the jobs' state file, if any, stay")
            return
        }
        let removed = outcome.removed
        if !removed.isEmpty {
            let files = removed.count == 1 ? "1 temporary file" : "\(removed.count) temporary files"
            let more = removed.count > Self.namesListed ? ", and \(removed.count - Self.namesListed) more" : ""
            log.notice("sync", "\(directory): removed \(files) left by an interrupted write of the jobs' state file "
                + "(\(removed.prefix(Self.namesListed).joined(separator: ", "))\(more))")
        }
        for (name, error) in outcome.failures {
            log.warning("sync", "\(directory): cannot remove \(name), left by an interrupted write of the jobs' state file: \(error)")
        }
    }

    /// What `removeTemporaryFiles` did: the names removed (sorted) and those it could not remove.
    struct TemporaryFileRemoval: Sendable {
        var removed: [String] = []
        var failures: [(name: String, error: Errno)] = []
    }

    private static func removeTemporaryFiles(in directory: String, step: FileStep) throws(FileStep.Failure) -> TemporaryFileRemoval {
        var outcome = TemporaryFileRemoval()
        do throws(Errno) {
            let opened: OwnedDescriptor
            do {
                opened = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory)
            } catch {
                if error == .noSuchFileOrDirectory { return outcome }  // nothing written there yet
                throw error
            }
            let folder = opened.descriptor
            for entry in try folder.directoryEntries() where entry.nameIsExact && AtomicFile.isTemporaryFile(entry.name, of: fileName) {
                let kind = entry.kind == .unknown ? (try? folder.status(at: entry.name, followSymlinks: false))?.kind : entry.kind
                guard kind == .regular else { continue }
                do {
                    try folder.unlink(at: entry.name)
                    outcome.removed.append(entry.name)
                } catch {
                    outcome.failures.append((entry.name, error))
                }
            }
        } catch {
            throw step.failure("\(error)", errno: error.rawValue)
        }
        outcome.removed.sort()
        return outcome
    }

    /// Asks for every job's state, and the number of the last run started, to be written;
    /// returns at once, with the write's generation (`waitForSave`).
    @discardableResult
    func save(_ states: [String: PersistedJobState], lastRunNumber: Int) -> UInt64 {
        let json = JSONValue.object([
            ("lastRunNumber", .int(lastRunNumber)),
            ("jobs", .object(states.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) })),
        ])
        return writer.write(Array(json.serialized.utf8), to: path)
    }

    /// Waits until a write of the save of `generation` or a later one has ended, for at most
    /// `limit`: true if one did.
    func waitForSave(_ generation: UInt64, limit: Duration) async -> Bool {
        await writer.waitForWrite(generation, limit: limit)
    }

    /// How the last save ended: nil before the first one ended, else what went wrong (nil for
    /// a save that wrote the file).
    var lastWriteProblem: String?? { writer.lastWrite.map(\.problem) }

    /// Waits for the saves asked for so far.
    func flush() async {
        await writer.flush()
    }
}

/// What survives a restart of one job: its last run, last success and failures in a row, and
/// the run going when the file was written.
struct PersistedJobState: Sendable, Equatable {
    var lastRun: SyncRunRecord?
    var lastSuccess: Double?
    var consecutiveFailures: Int
    /// How far the job's backoff has grown (`SyncScheduler.backoff(_:level:)`): each failed run
    /// raises it, a successful or partial run and the job's fix asked by hand reset it (the
    /// fix leaves the failures in a row counted), so that a restart keeps the backoff.
    /// `backoffLevel` in the file; a file without it (written before it was kept) takes the
    /// failures in a row.
    var backoffLevel: Int
    /// The run going (it had its slot and started) when the file was written; nil once it
    /// ended, and after a clean shutdown. One still there at the start never ended: the daemon
    /// was killed, crashed or lost the power during it (`SyncStateStore.endRunsNeverEnded`).
    /// `runGoing` in the file, absent in files written before it was kept.
    var runGoing: RunGoing?
    /// Whether the job was paused (`PauseJob`): a pause outlives a restart. `paused` in the
    /// file, absent (false) in files written before it was kept.
    var paused = false
    /// When the daemon first had the job in its configuration, in seconds since 1970: a job
    /// that has never run has its first run counted from it, across restarts
    /// (`SyncScheduler.firstWaitAtStart`). `firstSeenAt` in the file; absent in files written
    /// before it was kept, and for jobs the daemon had not seen yet: the job is first seen at
    /// this start.
    var firstSeenAt: Double?
    /// Whether the job's last run that did work never ended: one the file said going at a
    /// start (`SyncStateStore.endRunsNeverEnded`), and no run of the job has done work since.
    /// The job runs again soon after each start until one has, its destination half done
    /// meanwhile. `unfinished` in the file, so that a write before that run starts and another
    /// restart do not lose it; absent (false) in files written before it was kept.
    var endedUnfinished = false
    /// The file systems the job's runs found mounted below its source (`SyncSourceMounts`): a
    /// mirror with `delete` deletes nothing under one found unmounted later. `sourceMounts` in
    /// the file; absent in files written before it was kept, and for jobs that found none.
    var sourceMounts: SyncSourceMounts?
    /// Whether a run of the job never ended and no run since has done what that calls for
    /// (`SyncRunContext.cleanupDue`: a mirror sweeps its destination for unfinished copies).
    /// `cleanupDue` in the file; absent (false) in files written before it was kept.
    var cleanupDue = false
    /// The files the job's runs skipped in a row as changed while being copied
    /// (`ChangingFiles`): a restart does not count them again from 0. `changingFiles` in the
    /// file; absent in files written before it was kept, and for jobs without any.
    var changing: ChangingFiles?

    /// Set as the file is read when the run going (`runGoing`) started while the job's run
    /// before it had never ended either (`endedUnfinished`): two runs of the job in a row
    /// stopped the daemon, and the job is not run again at once after this start. Not written.
    var neverEndedTwice: NeverEndedTwice?

    /// Two runs of a job in a row that never ended: the earlier (nil when the file no longer
    /// names it) and the later.
    struct NeverEndedTwice: Sendable, Equatable, CustomStringConvertible {
        var earlier: String?
        var latest: String

        /// `runs docs-1 and docs-2`, or `run docs-2 and the one before it`, for the log.
        var runs: String { earlier.map { "runs \($0) and \(latest)" } ?? "run \(latest) and the one before it" }

        /// What the job's last run and its health check say of it.
        var description: String {
            "\(earlier.map { "run \($0)" } ?? "the run") before it never ended either: the job's runs stopped the daemon twice "
                + "in a row (a run that crashes it?), so it does not run again at once after a start, but at its interval"
        }
    }

    /// A run that started and has not ended: `runGoing` of the state file.
    struct RunGoing: Sendable, Equatable {
        /// `JOB-N`.
        var id: String
        /// When it started, in seconds since 1970.
        var startedAt: Double
    }

    init(
        lastRun: SyncRunRecord?, lastSuccess: Double?, consecutiveFailures: Int, backoffLevel: Int? = nil, runGoing: RunGoing? = nil,
        paused: Bool = false, firstSeenAt: Double? = nil, endedUnfinished: Bool = false, sourceMounts: SyncSourceMounts? = nil,
        cleanupDue: Bool = false
    ) {
        self.backoffLevel = backoffLevel ?? consecutiveFailures
        self.sourceMounts = sourceMounts
        self.cleanupDue = cleanupDue
        self.lastRun = lastRun
        self.lastSuccess = lastSuccess
        self.consecutiveFailures = consecutiveFailures
        self.runGoing = runGoing
        self.paused = paused
        self.firstSeenAt = firstSeenAt
        self.endedUnfinished = endedUnfinished
    }

    var json: JSONValue {
        .object([
            ("lastRun", lastRun.map(SyncRunEncoding.record) ?? .null),
            ("lastSuccess", lastSuccess.map(JSONValue.double) ?? .null),
            ("consecutiveFailures", .int(consecutiveFailures)),
            ("backoffLevel", .int(backoffLevel)),
            ("changingFiles", changing?.json ?? .null),
            ("runGoing", runGoing.map { .object([("id", .string($0.id)), ("startedAt", .double($0.startedAt))]) } ?? .null),
            ("paused", .bool(paused)),
            ("firstSeenAt", firstSeenAt.map(JSONValue.double) ?? .null),
            ("unfinished", .bool(endedUnfinished)),
            ("sourceMounts", sourceMounts.map { mounts in
                .object([("source", .string(mounts.source)), ("paths", .array(mounts.paths.map(JSONValue.string)))])
            } ?? .null),
            ("cleanupDue", .bool(cleanupDue)),
        ])
    }

    /// The most failures in a row a file may say: far beyond any threshold, and far from
    /// overflowing as more are counted.
    static let maximumFailures = Int(Int32.max)

    /// Reads the entry of the job `job`; a value missing, of the wrong type or out of range is
    /// refused, and so is a `runGoing` whose id is no run id of `job` (`JOB-N`). What only
    /// tells about the last run is dropped instead, said in `dropped`: a `failedItems` or
    /// `message` no run writes alone (`SyncRunEncoding.record(from:dropped:)`), any other
    /// value of `lastRun` no run writes with the whole `lastRun`; so is a `firstSeenAt`, an
    /// `unfinished`, a `sourceMounts`, a `cleanupDue` or a `backoffLevel` no run writes, alone.
    /// Members it does not know are passed over.
    init(json: JSONValue, job: String, dropped: inout [PersistedStateProblem]) throws(PersistedStateProblem) {
        let failures = try PersistedStateProblem.count(json, "consecutiveFailures", maximum: Self.maximumFailures)
        consecutiveFailures = failures
        // It tells only how long the next wait after a failure may be: one no run writes is
        // dropped alone, and the failures in a row stand for it, as in a file without it.
        backoffLevel = Self.alone(or: failures, dropped: &dropped) { () throws(PersistedStateProblem) in
            json[member: "backoffLevel"] == nil
                ? failures : try PersistedStateProblem.count(json, "backoffLevel", maximum: Self.maximumFailures)
        }
        lastSuccess = try PersistedStateProblem.time(json, "lastSuccess", optional: true)
        if let run = json[member: "lastRun"], !run.isNull {
            // A last run no run wrote (not an object, a count or a time out of range, an
            // unknown result) is dropped whole: what it would show is no run's, but the rest of
            // the entry (the pause, the failures in a row, the last success) is kept.
            var droppedFromRun: [PersistedStateProblem] = []
            do {
                lastRun = try SyncRunEncoding.record(from: run, dropped: &droppedFromRun)
                dropped += droppedFromRun
            } catch {
                var problem = error
                problem.whatIsDropped = "the whole lastRun"
                dropped.append(problem)
                lastRun = nil
            }
        } else {
            lastRun = nil
        }
        if let going = json[member: "runGoing"], !going.isNull {
            let prefix = "runGoing."
            guard going.objectMembers != nil else {
                throw PersistedStateProblem(description: "runGoing: expected an object or null, got \(PersistedStateProblem.describe(going))")
            }
            let id = try PersistedStateProblem.string(going, "id", prefix: prefix)
            guard SyncStateStore.runNumber(of: id, job: job) != nil else {
                throw PersistedStateProblem(
                    description: "runGoing.id: expected a run id of the job (NAME-N), got \(PersistedStateProblem.describe(.string(id)))")
            }
            let startedAt = try PersistedStateProblem.time(going, "startedAt", prefix: prefix) ?? 0
            runGoing = RunGoing(id: id, startedAt: startedAt)
        } else {
            runGoing = nil
        }
        paused = try PersistedStateProblem.flag(json, "paused")
        changing = ChangingFiles.read(json, dropped: &dropped)
        // It tells only when the first run of a job that never ran is due: one no run writes is
        // dropped alone, and the job is first seen at this start, as from a file without it.
        firstSeenAt = Self.alone(or: nil, dropped: &dropped) { () throws(PersistedStateProblem) in
            try PersistedStateProblem.time(json, "firstSeenAt", optional: true)
        }
        // It tells only whether the job runs again at once after a start: one no run writes is
        // dropped alone, as from a file without it.
        endedUnfinished = Self.alone(or: false, dropped: &dropped) { () throws(PersistedStateProblem) in
            try PersistedStateProblem.flag(json, "unfinished")
        }
        // They only guard a deleting mirror against a file system that did not mount: one no
        // run writes is dropped alone (said in the log), the job remembering none until its
        // next run looks again.
        sourceMounts = Self.alone(or: nil, dropped: &dropped) { () throws(PersistedStateProblem) in
            try Self.sourceMounts(json[member: "sourceMounts"])
        }
        // Whether a sweep is due: a value no run writes is dropped alone, as from a file without
        // it (no sweep asked).
        cleanupDue = Self.alone(or: false, dropped: &dropped) { () throws(PersistedStateProblem) in
            try PersistedStateProblem.flag(json, "cleanupDue")
        }
    }

    /// A member read by `read` that is dropped alone when it holds a value no run writes: its
    /// problem goes to `dropped` (said in the log), and the entry takes `fallback`, as from a
    /// file without it.
    private static func alone<T>(
        or fallback: T, dropped: inout [PersistedStateProblem], _ read: () throws(PersistedStateProblem) -> T
    ) -> T {
        do {
            return try read()
        } catch {
            dropped.append(error)
            return fallback
        }
    }

    /// `sourceMounts` as a run writes it: null, or an object with the absolute `source` it was
    /// found below and at most `SourceMounts.maximumCount` `paths` relative to it (names that
    /// are not empty, `.` or `..`, at most `SourceMounts.maximumPathBytes` bytes each).
    static func sourceMounts(_ value: JSONValue?) throws(PersistedStateProblem) -> SyncSourceMounts? {
        typealias Check = PersistedStateProblem
        guard let value, !value.isNull else { return nil }
        guard value.objectMembers != nil else {
            throw Check(description: "sourceMounts: expected an object or null, got \(Check.describe(value))")
        }
        let source = try Check.string(value, "source", prefix: "sourceMounts.")
        guard source.hasPrefix("/"), source.utf8.count <= 4096, !source.utf8.contains(0) else {
            throw Check(description: "sourceMounts.source: expected an absolute path, got \(Check.describe(.string(source)))")
        }
        guard let list = value[member: "paths"]?.arrayValue else {
            throw Check(description: "sourceMounts.paths: expected an array, got \(Check.describe(value[member: "paths"]))")
        }
        guard list.count <= SourceMounts.maximumCount else {
            throw Check(description: "sourceMounts.paths: expected at most \(SourceMounts.maximumCount) items, got \(list.count)")
        }
        var paths: [String] = []
        for (index, item) in list.enumerated() {
            guard let path = item.stringValue else {
                throw Check(description: "sourceMounts.paths[\(index)]: expected a string, got \(Check.describe(item))")
            }
            if let problem = SourceMounts.problem(path) {
                throw Check(description: "sourceMounts.paths[\(index)]: \(problem)")
            }
            paths.append(path)
        }
        return SyncSourceMounts(source: source, paths: paths)
    }
}

/// Why an entry of the jobs' state file was not taken: `consecutiveFailures: expected an integer
/// from 0 to 2147483647, got -5`.
struct PersistedStateProblem: Error, CustomStringConvertible {
    var description: String
    /// What is dropped for it, when only a part of the entry is (`that field`, `the whole
    /// lastRun`), for the log line.
    var whatIsDropped = "that field"

    /// The latest time a file may say, in seconds since 1970 (in the year 5138): later ones,
    /// and earlier ones than 1970, are no time a run of the daemon ended.
    static let latestTime: Double = 1e11

    /// The integer `name` of `json`, from 0 to `maximum`; 0 when absent and not `required`. A
    /// whole number however written (`3.0`, `-0`) is that integer, as in the configuration
    /// (`JSONValue.wholeNumber`): a file edited by hand may say so.
    /// The message names it `label`, when given (a member whose name is a path from outside,
    /// quoted), else `prefix` and `name`.
    static func count(
        _ json: JSONValue, _ name: String, prefix: String = "", label: String? = nil, maximum: Int? = nil, required: Bool = true
    ) throws(Self) -> Int {
        let value = json[member: name]
        if value == nil, !required { return 0 }
        guard let number = value?.wholeNumber, number >= 0, number <= maximum ?? Int.max else {
            let range = maximum.map { "from 0 to \($0)" } ?? "from 0"
            throw Self(description: "\(label ?? prefix + name): expected an integer \(range), got \(describe(value))")
        }
        return number
    }

    /// The time `name` of `json`, seconds since 1970 up to `latestTime`; nil when absent or
    /// null and `optional`.
    static func time(_ json: JSONValue, _ name: String, prefix: String = "", optional: Bool = false) throws(Self) -> Double? {
        let value = json[member: name]
        if optional, value == nil || value?.isNull == true { return nil }
        guard let seconds = value?.numberValue, seconds.isFinite, seconds >= 0, seconds <= latestTime else {
            throw Self(description: "\(prefix)\(name): expected a time in seconds since 1970, got \(describe(value))")
        }
        return seconds
    }

    /// The flag `name` of `json`: true or false, false when absent or null.
    static func flag(_ json: JSONValue, _ name: String) throws(Self) -> Bool {
        switch json[member: name] {
        case nil, .null?: return false
        case let .bool(value)?: return value
        case let other?: throw Self(description: "\(name): expected true or false, got \(describe(other))")
        }
    }

    /// The string `name` of `json`.
    static func string(_ json: JSONValue, _ name: String, prefix: String = "") throws(Self) -> String {
        guard let string = json[member: name]?.stringValue else {
            throw Self(description: "\(prefix)\(name): expected a string, got \(describe(json[member: name]))")
        }
        return string
    }

    /// A value as the file has it (a double as Swift prints it), or `nothing`; past 60
    /// characters, its first 57 then `...` and its length, so that a value of megabytes in a
    /// damaged file makes no log line of megabytes.
    static func describe(_ value: JSONValue?) -> String {
        switch value {
        case nil: "nothing"
        case let .double(number)?: "\(number)"
        case let .string(text)?: quoted(text)
        case let value?: shortened(value.serialized)
        }
    }

    /// `text` as a JSON string, shortened as `describe` shortens values: a job's name or a
    /// string value from the file, for a message.
    static func quoted(_ text: String) -> String {
        JSONValue.quotedForMessage(text)
    }

    private static func shortened(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > 60 else { return text }
        return String(String.UnicodeScalarView(scalars.prefix(57))) + "... (\(scalars.count) characters)"
    }
}
