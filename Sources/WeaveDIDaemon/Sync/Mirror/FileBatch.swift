import WeaveDI
import WeaveDIPosix

/// One file or link of a directory that needs work.
struct FileJob: Sendable {
    enum Action: Sendable {
        /// Copy the file (new, or replacing what the destination has).
        case copy
        /// Checksum mode: compare both contents, then copy or just fix mode and mtime.
        case verify
        /// Same content; give the destination file the source's mode and mtime.
        case fixAttributes
        /// Create (or replace with) a link to `target`.
        case link(target: String)
        /// Same link target; give the destination link the source link's mtime.
        case fixLinkTime

        /// Whether the action adds and replaces a name in the directory (a temporary file or
        /// link, then its rename), which needs write access to the directory; setting an
        /// entry's mode or times does not, and `verify` does only when the contents differ.
        var alwaysChangesTheDirectory: Bool {
            switch self {
            case .copy, .link: true
            case .verify, .fixAttributes, .fixLinkTime: false
            }
        }
    }

    let name: String
    let action: Action
    /// The source entry's `lstat` at listing time.
    let source: FileStatus
    /// Whether the destination had nothing under this name (a copy then counts as `copied`).
    let isNew: Bool
    /// Whether the destination has a regular file under this name, an earlier copy, which
    /// stays where the copy is not published (a source that changed during it).
    var hasEarlierCopy = false

    /// The bytes this job reads or copies, for progress.
    var plannedBytes: Int64 {
        switch action {
        case .copy, .verify: source.size
        case .fixAttributes, .link, .fixLinkTime: 0
        }
    }
}

/// Files of one directory handled by one task.
struct FileBatch: Sendable {
    let directory: MirrorDirectory
    let jobs: [FileJob]

    /// Files larger than this get a task of their own.
    static let largeFile: Int64 = 1 << 20
    /// A batch of small files stops at this many files...
    static let maximumFiles = 32
    /// ...or this many bytes.
    static let maximumBytes: Int64 = 2 << 20

    /// Splits a directory's jobs into batches: one per large file, small ones grouped.
    static func split(_ jobs: [FileJob], in directory: MirrorDirectory) -> [FileBatch] {
        var batches: [FileBatch] = []
        var current: [FileJob] = []
        var bytes: Int64 = 0
        for job in jobs {
            if job.plannedBytes >= largeFile {
                batches.append(FileBatch(directory: directory, jobs: [job]))
                continue
            }
            if current.count == maximumFiles || bytes + job.plannedBytes > maximumBytes {
                batches.append(FileBatch(directory: directory, jobs: current))
                current = []
                bytes = 0
            }
            current.append(job)
            bytes += job.plannedBytes
        }
        if !current.isEmpty { batches.append(FileBatch(directory: directory, jobs: current)) }
        return batches
    }
}

/// A copy or link of a durable batch written under its temporary name, waiting to be renamed.
enum Prepared {
    case file(PreparedCopy)
    case link(temporary: String)

    var isLink: Bool {
        if case .link = self { return true }
        return false
    }
}

extension FileBatch {
    /// Does the batch's jobs in order with one fresh `FileCopier` (and `FileHasher` for
    /// checksum comparisons) from the context's container; stops between files when the task
    /// is cancelled. Blocking I/O: runs in a worker task.
    ///
    /// When durable, copies and links are published in two passes: first each file is written to
    /// its temporary name and its writeback started, and each link made under its temporary
    /// name; then the batch's copies and links are made durable and renamed. Where `BatchFlush`
    /// can be used (ext4, XFS, Btrfs on Linux 5.8 or later), one `syncfs` makes all of them
    /// durable before the first rename, and a failing `syncfs` publishes none of them; elsewhere
    /// each file is flushed with `fsync` and renamed in turn, and the links, which cannot be
    /// opened to be flushed, are put on stable storage together (`BatchFlush.flush`) before
    /// the first rename. Either way nothing is renamed before it is on stable storage.
    func run(_ context: MirrorContext) -> BatchOutcome {
        var outcome = BatchOutcome()
        let copier: FileCopier
        do {
            copier = try context.container.makeFresh(FileCopier.self)
        } catch {
            for job in jobs {
                outcome.report.fail(directory.path(of: job.name), MirrorFailure.noWorker("\(error)").description)
                settle(job, done: false, in: &outcome, context)
            }
            return outcome
        }
        let durable = context.settings.durable
        do {
            try WalkWatch.begin(.openingDirectory(.destination), nil, in: directory)
        } catch {
            outcome.interrupted = true  // the run was given up on, or is failing
            return outcome
        }
        // Opened before the batch's first write, so that its syncfs reports the batch's errors.
        let flush = durable ? BatchFlush.begin(in: directory.destination.descriptor) : nil
        var hasher: FileHasher? = nil
        var prepared: [(job: FileJob, copy: Prepared)] = []
        for job in jobs {
            if Task.isCancelled {
                outcome.interrupted = true
                break
            }
            var done = true, skipped = false
            do {
                if let copy = try perform(job, copier: copier, hasher: &hasher, context: context, outcome: &outcome) {
                    if durable {
                        prepared.append((job, copy))
                        continue
                    }
                    try publish(copy, of: job, copier: copier, durable: false, outcome: &outcome)
                }
            } catch .cancelled {
                outcome.interrupted = true
                break
            } catch {
                done = !fail(job, error, in: &outcome) && !context.settings.changingTooOften.contains(directory.path(of: job.name))
                skipped = done  // a warning: skipped, not copied (one the run turns into an error counts failed)
            }
            settle(job, done: done, skipped: skipped, in: &outcome, context)
        }
        // Whole copies, checked: published even after a cancellation, which stops between files.
        var flushed = false
        if !prepared.isEmpty {
            do throws(MirrorFailure) {
                let failure = context.settings.flushFailure
                try WalkWatch.begin(.flushing, nil, bytes: prepared.reduce(0) { $0 + $1.job.plannedBytes })
                if let flush {
                    try flush.flush(failure: failure)
                    flushed = true
                    outcome.report.fileSystemFlushes += 1
                } else if prepared.contains(where: { $0.copy.isLink }) {
                    try BatchFlush.flush(directory.destination.descriptor, failure: failure)
                    outcome.report.linkFlushes += 1
                }
            } catch {
                // Some write of the file system failed: publish none of the batch's copies.
                for (job, copy) in prepared {
                    discard(copy, copier: copier)
                    outcome.report.fail(directory.path(of: job.name), error.description)
                    settle(job, done: false, in: &outcome, context)
                }
                return outcome
            }
        }
        for (job, copy) in prepared {
            var done = true, skipped = false
            do {
                try publish(copy, of: job, copier: copier, durable: !flushed, outcome: &outcome)
            } catch {
                done = !fail(job, error, in: &outcome) && !context.settings.changingTooOften.contains(directory.path(of: job.name))
                skipped = done  // a warning: skipped, not copied (one the run turns into an error counts failed)
            }
            settle(job, done: done, skipped: skipped, in: &outcome, context)
        }
        return outcome
    }

    /// Counts `job` handled, and done unless it failed (`done`: the progress counts only what
    /// was done, so that a run whose writes fail, a full disk, ends short of its totals, not at
    /// 100 %; one that failed counts among the failed; one `skipped` with a warning is done, its
    /// bytes not: they leave the total), and hands what the batch did so far over to the run's
    /// tally (a run given up on while the batch is under way counts it).
    private func settle(
        _ job: FileJob, done: Bool, skipped: Bool = false, in outcome: inout BatchOutcome, _ context: MirrorContext
    ) {
        if done && skipped {
            // Done, but nothing of it copied: its bytes leave the total (`MirrorProgress`).
            outcome.doneFiles += 1
            outcome.skippedFiles += 1
            outcome.skippedBytes += job.plannedBytes
        } else if done {
            outcome.doneFiles += 1
            outcome.doneBytes += job.plannedBytes
        } else {
            outcome.failedFiles += 1
        }
        context.tally.handOver(&outcome.report)
    }

    /// Records why `job` could not be done; whether that is an error (not a warning: a source
    /// that changed under the run skips the file, `MirrorReport.fail(_:_:)`, which counts done).
    private func fail(_ job: FileJob, _ failure: MirrorFailure, in outcome: inout BatchOutcome) -> Bool {
        outcome.report.failIsError(directory.path(of: job.name), failure)
    }

    private func publish(
        _ copy: Prepared, of job: FileJob, copier: FileCopier, durable: Bool, outcome: inout BatchOutcome
    ) throws(MirrorFailure) {
        let destination = directory.destination.descriptor
        switch copy {
        case let .file(file):
            outcome.report.bytes += try copier.publish(file, in: destination, durable: durable)
            if durable { outcome.report.fileFlushes += 1 }
            if file.setIDBitsNotKept { outcome.report.noteSetIDBitsNotKept(directory.path(of: job.name)) }
        case let .link(temporary):
            try copier.publishLink(job.name, temporary: temporary, in: destination)
        }
        outcome.modified = true
        if job.isNew { outcome.report.copied += 1 } else { outcome.report.updated += 1 }
    }

    /// Removes a prepared copy or link that will not be published.
    private func discard(_ copy: Prepared, copier: FileCopier) {
        switch copy {
        case let .file(file): copier.discard(file, in: directory.destination.descriptor)
        case let .link(temporary): try? directory.destination.descriptor.unlink(at: temporary)
        }
    }

    /// Does `job`, or prepares its copy or link and returns it for publishing.
    private func perform(
        _ job: FileJob, copier: FileCopier, hasher: inout FileHasher?, context: MirrorContext,
        outcome: inout BatchOutcome
    ) throws(MirrorFailure) -> Prepared? {
        let source = directory.source
        let destination = directory.destination.descriptor
        let durable = context.settings.durable
        let noAccessTime = context.mayAvoidAccessTime(owner: job.source.userID)
        switch job.action {
        case .copy:
            return .file(try copier.prepare(
                job.name, from: source, to: destination, durable: durable, noAccessTime: noAccessTime,
                hasEarlierCopy: job.hasEarlierCopy))
        case .verify:
            let digester: FileHasher
            if let hasher {
                digester = hasher
            } else {
                digester = try makeHasher(context)
                hasher = digester
            }
            try WalkWatch.begin(.checksumming(.source), job.name, bytes: Int64(FileHasher.bufferSize))
            let sourceDigest = try digester.digest(of: job.name, in: source, side: .source, noAccessTime: noAccessTime)
            try WalkWatch.begin(.checksumming(.destination), job.name, bytes: Int64(FileHasher.bufferSize))
            let destinationDigest: [UInt8]?
            do {
                destinationDigest = try digester.digest(
                    of: job.name, in: destination, side: .destination, noAccessTime: context.isPrivileged)
            } catch .system("open", .permissionDenied) where !context.isPrivileged {
                // A copy the run may not read (the copy of a source file it reads as "others",
                // whose mode denies its owner `r`): read as its owner may; one that is not the
                // run's to open so is copied afresh, rather than failing on every run.
                destinationDigest = try? digester.digest(ofOwnUnreadable: job.name, in: destination)
            }
            if sourceDigest != destinationDigest {
                try directory.makeWritable()
                return .file(try copier.prepare(
                    job.name, from: source, to: destination, durable: durable, noAccessTime: noAccessTime,
                    hasEarlierCopy: job.hasEarlierCopy))
            } else {
                try fixAttributes(of: job, copier: copier, durable: durable, outcome: &outcome)
            }
        case .fixAttributes:
            try fixAttributes(of: job, copier: copier, durable: durable, outcome: &outcome)
        case let .link(target):
            let time = job.source.modificationTime
            return .link(temporary: try copier.prepareLink(job.name, target: target, modificationTime: time, in: destination))
        case .fixLinkTime:
            try copier.fixLinkTime(job.name, to: job.source.modificationTime, in: destination)
            outcome.report.updated += 1
        }
        return nil
    }

    /// Gives `job`'s destination file the source's mode and mtime (`FileCopier.fixAttributes`);
    /// counts it updated, or unchanged when it had them already (as far as the process may
    /// set them: `SetIDBits`).
    private func fixAttributes(of job: FileJob, copier: FileCopier, durable: Bool, outcome: inout BatchOutcome) throws(MirrorFailure) {
        var setIDBitsNotKept = false
        let changed = try copier.fixAttributes(
            job.name, to: job.source, in: directory.destination.descriptor, durable: durable, setIDBitsNotKept: &setIDBitsNotKept)
        if changed { outcome.report.updated += 1 } else { outcome.report.unchanged += 1 }
        if setIDBitsNotKept { outcome.report.noteSetIDBitsNotKept(directory.path(of: job.name)) }
    }

    /// The task's `FileHasher`, made fresh on its first checksum comparison.
    private func makeHasher(_ context: MirrorContext) throws(MirrorFailure) -> FileHasher {
        do {
            return try context.container.makeFresh(FileHasher.self)
        } catch {
            throw .noWorker("\(error)")
        }
    }
}
