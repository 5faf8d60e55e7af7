import WeaveDI

extension SyncOutcome {
    /// The largest count or byte total a run's outcome keeps: an integer a JSON number holds
    /// exactly everywhere (2^53 − 1), which `jobs.json`'s reader takes back, and far from
    /// overflowing as the scheduler adds runs up.
    static let maximumCount = (1 << 53) - 1

    /// The outcome as the daemon keeps it, and what was mended in it, said for the log: a job
    /// kind (a program's own) may return anything, and the daemon never writes a state file or a
    /// reply it would itself refuse. Counts are taken into 0...`maximumCount`; the failed items'
    /// paths and reasons are cut to `SyncItemError.byteLimit` bytes (they are `var`s, which
    /// `SyncItemError.init` does not see set); `errorCount` is at least the items listed; a
    /// `sourceMounts` that `jobs.json`'s reader would refuse is not taken (the job keeps what it
    /// remembered).
    func checked() -> (outcome: SyncOutcome, problems: [String]) {
        var outcome = self
        var problems: [String] = []
        func clamp(_ value: inout Int, _ name: String) {
            if value < 0 {
                problems.append("a negative \(name) (\(value)); taken as 0")
                value = 0
            } else if value > Self.maximumCount {
                problems.append("a \(name) past \(Self.maximumCount) (\(value)); taken as \(Self.maximumCount)")
                value = Self.maximumCount
            }
        }
        clamp(&outcome.copied, "filesCopied")
        clamp(&outcome.updated, "filesUpdated")
        clamp(&outcome.deleted, "filesDeleted")
        clamp(&outcome.skipped, "filesSkipped")
        clamp(&outcome.bytes, "bytes")
        clamp(&outcome.errorCount, "errors")
        if outcome.errorCount < outcome.errors.count {
            problems.append("errors \(outcome.errorCount), fewer than its \(outcome.errors.count) failed items; taken as \(outcome.errors.count)")
            outcome.errorCount = outcome.errors.count
        }
        var cut = 0
        for index in outcome.errors.indices {
            let item = outcome.errors[index]
            let path = SyncItemError.capped(item.path), reason = SyncItemError.capped(item.reason)
            if path != item.path || reason != item.reason { cut += 1 }
            outcome.errors[index].path = path
            outcome.errors[index].reason = reason
        }
        if cut > 0 {
            problems.append("\(cut) failed item(s) with a path or reason over \(SyncItemError.byteLimit) bytes; cut to it")
        }
        if let mounts = outcome.sourceMounts {
            let json = JSONValue.object([("source", .string(mounts.source)), ("paths", .array(mounts.paths.map(JSONValue.string)))])
            do throws(PersistedStateProblem) {
                _ = try PersistedJobState.sourceMounts(json)
            } catch {
                problems.append("a sourceMounts the state file would refuse (\(error)); not taken, the job keeps what it remembered")
                outcome.sourceMounts = nil
            }
        }
        return (outcome, problems)
    }
}

extension Int {
    /// `self + other`, or `Int.max` past it: totals of runs (the metrics' counters) never trap.
    func saturatingAdd(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other < 0 ? .min : .max) : sum
    }
}
