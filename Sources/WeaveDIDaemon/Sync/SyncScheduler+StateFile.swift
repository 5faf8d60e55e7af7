import WeaveDI

extension SyncScheduler {
    /// The name of the jobs' state file's check.
    static let stateFileCheck = "sync.stateFile"

    /// `sync.stateFile`: degraded while the last write of the jobs' state file (`jobs.json`)
    /// failed (its directory not writable, its file system full, a directory in its place), for
    /// a restart then loses the jobs' last results and the run count; before any write, while
    /// the file could not be read at the start (`stateFileUnreadable`), with advice that fits
    /// what became of it: left in place (what stands there, or the permissions, to mend), or
    /// damaged and kept as `jobs.json.corrupt` (nothing to mend). Its fix writes the file
    /// again, at once, and fails while that write does.
    func registerStateFileCheck() {
        registry.register(HealthCheck(name: Self.stateFileCheck, tags: ["sync"]) { [weak self] in
            await self?.stateFileHealth() ?? .healthy("the scheduler is gone")
        } fix: { [weak self] in
            guard let self else { throw FixNotApplicable("the scheduler is gone") }
            return try await self.rewriteStateFile()
        })
    }

    func stateFileHealth() -> HealthCheckResult {
        let path = stateStore.path
        let quoted = JSONValue.quotedPathForMessage(path)
        guard let last = stateStore.lastWriteProblem else {
            if let unreadable = stateFileUnreadable {
                let fresh = "the jobs started without their last results and pauses (a job paused before is scheduled again), "
                    + "and run ids started again at NAME-1 (they may repeat ids in older logs)"
                let write = "(at the next run's start, or now: weavedictl fix \(Self.stateFileCheck))"
                switch unreadable.fate {
                case .leftInPlace:
                    return .degraded(
                        "could not read the jobs' state file \(quoted) at the start: \(unreadable.problem); \(fresh): move away "
                            + "what stands in the file's place, or mend its directory's permissions; a write replaces the file \(write)",
                        data: ["path": path])
                case let .kept(copy):
                    // Set aside already: nothing to mend, a write makes a new file.
                    return .degraded(
                        "could not use the jobs' state file \(quoted) at the start: \(unreadable.problem); it was kept as "
                            + "\(JSONValue.quotedPathForMessage(copy)), and \(fresh); a write makes a new file \(write); "
                            + "the kept copy is not read again: look into it if you want, then delete it",
                        data: ["path": path, "copy": copy])
                case let .notKept(copy, error):
                    return .degraded(
                        "could not use the jobs' state file \(quoted) at the start: \(unreadable.problem); it could not be kept "
                            + "as \(JSONValue.quotedPathForMessage(copy)) (\(error)) and stays in place, and \(fresh); a write "
                            + "replaces the file \(write): copy it elsewhere first to keep it",
                        data: ["path": path])
                }
            }
            return .healthy("not written yet (it is written as each run starts and ends, and when a job is first configured)", data: ["path": path])
        }
        if let problem = last {
            return .degraded(
                "cannot write the jobs' state file \(quoted): \(problem); until a write succeeds, a restart loses the jobs' last "
                    + "results (health would not know how each job last went) and the count of runs (run ids would be given "
                    + "again): make \(JSONValue.quotedPathForMessage(stateStore.directory)) writable by the daemon, free space on its file system, or move away "
                    + "what stands in the file's place (the check's fix writes it again: weavedictl fix \(Self.stateFileCheck))",
                data: ["path": path])
        }
        return .healthy("the last write succeeded", data: ["path": path])
    }

    /// The check's fix: writes the state file now and waits for the write.
    func rewriteStateFile() async throws -> String {
        saveState()
        await stateStore.flush()
        if let problem = stateStore.lastWriteProblem ?? nil {
            throw FileWriteFailure(description: "cannot write the jobs' state file \(JSONValue.quotedPathForMessage(stateStore.path)): \(problem)")
        }
        return "wrote \(JSONValue.quotedPathForMessage(stateStore.path))"
    }
}
