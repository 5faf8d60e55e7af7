import WeaveDI
import WeaveDIPosix

/// The built-in `mirror` job kind: a `MirrorEngine` run per job run, its `FileCopier` and
/// `FileHasher` workers made fresh per task by the daemon's container.
struct MirrorJob: SyncJob {
    /// The job's name.
    let name: String
    let settings: MirrorSettings
    let container: WeaveDI.Container

    /// Registers the kind (the sync module does, before the scheduler starts).
    static func registerKind() {
        SyncJobKinds.register("mirror") { job, container in
            guard let mirror = job.mirror else {
                throw ReloadRefusal(description: "job \(job.name): a mirror job needs a source and a destination")
            }
            var settings = MirrorSettings(mirror)
            // A missing destination root fails the run instead of being created: an unmounted
            // backup disk must not be filled underneath. The job's health fix recreates it.
            settings.createsDestination = false
            settings.jobName = job.name
            return MirrorJob(name: job.name, settings: settings, container: container)
        }
    }

    func run(_ context: SyncRunContext) async -> SyncOutcome {
        var settings = self.settings
        let configuration = configurationInEffect()
        settings.otherJobs = configuration.map(otherJobs) ?? []
        let passedSocket = passedControlSocketPath()
        settings.reservedPaths = configuration.map { ReservedPath.all(of: $0, passedSocket: passedSocket) } ?? []
        // Mount points remembered below another source (the job's changed since) mean nothing here.
        if let mounts = context.sourceMounts, mounts.source == settings.source { settings.sourceMounts = mounts.paths }
        settings.sweepsLeftovers = context.cleanupDue
        // Skipped so again, these are errors of the run (below): its progress counts them failed.
        settings.changingTooOften = Set(context.changingFiles.keys.filter {
            ChangingFiles.runsInARow($0, after: context.changingFiles) >= ChangingFiles.runsBeforeError
        })
        let engine = MirrorEngine(settings: settings, container: container)
        var report = await engine.run { progress in
            context.progress(SyncProgress(
                filesDone: progress.filesDone, filesSkipped: progress.filesSkipped, filesFailed: progress.filesFailed,
                filesTotal: progress.filesTotal,
                bytesDone: Int(progress.bytesDone), bytesTotal: Int(progress.bytesTotal)))
        }
        Self.noteRootUnavailable(name, settings, report)
        // A file skipped as changed while being copied in several runs in a row is written all
        // the time, and never in the backup: an error of the run from then on. Only a run that
        // went through the tree counts (and is counted) so.
        let wentThrough = report.result == .success || report.result == .partial
        if wentThrough {
            for path in report.changedWhileCopying {
                let runs = ChangingFiles.runsInARow(path, after: context.changingFiles)
                if runs >= ChangingFiles.runsBeforeError {
                    report.changedTooOften(path, Self.changingTooOften(runs: runs, copyKept: !report.changedWithNoCopy.contains(path)))
                }
            }
        }
        // Said once, when the log lets it through: a notice the log was too quiet for is not
        // taken as said (the level can be raised at run time, `SetLogLevel`).
        if report.destinationIsMountRoot == true, !settings.destinationMountPoint, context.log.isEnabled(.notice, "sync"),
           Self.firstMountPointNotice(for: name)
        {
            context.log.notice("sync", "\(context.job): \(Self.mountPointNotice(settings.destination))")
        }
        for issue in report.unchecked {
            context.log.warning("sync", "\(context.job): \(issue.quoted)")
        }
        for warning in report.warnings.prefix(20) {
            context.log.warning("sync", "\(context.job): skipped \(warning.quoted)")
        }
        if report.warnings.count > 20 { context.log.warning("sync", "\(context.job): \(report.warnings.count - 20) more skipped") }
        // A mode the run changed and left changed is for the operator to give back by hand:
        // each its own line, whatever else failed (they are rare).
        for issue in report.modesNotGivenBack.prefix(Self.modesLogged) {
            context.log.warning("sync", "\(context.job): \(issue.quoted)")
        }
        if report.modesNotGivenBack.count > Self.modesLogged {
            context.log.warning(
                "sync", "\(context.job): \(report.modesNotGivenBack.count - Self.modesLogged) more modes not given back")
        }
        // Each failed item its own line too, up to the 20 the run's record keeps (`failedItems`),
        // when there are several: the run's end says the first only.
        let modes = Set(report.modesNotGivenBack)
        let failed = report.errorCount > 1 ? report.errors.filter { !modes.contains($0) } : []
        for issue in failed.prefix(Self.failuresLogged) {
            context.log.warning("sync", "\(context.job): \(context.runID): \(issue.quoted)")
        }
        let unlogged = report.errorCount - report.modesNotGivenBack.count - min(failed.count, Self.failuresLogged)
        if !failed.isEmpty, unlogged > 0 {
            context.log.warning("sync", "\(context.job): \(context.runID): \(unlogged) more item(s) failed")
        }
        let leftovers = report.leftoversRemoved > 0
            ? "removed \(report.leftoversRemoved) unfinished cop\(report.leftoversRemoved == 1 ? "y" : "ies") (.weavedi-tmp.*) "
                + "left by an interrupted run"
            : nil
        if let leftovers { context.log.notice("sync", "\(context.job): \(leftovers)") }
        let setIDBits = Self.setIDBitsNotice(report)
        if let setIDBits { context.log.warning("sync", "\(context.job): \(setIDBits)") }
        if let first = report.sourceMountsNotKept.first {
            context.log.warning(
                "sync", "\(context.job): \(report.sourceMountsNotKept.count) mount point(s) below the source not remembered "
                    + "(first: \(JSONValue.quotedPathForMessage(first))): a job remembers \(SourceMounts.maximumCount), of at most \(SourceMounts.maximumPathBytes) "
                    + "bytes each; with delete, a run that finds one of them not mounted deletes that part of the destination")
        }
        var outcome = SyncOutcome(result: Self.result(report.result))
        if let kept = report.sourceMounts { outcome.sourceMounts = SyncSourceMounts(source: settings.source, paths: kept) }
        outcome.cleanupDue = context.cleanupDue && !report.leftoverSweepDone
        outcome.copied = report.copied
        outcome.updated = report.updated
        outcome.deleted = report.deleted
        outcome.skipped = report.skipped
        outcome.changedWhileCopying = wentThrough ? report.changedWhileCopying : nil
        outcome.bytes = Int(report.bytes)
        // The modes not given back first: the record keeps 20 errors.
        let listed = report.modesNotGivenBack + report.errors.filter { !modes.contains($0) }
        outcome.errors = listed.prefix(SyncRunRecord.failedItemsKept).map { SyncItemError(path: $0.path, reason: $0.reason) }
        outcome.errorCount = report.errorCount
        if let first = report.errors.first {
            outcome.message = report.result == .failed
                ? first.quoted
                : "\(report.errorCount) item(s) failed; first: \(first.quoted)"
        } else if report.result == .cancelled {
            outcome.message = "stopped at a safe point"
        }
        // What it skipped, after what failed: a run that skipped items is no clean success, and
        // `weavedictl jobs` says so, not only the log.
        if let skip = Self.skippedNotice(report) {
            outcome.message = outcome.message.map { $0 + "; " + skip } ?? skip
        }
        // ... and in the message, when the first error is not one of them.
        var modeNotice: String?
        if let mode = report.modesNotGivenBack.first, report.errors.first != mode {
            let more = report.modesNotGivenBack.count - 1
            modeNotice = "mode not given back: \(mode.quoted)" + (more > 0 ? " (and \(more) more, in the log)" : "")
        }
        let sandbox = runsUnderSystemd() ? Self.sandboxAdvice(settings, report) : nil
        for notice in [sandbox, modeNotice, leftovers, setIDBits].compactMap({ $0 }) {
            outcome.message = outcome.message.map { $0 + "; " + notice } ?? notice
        }
        return outcome
    }

    /// The jobs whose last run failed because their destination root (the one in the map) was
    /// missing, or not mounted (`destinationMountPoint`): only a person mends that, and once
    /// the root is there again an automatic fix starts a run at once instead of the backoff's.
    private static let rootUnavailable = Locked<[String: String]>([:])

    /// Remembers whether the run of `name` that `report` ends failed on its destination root
    /// missing or not mounted (`rootUnavailable`), or not.
    private static func noteRootUnavailable(_ name: String, _ settings: MirrorSettings, _ report: MirrorReport) {
        let unavailable = report.result == .failed && report.errors.first.map { first in
            first.path == settings.destination
                && (first.reason == MirrorRoots.notAMountPoint || first.reason == MirrorRoots.mountPointMissing
                    || first.reason.hasPrefix(MirrorRoots.destinationMissing))
        } == true
        rootUnavailable.withLock { $0[name] = unavailable ? settings.destination : nil }
    }

    /// Whether the last run of `name` failed because `destination`, its root, was missing or
    /// not mounted.
    private static func lastRunFoundNoRoot(_ name: String, _ destination: String) -> Bool {
        rootUnavailable.withLock { $0[name] == destination }
    }

    /// The jobs whose runs have said, in this process, that their destination root is a mount
    /// point they do not require (`mountPointNotice`): each says it once.
    private static let mountPointNoticed = Locked<Set<String>>([])

    /// Whether the job `name` has not said `mountPointNotice` yet in this process; it has now.
    static func firstMountPointNotice(for name: String) -> Bool {
        mountPointNoticed.withLock { $0.insert(name).inserted }
    }

    /// What a run whose destination root is a mount point says (once per job and process) when
    /// the job does not require it (`destinationMountPoint`): unmounted, its empty mount point
    /// would be filled, as a missing root never is.
    static func mountPointNotice(_ destination: String) -> String {
        "the destination root \(JSONValue.quotedPathForMessage(destination)) is a mount point, which the job does not "
            + "require: were its file system unmounted, runs would fill the empty mount point on the file system "
            + "underneath; set \"destinationMountPoint\": true in the job, or make its destination a directory below "
            + "the mount point (runs never create a missing destination root)"
    }

    /// What a run says of the entries it skipped (`skipped 2 item(s); first: "grow": changed while
    /// being copied; …`); nil when there were none.
    static func skippedNotice(_ report: MirrorReport) -> String? {
        guard report.skipped > 0 else { return nil }
        return "skipped \(report.skipped) item(s)" + (report.warnings.first.map { "; first: \($0.quoted)" } ?? "")
    }

    /// Why a file that changed while being copied in `runs` runs in a row (at least
    /// `ChangingFiles.runsBeforeError`) is an error of the run, and what to do; `copyKept`:
    /// whether the destination has an earlier copy of it (`MirrorReport.changedWithNoCopy`).
    static func changingTooOften(runs: Int, copyKept: Bool) -> String {
        "changed while being copied in each of the last \(runs) runs, so the backup has "
            + (copyKept ? "no copy of it as it is now (only an older one)" : "no copy of it at all")
            + "; a file written all the time cannot be copied whole: stop its writer during the run, or "
            + "mirror a snapshot (LVM, btrfs) of its file system"
    }

    /// How many modes not given back a run logs one by one (`MirrorReport.modesNotGivenBack`);
    /// the rest are counted in one line.
    static let modesLogged = 20

    /// How many other failed items a run logs one by one; the rest are counted in one line.
    static let failuresLogged = 20

    /// What a run says, once, of the copies that did not get the set-ID bits of their source's
    /// mode (`SetIDBits`); nil when there were none.
    static func setIDBitsNotice(_ report: MirrorReport) -> String? {
        guard report.setIDBitsNotKept > 0 else { return nil }
        let first = report.firstSetIDBitsNotKept.map { " (first: \(JSONValue.quotedPathForMessage($0)))" } ?? ""
        return "set-user/group-ID bits not kept on \(report.setIDBitsNotKept) item(s)\(first): this process may not set "
            + "them (RestrictSUIDSGID=yes in the unit?; and the kernel clears set-group-ID on a copy whose group the daemon's "
            + "user is not in); the rest of their modes is the source's (to keep the bits too, set RestrictSUIDSGID=no in a "
            + "drop-in, or add the daemon's user to the copy's group)"
    }

    /// What the unit's sandbox has to do with the run's failures (`SandboxAdvice`), under
    /// systemd: a read-only file system (`EROFS`) in the destination names `ReadWritePaths=`, and
    /// a root that failed under `/home`, `/root` or `/run/user` names `ProtectHome=`.
    static func sandboxAdvice(_ settings: MirrorSettings, _ report: MirrorReport) -> String? {
        if report.errors.contains(where: { $0.reason.contains("(\(Errno.readOnlyFileSystem.name))") }) { return SandboxAdvice.readOnly }
        guard let first = report.errors.first, first.path == settings.source || first.path == settings.destination else { return nil }
        return SandboxAdvice.homeHidden(first.path)
    }

    /// Whether the daemon runs under systemd (`DaemonContext.runsUnderSystemd`); false
    /// without the daemon's context in the container.
    private func runsUnderSystemd() -> Bool {
        guard container.isRegistered(DaemonContext.self), let context = container.resolve(DaemonContext.self) else { return false }
        return context.runsUnderSystemd
    }

    /// The daemon's configuration in effect, nil without it in the container.
    private func configurationInEffect() -> DaemonConfiguration? {
        guard container.isRegistered(ConfigurationStore.self), let store = container.resolve(ConfigurationStore.self) else {
            return nil
        }
        return store.current
    }

    /// The path of the control socket systemd passed (`DaemonContext.passedControlSocketPath`),
    /// nil without one or without the daemon's context in the container.
    private func passedControlSocketPath() -> String? {
        guard container.isRegistered(DaemonContext.self), let context = container.resolve(DaemonContext.self) else { return nil }
        return context.passedControlSocketPath
    }

    /// The other mirror jobs of `configuration`, whose trees this run may not overlap.
    private func otherJobs(of configuration: DaemonConfiguration) -> [MirrorSettings.OtherJob] {
        configuration.sync.jobs.compactMap { job in
            guard job.name != name, let mirror = job.mirror else { return nil }
            return MirrorSettings.OtherJob(name: job.name, source: mirror.source, destination: mirror.destination)
        }
    }

    /// Recreates a missing destination root, when asked by hand. An automatic fix does not:
    /// a missing root is most often a disk not mounted, which must not be filled underneath,
    /// and only a person mends it (mounts the disk, or asks the fix by hand): the automatic one
    /// has nothing to do (`FixNotApplicable`, with the run's reason), as with a root that
    /// must be a mount point (`destinationMountPoint`) and is not, or is missing; by hand, that
    /// fails the fix with the reason. Once the root is there (mounted) again after runs failed
    /// on it, the automatic fix says so, which starts a run at once. On a thread of its own,
    /// each step within `StepDeadline.stepLimit`, as a run's start: a destination on a file
    /// system that does not answer fails the fix, named, instead of holding a thread of
    /// Swift's pool for good.
    func prepareForRetry() async throws -> String? {
        let destination = settings.destination
        let byHand = FixRecord.Trigger.current == .manual
        let job = name
        let mountPoint = settings
        let outcome = try await StepDeadline.run(
            limit: StepDeadline.stepLimit, first: MirrorRootStep("checking the destination", destination),
            for: "a mirror job's fix"
        ) { note throws(MirrorRoots.Failure) -> Preparation in
            if mountPoint.destinationMountPoint {
                // Never created, nor run into unmounted: only a mount there mends it.
                do throws(MirrorRoots.Failure) {
                    try Self.checkMountPoint(mountPoint)
                } catch {
                    let unmounted = error.reason == MirrorRoots.notAMountPoint || error.reason == MirrorRoots.mountPointMissing
                    guard byHand || !unmounted else { return .heldBack("\(error)") }
                    throw error
                }
                return Self.lastRunFoundNoRoot(job, destination) ? .done("the destination root is mounted again") : .done(nil)
            }
            guard (try? FileStatus(path: destination, followSymlinks: true)) == nil else {
                return Self.lastRunFoundNoRoot(job, destination) ? .done("the destination root exists again") : .done(nil)
            }
            guard byHand else {
                return .heldBack(
                    "\(JSONValue.quotedPathForMessage(destination)): the destination root does not exist; an automatic fix does not create it (a disk not "
                        + "mounted must not be filled underneath): mount its file system, or create it with "
                        + "`weavedictl fix job.\(job)`")
            }
            try note(MirrorRootStep("creating the destination", destination))
            try Self.createDestination(destination)
            return .done("created the destination root \(JSONValue.quotedPathForMessage(destination))")
        }
        switch outcome {
        case let .done(what): return what
        case let .heldBack(reason): throw FixNotApplicable(reason)
        }
    }

    /// What the fix's preparation came to: done (what it did, if anything), or nothing an
    /// automatic fix can do (why).
    private enum Preparation: Sendable {
        case done(String?)
        case heldBack(String)
    }

    /// The fix of a job whose destination root must be a mount point (`destinationMountPoint`):
    /// a missing root is not created (a directory made there would be no mount), and one that
    /// is not the root of a mount fails the fix with the run's reason, instead of starting a
    /// run that would fail on it: only mounting its file system mends either.
    private static func checkMountPoint(_ settings: MirrorSettings) throws(MirrorRoots.Failure) {
        let destination = settings.destination
        let root: OwnedDescriptor
        do {
            root = try FileDescriptor.currentWorkingDirectory.open(at: destination, .pathOnly, options: [.directory])
        } catch .noSuchFileOrDirectory {
            throw MirrorRoots.Failure(path: destination, reason: MirrorRoots.mountPointMissing)
        } catch {
            throw MirrorRoots.Failure(path: destination, reason: "the destination root cannot be opened: \(DescriptorLimit.explain(error))")
        }
        _ = try MirrorRoots.checkMountPoint(settings, root.descriptor)
    }

    /// Makes the missing directories of `destination` along its path as configured, one
    /// component at a time without following a link (`MirrorRoots.openComponents`, as runs
    /// open their roots): a link on the way, planted where a missing parent would be, would
    /// have the directory made wherever it leads, and the runs write there. Such a component,
    /// or one that is not a directory, is refused, named, and nothing is made through it.
    private static func createDestination(_ destination: String) throws(MirrorRoots.Failure) {
        var opened = 0
        do {
            _ = try MirrorRoots.openComponents(of: destination, creating: 0o755, opened: &opened)
        } catch .notDirectory, .tooManySymbolicLinkLevels {
            let components = destination.split(separator: "/")
            let part = (destination.hasPrefix("/") ? "/" : "") + components.prefix(opened + 1).joined(separator: "/")
            let kind = (try? FileStatus(path: part, followSymlinks: false))?.kind
            guard kind == .symbolicLink else {
                let what = kind.flatMap { $0 == .directory ? nil : "a \($0.phrase), " } ?? ""
                throw MirrorRoots.Failure(
                    path: destination,
                    reason: "the destination root cannot be created: \(JSONValue.quotedPathForMessage(part)) is \(what)not a directory: "
                        + "remove it, or configure another destination")
            }
            throw MirrorRoots.Failure(
                path: destination,
                reason: "the destination root cannot be created: \(JSONValue.quotedPathForMessage(part)) is a symbolic link, which the fix does not follow "
                    + "(nothing was created through it): create the destination by hand, or configure it by its real path")
        } catch {
            throw MirrorRoots.Failure(path: destination, reason: "the destination root cannot be created: \(DescriptorLimit.explain(error))")
        }
    }

    static func result(_ result: MirrorReport.Result) -> SyncResult {
        switch result {
        case .success: .success
        case .partial: .partial
        case .failed: .failed
        case .cancelled: .cancelled
        }
    }
}
