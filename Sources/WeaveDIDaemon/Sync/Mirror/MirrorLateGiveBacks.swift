import WeaveDI

/// What a run's start did on its own after the run stopped waiting for it, kept for the next
/// run of the same destination to report.
///
/// A run that stops waiting for its roots to open (cancelled, or a step that did not answer:
/// `StepDeadline`) leaves the opening to finish on its thread; roots opened then, that nobody
/// takes, give the destination root the mode it was found with when it was opened as its
/// owner may (`OpenedRoots`). The run's report is made by then: what could not be given back
/// (or was given back without a set-ID bit the process may not set) is kept here, by the
/// destination (its path with `//`, `.` and trailing slashes collapsed: `/backup/docs/` is
/// `/backup/docs`) and the daemon job it was for, and the next run into that destination
/// reports it with its own. What was kept for a daemon job into a destination no job has
/// now (a reload removed the job, or changed its destination) is reported by the next run of
/// any job, naming that job: it would otherwise wait for good for a run that never comes, and
/// the mode is still the operator's to give back. (Its set-ID bits not kept, a warning about a
/// root no job mirrors into any more, go unsaid.)
enum MirrorLateGiveBacks {
    private struct Kept {
        /// The daemon job whose run it was, if any (`MirrorSettings.jobName`).
        var job: String?
        var report: MirrorReport
    }

    private static let pending = Locked<[String: Kept]>([:])

    /// The key of `destination`: its components without empty ones (`//`, a trailing `/`) and
    /// `.`; `..` is kept, as a link may be before it.
    static func key(_ destination: String) -> String {
        let components = destination.split(separator: "/").filter { $0 != "." }
        let joined = components.joined(separator: "/")
        return destination.hasPrefix("/") ? "/" + joined : joined
    }

    /// Keeps `report` (a root's mode not given back) for the next run into `destination`, of
    /// the daemon job `job` (nil outside a job).
    static func keep(_ report: MirrorReport, for destination: String, job: String?) {
        pending.withLock { pending in
            let key = key(destination)
            var kept = pending[key] ?? Kept(job: job, report: MirrorReport())
            kept.job = job
            kept.report.absorb(report)
            pending[key] = kept
        }
    }

    /// Adds what was kept for the destination of `settings` to `report`, a run into it, once:
    /// its errors make a run that succeeded otherwise `partial`. A daemon job's run adds too
    /// what was kept for daemon jobs into a destination neither it nor `settings.otherJobs` has
    /// (the job removed by a reload, or its destination changed), naming that job.
    static func report(for settings: MirrorSettings, into report: inout MirrorReport) {
        let own = key(settings.destination)
        let (late, orphaned) = pending.withLock { pending -> (MirrorReport?, [(job: String, kept: MirrorReport)]) in
            let late = pending.removeValue(forKey: own)?.report
            guard settings.jobName != nil else { return (late, []) }
            let destinations = Set(settings.otherJobs.map { key($0.destination) })
            let orphans = pending.compactMap { key, kept in
                kept.job.flatMap { destinations.contains(key) ? nil : (key: key, job: $0, report: kept.report) }
            }
            for orphan in orphans { pending.removeValue(forKey: orphan.key) }
            return (late, orphans.sorted { ($0.job, $0.key) < ($1.job, $1.key) }.map { ($0.job, $0.report) })
        }
        var errors = late?.errorCount ?? 0
        if let late { report.absorb(late) }
        for (job, kept) in orphaned {
            var adopted = MirrorReport()
            let named = { (issue: MirrorIssue) in
                MirrorIssue(
                    path: issue.path,
                    reason: "(kept for a run of the job \(DaemonConfiguration.Job.quoted(job)) into a destination no job has now) " + issue.reason)
            }
            for issue in kept.errors { adopted.fail(issue.path, named(issue).reason) }
            adopted.errorCount = kept.errorCount
            adopted.modesNotGivenBack = kept.modesNotGivenBack.map(named)
            errors += adopted.errorCount
            report.absorb(adopted)
        }
        if report.result == .success, errors > 0 { report.result = .partial }
    }
}
