import Glibc
import WeaveDI
import WeaveDIPosix

/// The daemon's claim on its state directory: a write lock on `weavedid.lock` there, taken at
/// start before anything else in the directory is touched, and held for the process's life.
///
/// Two daemons on one state directory (started with different control sockets) would both
/// write `jobs.json`, both run the same jobs, and each, as it starts, remove the other's
/// temporary files (`SyncStateStore.removeStaleTemporaryFiles`), a write in progress among
/// them. The second one to start finds the lock held and refuses to start.
///
/// The lock is an OFD lock (`FileDescriptor.lockWholeFileForWriting`), not a classic POSIX
/// record lock: a process loses a classic lock when it closes any descriptor of the file, and
/// the daemon may open this one for other reasons (a mirror job whose source holds the state
/// directory reads every file there). An OFD lock does not tell who holds it, so the holder
/// writes its pid into the file, for the refusal to name.
///
/// Every step on the file system (creating the directory, opening, locking, writing the pid)
/// runs under `StepDeadline`, as the configuration's load: the state directory may be on a
/// network mount that stopped answering.
final class StateDirectoryLock: Sendable {
    /// The lock file's name in the state directory.
    static let fileName = "weavedid.lock"
    /// The name of the lock's health check.
    static let checkName = "daemon.stateLock"

    /// The state directory.
    let directory: String
    /// The lock file.
    let path: String
    /// The daemon's pid, written into the lock file.
    let pid: Int32
    /// The lock file, open for the process's life: closing it would release the lock. The
    /// check's fix replaces it by the file it makes again at `path` (see `relock`).
    private let held: Locked<FileDescriptor>
    /// The file at `path` another process held the lock on when the fix last tried (its
    /// device, inode and pid): the check names that daemon while the file is still there.
    private let sharedWith = Locked<Busy?>(nil)

    private init(directory: String, path: String, pid: Int32, descriptor: FileDescriptor) {
        self.directory = directory
        self.path = path
        self.pid = pid
        held = Locked(descriptor)
    }

    /// The lock file this daemon holds the lock on.
    var descriptor: FileDescriptor { held.withLock { $0 } }

    /// A lock file whose lock another process holds: its device and inode, and the pid it
    /// names (`holder`), if any.
    struct Busy: Sendable, Equatable {
        var device: UInt64
        var inode: UInt64
        var pid: Int32?
    }

    /// Why the lock could not be taken: the message, and the `errno` told to systemd.
    struct Problem: Error, CustomStringConvertible {
        var description: String
        var errno: Int32
        /// Set when the lock is another process's: what `StateDirectoryLock.relock` names.
        var busy: Busy?

        /// The daemon's exit status for it: 75 (EX_TEMPFAIL) when the directory's file system
        /// did not answer (systemd then restarts the daemon, as after a configuration load
        /// that met it); 78 (EX_CONFIG) when the daemon's user may not make the directory or
        /// open the lock file (`EACCES`, `EPERM`) or the file system is read-only (`EROFS`): a
        /// restart would meet the same, and the unit does not restart on 78; else 1.
        var exitStatus: Int32 {
            if errno == ETIMEDOUT { return DaemonMain.exitTemporaryFailure }
            return FileOwnership.isPermanentRefusal(errno) ? DaemonMain.exitConfigurationError : 1
        }
    }

    /// One step of taking the lock, as `StepDeadline` watches it.
    struct Step: DeadlineStep {
        /// `opening "/var/lib/weavedi/weavedid.lock"`.
        let subject: String
        let path: String
        let directory: String

        func failure(_ problem: String, errno: Int32) -> Problem {
            // A file system that does not answer is said so by `problem`; anything else is the
            // directory's own fault.
            let hint = errno == ETIMEDOUT ? "" : "; the daemon needs a state directory it may create and write in "
                + "(stateDirectory, or STATE_DIRECTORY when the file sets none)"
            return Problem(description: "cannot lock the state directory \(JSONValue.quotedPathForMessage(directory)): \(problem)\(hint)", errno: errno)
        }
    }

    /// Creates `directory` (0750, and what is missing above it) if it does not exist, and takes
    /// the lock in it, writing `pid` into the lock file. Throws, naming the directory, when
    /// another process holds the lock (with its pid, when the file says it and it runs), when
    /// the directory or the file cannot be made or opened, or when a step does not answer
    /// within `StepDeadline.stepLimit`. Blocks the calling thread meanwhile.
    static func acquire(directory: String, pid: Int32 = CurrentProcess.id) throws(Problem) -> StateDirectoryLock {
        let path = (directory.hasSuffix("/") ? directory : directory + "/") + fileName
        let creating = Step(subject: "creating \"\(directory)\"", path: directory, directory: directory)
        let raw = try StepDeadline.run(limit: StepDeadline.stepLimit, first: creating, for: "a lock of the state directory") {
            note throws(Problem) -> Int32 in
            let raw = try Self.take(directory: directory, path: path, pid: pid, note: note)
            let state = ConfigurationDirectories.join(directory, SyncStateStore.fileName)
            try note(Step(subject: "looking at \"\(state)\"", path: state, directory: directory))
            if let problem = Self.unreadableStateFile(directory: directory) {
                _ = Glibc.close(raw)
                throw problem
            }
            return raw
        }
        return StateDirectoryLock(directory: directory, path: path, pid: pid, descriptor: FileDescriptor(rawValue: raw))
    }

    /// The steps of taking the lock, as `StepDeadline` runs them (the first, `creating`, noted
    /// already): makes the directory if it is not there, opens or creates the lock file, locks
    /// it and writes `pid` into it; the locked file's descriptor. Never removes nor truncates a
    /// file another process holds the lock on.
    private static func take(
        directory: String, path: String, pid: Int32, note: @Sendable (Step) throws(Problem) -> Void
    ) throws(Problem) -> Int32 {
        let creating = Step(subject: "creating \"\(directory)\"", path: directory, directory: directory)
        do throws(Errno) {
            try FileDescriptor.currentWorkingDirectory.makeDirectories(at: directory, permissions: 0o750)
        } catch {
            throw creating.failure("\(creating.subject): \(error)", errno: error.rawValue)
        }
        let opening = Step(subject: "opening \"\(path)\"", path: path, directory: directory)
        try note(opening)
        let file = try Self.open(path, step: opening)
        let locking = Step(subject: "locking \"\(path)\"", path: path, directory: directory)
        try note(locking)
        do throws(Errno) {
            try file.descriptor.lockWholeFileForWriting()
        } catch {
            guard error == .resourceTemporarilyUnavailable || error == .permissionDenied else {
                throw locking.failure("\(locking.subject): \(error)", errno: error.rawValue)
            }
            let status = try? file.descriptor.status()
            let holderPid = Self.holder(file.descriptor)
            let holder = holderPid.map { "pid \($0)" } ?? "its pid is not known"
            throw Problem(
                description: "the state directory \(JSONValue.quotedPathForMessage(directory)) is in use by another weavedid (\(holder); it holds the lock on \(JSONValue.quotedPathForMessage(path))); "
                    + "stop that daemon first, or give this one another state directory (stateDirectory, or STATE_DIRECTORY when the file sets none)",
                errno: EBUSY, busy: Busy(device: status?.device ?? 0, inode: status?.inode ?? 0, pid: holderPid))
        }
        try note(Step(subject: "writing the daemon's pid into \"\(path)\"", path: path, directory: directory))
        Self.write(pid, into: file.descriptor)
        // A write that outlived its step's limit (a file system that stopped answering, then
        // answered) has nobody to hand the descriptor to: noting one more step throws then, and
        // the descriptor is closed here, rather than left open with its lock, which would keep
        // every later fix off the file with this daemon's own pid in it.
        try note(Step(subject: "handing over the lock on \"\(path)\"", path: path, directory: directory))
        return file.release().rawValue
    }

    /// Opens (or creates, 0600) the lock file for writing, not following a link and without
    /// waiting should it be a named pipe; anything but a regular file is refused.
    private static func open(_ path: String, step: Step) throws(Problem) -> OwnedDescriptor {
        let file: OwnedDescriptor
        do throws(Errno) {
            file = try FileDescriptor.open(
                path, .readWrite, options: [.create, .noFollow, .nonBlocking, .noControllingTerminal], permissions: 0o600)
        } catch {
            // The file is there, but another user's (a run as root left it): the directory is
            // not at fault, its content is.
            if error == .permissionDenied || error == .notPermitted,
                let found = try? FileStatus(path: path, followSymlinks: false), found.kind == .regular,
                found.userID != CurrentProcess.effectiveUserID
            {
                throw Problem(
                    description: "cannot lock the state directory \(JSONValue.quotedPathForMessage(step.directory)): "
                        + foreignFileProblem(path: path, status: found, directory: step.directory, error: error, who: "the daemon"),
                    errno: error.rawValue)
            }
            throw step.failure("\(step.subject): \(error)", errno: error.rawValue)
        }
        let kind: FileKind
        do throws(Errno) { kind = try file.descriptor.status().kind } catch {
            throw step.failure("\(step.subject): \(error)", errno: error.rawValue)
        }
        guard kind == .regular else {
            throw step.failure("\(path) is not a regular file (\(DaemonConfiguration.describe(kind))); remove it", errno: EINVAL)
        }
        return file
    }

    /// `give the state directory's content to the daemon's user (chown -R weavedi: /var/lib/weavedi)`.
    static func chownAdvice(_ directory: String) -> String {
        let name = FileOwnership.nameForCommand(CurrentProcess.effectiveUserID)
        return "give the state directory's content to the daemon's user (chown -R \(name.shellWord.escapingControlCharacters): "
            + "\(directory.shellWord.escapingControlCharacters))"
    }

    /// Why `who` (the daemon, or the user running `--check-config`) may not open the lock file
    /// at `path`, there with `status` but another user's: a run as that user (root, most
    /// often) left it, and maybe with it the rest of the state directory's content
    /// (`jobs.json`). Names the file, its owner, group and mode, and says to give the
    /// directory's content to the daemon's user: `… may not open "/var/lib/weavedi/weavedid.lock"
    /// (mode 0600, owner root, group root) for writing: Permission denied (EACCES); a daemon run
    /// as root left it: give the state directory's content to the daemon's user (chown -R
    /// weavedi: …), or remove weavedid.lock alone (…)`, the parenthesis saying what becomes of
    /// `jobs.json`: read and replaced, or, with none there, created. Removing the lock alone is offered only
    /// while `who` may read `jobs.json` and replace it (create files in the directory);
    /// otherwise those are named instead (`unusableContent`), as removing the lock alone would
    /// leave a daemon that cannot read its jobs' state.
    static func foreignFileProblem(path: String, status: FileStatus, directory: String, error: Errno, who: String) -> String {
        let user = FileOwnership.currentUser
        let chown = chownAdvice(directory)
        let start = "\(who) (\(user)) may not open \(JSONValue.quotedPathForMessage(path)) (\(FileOwnership.describe(status))) for writing: "
            + "\(error); a daemon run as \(FileOwnership.userName(status.userID)) left it"
        let unusable = unusableContent(directory: directory)
        guard unusable.isEmpty else {
            return start + ", and \(who) may not use more of the state directory either (\(unusable.joined(separator: "; "))): "
                + chown + "; removing \(fileName) alone would not do, as the daemon could not read its jobs' state"
        }
        // What the rest is: the state file there, or none yet (the first write makes it).
        let state = ConfigurationDirectories.join(directory, SyncStateStore.fileName)
        let rest = (try? FileStatus(path: state, followSymlinks: false)) == nil
            ? "\(who) may create the rest there: \(SyncStateStore.fileName)" : "\(who) may read and replace the rest: \(SyncStateStore.fileName)"
        return start + ": \(chown), or remove \(fileName) alone (\(rest))"
    }

    /// What else of `directory` the calling process may not use as the daemon does, described
    /// for a message: `jobs.json` when it is there and may not be read (`"…/jobs.json" (mode
    /// 0640, owner root, group root), which it may not read: …`), the directory when no file
    /// may be created in it (a write of `jobs.json` replaces it through a new file). Asked of
    /// the kernel for the effective user (`faccessat` with `AT_EACCESS`).
    static func unusableContent(directory: String) -> [String] {
        var found: [String] = []
        let cwd = FileDescriptor.currentWorkingDirectory
        let state = ConfigurationDirectories.join(directory, SyncStateStore.fileName)
        do throws(Errno) { try cwd.checkAccess(at: state, .read) } catch {
            if error != .noSuchFileOrDirectory, let status = try? FileStatus(path: state, followSymlinks: true) {
                found.append("\(JSONValue.quotedPathForMessage(state)) (\(FileOwnership.describe(status))), which it may not read: \(error)")
            }
        }
        do throws(Errno) { try cwd.checkAccess(at: directory, [.write, .execute]) } catch {
            if let status = try? FileStatus(path: directory, followSymlinks: true) {
                found.append("the directory itself (\(FileOwnership.describe(status))), where it may not create files: \(error)")
            }
        }
        return found
    }

    /// The start's refusal when the jobs' state file (`jobs.json`) is there but the daemon may
    /// not read it (`EACCES`, `EPERM`: another user's, or its mode): started, the daemon would
    /// run without the jobs' pauses and run count and replace the file at the first write,
    /// losing them. Nil when it may be read, or is not there; any other trouble with it is the
    /// scheduler's to meet (`SyncStateStore.load`).
    static func unreadableStateFile(directory: String) -> Problem? {
        unreadableStateFile(directory: directory, who: "the daemon").map { problem, errno in
            Problem(description: "cannot use the state directory \(JSONValue.quotedPathForMessage(directory)): \(problem)", errno: errno)
        }
    }

    /// `unreadableStateFile(directory:)`'s problem, for `who` (the daemon, or the user running
    /// `--check-config`), and its `errno`.
    static func unreadableStateFile(directory: String, who: String) -> (problem: String, errno: Int32)? {
        let state = ConfigurationDirectories.join(directory, SyncStateStore.fileName)
        do throws(Errno) {
            try FileDescriptor.currentWorkingDirectory.checkAccess(at: state, .read)
            return nil
        } catch {
            // Only a file: a directory or anything else there is no state file the daemon
            // would lose (the scheduler says what it is when it reads it).
            guard error == .permissionDenied || error == .notPermitted, let status = try? FileStatus(path: state, followSymlinks: true),
                status.kind == .regular
            else {
                return nil
            }
            let remedy = status.userID == CurrentProcess.effectiveUserID
                ? "give its owner read and write (chmod u+rw \(state.shellWord.escapingControlCharacters))"
                : "a daemon run as \(FileOwnership.userName(status.userID)) left it: \(chownAdvice(directory))"
            return (
                "\(who) (\(FileOwnership.currentUser)) may not read the jobs' state file \(JSONValue.quotedPathForMessage(state)) "
                    + "(\(FileOwnership.describe(status))): \(error); the daemon does not start rather than replace the file, which keeps "
                    + "the jobs' pauses and run count: \(remedy)",
                error.rawValue
            )
        }
    }

    /// The pid the lock file names, if it names one that runs. The holder writes it right
    /// after taking the lock: in between, the file is empty or names its previous holder, most
    /// likely gone.
    private static func holder(_ file: FileDescriptor) -> Int32? {
        // Just opened and not written: the file's position is its start.
        guard let bytes = try? file.read(upToCount: 32) else { return nil }
        let line = bytes.prefix { $0 != UInt8(ascii: "\n") }
        guard let pid = Int32(String(decoding: line, as: UTF8.self)), pid > 0, runs(pid) else { return nil }
        return pid
    }

    /// Whether a process `pid` exists.
    private static func runs(_ pid: Int32) -> Bool {
        // Signal 0 sends nothing: it only asks whether the process exists.
        do throws(Errno) { try Signal(rawValue: 0).send(to: pid) } catch { if error == .noSuchProcess { return false } }
        return true
    }

    /// Writes `pid` and a newline over the file's content, then cuts what followed: a reader
    /// finds the previous pid or this one, never an empty file. On failure (a full disk) the
    /// file is emptied, so that it names no previous daemon; the lock holds all the same.
    private static func write(_ pid: Int32, into file: FileDescriptor) {
        let text = Array("\(pid)\n".utf8)
        do throws(Errno) {
            _ = try file.seek(offset: 0)
            try file.writeAll(text)
            try file.resize(to: Int64(text.count))
        } catch {
            try? file.resize(to: 0)
        }
    }
}

/// `daemon.stateLock`: the lock file at `path` is still the file this daemon holds the lock on.
/// Deleted (alone, or with the state directory) or replaced, it keeps nobody out: a second
/// daemon started on the directory would make a new one, lock it and run beside this one, the
/// same jobs, the same `jobs.json`. The check compares the two (an `fstat` of the held
/// descriptor and a `stat` of the path, within `StepDeadline.stepLimit`); its fix makes the
/// directory and the file again if need be and takes the lock on the file at the path, as the
/// start does, never waiting for it nor touching a file another process holds the lock on.
extension StateDirectoryLock {
    /// What stands at `path`, compared with the file this daemon holds the lock on.
    enum Found: Sendable, Equatable {
        /// The held file.
        case held
        /// Nothing (the file or its directory is gone).
        case missing
        /// Another file, with its device and inode.
        case other(device: UInt64, inode: UInt64)
    }

    /// A duplicate of the held descriptor for one look, closed when the look's work lets go of
    /// it (or when the work was never started).
    private final class Duplicate: Sendable {
        let file: FileDescriptor

        init(_ file: FileDescriptor) { self.file = file }

        deinit { try? file.close() }
    }

    /// A look at the lock file, as `StepDeadline` watches it.
    private struct Look: DeadlineStep {
        let subject: String
        let path: String

        func failure(_ problem: String, errno: Int32) -> Problem { Problem(description: problem, errno: errno) }
    }

    /// Compares the file at `path` with the file this daemon holds the lock on (device and
    /// inode). Throws when either cannot be looked at within the step limit.
    func look() async throws(Problem) -> Found {
        let path = self.path
        let step = Look(subject: "looking at \(JSONValue.quotedPathForMessage(path))", path: path)
        // A duplicate of the held descriptor, taken under the lock and closed by the look: a fix
        // that replaces the held one meanwhile closes it, and its number may be given to another
        // file before the look gets to it. A duplicate shares the lock (an OFD lock goes with the
        // last descriptor of the open file), so closing it releases nothing.
        let duplicate: Duplicate
        do throws(Errno) { duplicate = Duplicate(try held.withLock { (file) throws(Errno) in try file.duplicate().release() }) } catch {
            throw step.failure("looking at the lock file this daemon holds: \(error)", errno: error.rawValue)
        }
        return try await StepDeadline.run(limit: StepDeadline.stepLimit, first: step, for: "a look at the state directory's lock") {
            _ throws(Problem) -> Found in
            let file = duplicate.file
            let mine: FileStatus
            do throws(Errno) { mine = try file.status() } catch {
                throw step.failure("looking at the lock file this daemon holds: \(error)", errno: error.rawValue)
            }
            let there: FileStatus
            do throws(Errno) { there = try FileStatus(path: path, followSymlinks: false) } catch {
                if error == .noSuchFileOrDirectory || error == .notDirectory { return .missing }
                throw step.failure("\(step.subject): \(error)", errno: error.rawValue)
            }
            return there.device == mine.device && there.inode == mine.inode ? .held : .other(device: there.device, inode: there.inode)
        }
    }

    /// The check's result.
    func health() async -> HealthCheckResult {
        let quoted = JSONValue.quotedPathForMessage(path)
        let data = ["path": path, "pid": "\(pid)"]
        let found: Found
        do {
            found = try await look()
        } catch {
            return .degraded("cannot tell whether the lock file is still this daemon's: \(error.description)", data: data)
        }
        let outside = "so nothing keeps another weavedid off the state directory \(JSONValue.quotedPathForMessage(directory)) (it would run "
            + "the same jobs and write the same jobs.json); the check's fix makes the lock file again and locks it (weavedictl fix \(Self.checkName))"
        switch found {
        case .held:
            return .healthy("holding the lock on \(quoted)", data: data)
        case .missing:
            return .unhealthy("the lock file \(quoted) is gone (deleted, or the state directory with it), \(outside)", data: data)
        case let .other(device, inode):
            // Named while its daemon runs (asked with signal 0: no file system); once it has
            // stopped, its file is merely another file, for the fix to lock.
            if let busy = sharedWith.withLock({ $0 }), busy.device == device, busy.inode == inode, busy.pid.map(Self.runs) ?? true {
                return .unhealthy(sharedProblem(busy), data: data)
            }
            return .unhealthy("the lock file \(quoted) is not the file this daemon holds the lock on (it was replaced), \(outside)", data: data)
        }
    }

    /// `another weavedid (pid 1234) holds the lock on "…/weavedid.lock": …; stop one of them`.
    private func sharedProblem(_ busy: Busy) -> String {
        let holder = busy.pid.map { "pid \($0)" } ?? "its pid is not known"
        return "another weavedid (\(holder)) holds the lock on \(JSONValue.quotedPathForMessage(path)), made after the one this daemon "
            + "(pid \(pid)) locked was deleted or replaced: two daemons now share the state directory "
            + "\(JSONValue.quotedPathForMessage(directory)), running the same jobs and writing the same jobs.json; stop one of them"
    }

    /// The check's fix: when the file at `path` is not the held one, makes the state directory
    /// (0750) and the lock file again if they are gone, takes the lock on the file there
    /// without waiting, and writes the pid into it; the descriptor of the file held before is
    /// closed then (the file is deleted, or elsewhere: its lock keeps no daemon off this
    /// directory, and each fix would keep one more open). When another process holds the lock
    /// on the file there (a second daemon started meanwhile), fails naming it, and keeps what it
    /// held; that file is not touched.
    func relock() async throws -> String {
        let quoted = JSONValue.quotedPathForMessage(path)
        let found = try await look()
        guard found != .held else { throw FixNotApplicable("\(quoted) is the file this daemon holds the lock on: nothing to do") }
        let directory = self.directory
        let path = self.path
        let pid = self.pid
        let creating = Step(subject: "creating \"\(directory)\"", path: directory, directory: directory)
        let raw: Int32
        do {
            raw = try await StepDeadline.run(limit: StepDeadline.stepLimit, first: creating, for: "a lock of the state directory") {
                note throws(Problem) -> Int32 in
                try Self.take(directory: directory, path: path, pid: pid, note: note)
            }
        } catch {
            guard let busy = error.busy else { throw error }
            sharedWith.withLock { $0 = busy }
            throw Problem(description: sharedProblem(busy), errno: EBUSY, busy: busy)
        }
        let old = held.withLock { current in
            let old = current
            current = FileDescriptor(rawValue: raw)
            return old
        }
        sharedWith.withLock { $0 = nil }
        try? old.close()
        return found == .missing ? "made \(quoted) again and locked it" : "locked the file now at \(quoted)"
    }
}
