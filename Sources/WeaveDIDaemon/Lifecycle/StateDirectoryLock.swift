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
struct StateDirectoryLock: Sendable {
    /// The lock file's name in the state directory.
    static let fileName = "weavedid.lock"

    /// The state directory.
    let directory: String
    /// The lock file.
    let path: String
    /// The lock file, open for the process's life: closing it would release the lock.
    let descriptor: FileDescriptor

    /// Why the lock could not be taken: the message, and the `errno` told to systemd.
    struct Problem: Error, CustomStringConvertible {
        var description: String
        var errno: Int32

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
                let holder = Self.holder(file.descriptor).map { "pid \($0)" } ?? "its pid is not known"
                throw Problem(
                    description: "the state directory \(JSONValue.quotedPathForMessage(directory)) is in use by another weavedid (\(holder); it holds the lock on \(JSONValue.quotedPathForMessage(path))); "
                        + "stop that daemon first, or give this one another state directory (stateDirectory, or STATE_DIRECTORY when the file sets none)",
                    errno: EBUSY)
            }
            try note(Step(subject: "writing the daemon's pid into \"\(path)\"", path: path, directory: directory))
            Self.write(pid, into: file.descriptor)
            return file.release().rawValue
        }
        return StateDirectoryLock(directory: directory, path: path, descriptor: FileDescriptor(rawValue: raw))
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

    /// Why `who` (the daemon, or the user running `--check-config`) may not open the lock file
    /// at `path`, there with `status` but another user's: a run as that user (root, most
    /// often) left it, and with it the rest of the state directory's content (`jobs.json`).
    /// Names the file, its owner, group and mode, and says to give the directory's content to
    /// the daemon's user: `… may not open "/var/lib/weavedi/weavedid.lock" (mode 0600, owner
    /// root, group root) for writing: Permission denied (EACCES); a daemon run as root left it:
    /// give the state directory's content to the daemon's user (chown -R weavedi: …)`.
    static func foreignFileProblem(path: String, status: FileStatus, directory: String, error: Errno, who: String) -> String {
        let user = FileOwnership.currentUser
        let name = FileOwnership.nameForCommand(CurrentProcess.effectiveUserID)
        return "\(who) (\(user)) may not open \(JSONValue.quotedPathForMessage(path)) (\(FileOwnership.describe(status))) for writing: "
            + "\(error); a daemon run as \(FileOwnership.userName(status.userID)) left it, and maybe more of the state directory's "
            + "content (jobs.json): give it all to the daemon's user (chown -R \(name.shellWord.escapingControlCharacters): "
            + "\(directory.shellWord.escapingControlCharacters)), or remove \(fileName) alone"
    }

    /// The pid the lock file names, if it names one that runs. The holder writes it right
    /// after taking the lock: in between, the file is empty or names its previous holder, most
    /// likely gone.
    private static func holder(_ file: FileDescriptor) -> Int32? {
        // Just opened and not written: the file's position is its start.
        guard let bytes = try? file.read(upToCount: 32) else { return nil }
        let line = bytes.prefix { $0 != UInt8(ascii: "\n") }
        guard let pid = Int32(String(decoding: line, as: UTF8.self)), pid > 0 else { return nil }
        // Signal 0 sends nothing: it only asks whether the process exists.
        do throws(Errno) { try Signal(rawValue: 0).send(to: pid) } catch { if error == .noSuchProcess { return nil } }
        return pid
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
