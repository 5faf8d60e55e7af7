import Foundation
import Testing
import WeaveDIPosix

/// The start fails for good where the daemon's user may not make or write in its state
/// directory or its control socket's directory: `--check-config` says so (78) rather than
/// `configuration OK`, and the start exits 78 (EX_CONFIG, which the unit does not restart)
/// rather than 1. Run as `nobody` (permission bits do not stop root).
@Suite(.enabled(if: dropToNobody != nil, "needs root and setpriv or runuser to run as nobody"))
struct StartDirectoryPermissionTests {
    /// A directory nobody may read and search: `closed` (root's, 0755) and `open` (0777) in it.
    static func fixture() throws -> TemporaryDirectory {
        let directory = TemporaryDirectory()
        let d = directory.path
        for name in ["closed", "open"] { try FileManager.default.createDirectory(atPath: "\(d)/\(name)", withIntermediateDirectories: true) }
        chmod(d, 0o755)
        chmod(d + "/closed", 0o755)
        chmod(d + "/open", 0o777)
        return directory
    }

    /// A configuration with no jobs, its state directory and control socket as given.
    static func config(_ directory: TemporaryDirectory, state: String, socket: String) -> String {
        directory.write("weavedid.json", #"{"stateDirectory": "\#(state)", "control": {"socket": "\#(socket)"}}"#)
    }

    /// `weavedid --check-config --config config` as nobody.
    static func checkAsNobody(_ config: String) throws -> SubprocessResult {
        try Subprocess.run(dropToNobody![0], arguments: Array(dropToNobody!.dropFirst()) + [DaemonProcess.binary, "--check-config", "--config", config],
            environment: ["PATH": "/usr/bin:/bin"])
    }

    /// The daemon started as nobody on `config`, run to its end.
    static func startAsNobody(_ config: String, _ directory: TemporaryDirectory, environment: [String: String] = [:]) throws -> DaemonProcess {
        let daemon = try DaemonProcess(["--config", config], environment: environment, directory: directory, wrapper: dropToNobody!)
        return daemon
    }

    static let nobody = "uid 65534 (nobody)"

    /// The fixture with a state directory nobody owns (`open/state`, 0750) holding a lock file
    /// of `owner` with `mode`, and a configuration naming it.
    static func stateDirectoryWithALockFile(owner: uid_t, mode: mode_t) throws
        -> (directory: TemporaryDirectory, state: String, lock: String, config: String)
    {
        let directory = try fixture()
        let state = directory.path + "/open/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let lock = directory.write("open/state/weavedid.lock", "1\n")
        chown(lock, owner, owner == 0 ? 0 : 65534)
        chmod(lock, mode)
        chown(state, 65534, 65534)
        chmod(state, 0o750)
        return (directory, state, lock, config(directory, state: state, socket: directory.path + "/open/control.sock"))
    }

    @Test func aStateDirectoryTheUserMayNotCreate_failsTheCheck_andTheStartExits78() throws {
        let directory = try Self.fixture()
        let d = directory.path
        let config = Self.config(directory, state: d + "/closed/state", socket: d + "/open/control.sock")
        let check = try Self.checkAsNobody(config)
        #expect(check.status == .exited(78), "\(check.standardErrorText)")
        #expect(check.standardOutputText == "")
        #expect(check.standardErrorText == """
            weavedid: \(config): stateDirectory: cannot create the state directory "\(d)/closed/state": the user running the check (\(Self.nobody)) may not create it in "\(d)/closed" (mode 0755, owner root, group root), the nearest directory there on its way (write and search access): Permission denied (EACCES); the daemon would not start: create it for the daemon's user, or set stateDirectory (or STATE_DIRECTORY when the file sets none) to a directory it may create and write in

            """)
        let daemon = try Self.startAsNobody(config, directory)
        #expect(daemon.wait() == .exited(78), "\(daemon.log)")
        #expect(daemon.log.contains("cannot lock the state directory \"\(d)/closed/state\": creating \"\(d)/closed/state\": Permission denied (EACCES)"), "\(daemon.log)")
        // Root may: the check passes, and says nothing.
        let asRoot = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
        #expect(asRoot.status == .exited(0) && asRoot.standardErrorText == "", "\(asRoot.standardErrorText)")
    }

    @Test func aStateDirectoryTheUserMayNotWriteIn_failsTheCheck() throws {
        let directory = try Self.fixture()
        let d = directory.path
        let config = Self.config(directory, state: d + "/closed", socket: d + "/open/control.sock")
        let check = try Self.checkAsNobody(config)
        #expect(check.status == .exited(78), "\(check.standardErrorText)")
        #expect(check.standardErrorText.contains(
            "stateDirectory: the user running the check (\(Self.nobody)) may not write in the state directory \"\(d)/closed\" (mode 0755, owner root, group root; write and search access): Permission denied (EACCES); the daemon would not start"),
            "\(check.standardErrorText)")
        let daemon = try Self.startAsNobody(config, directory)
        #expect(daemon.wait() == .exited(78), "\(daemon.log)")
    }

    @Test func aControlSocketDirectoryTheUserMayNotCreate_failsTheCheck_andTheStartExits78() throws {
        let directory = try Self.fixture()
        let d = directory.path
        let config = Self.config(directory, state: d + "/open/state", socket: d + "/closed/run/control.sock")
        let check = try Self.checkAsNobody(config)
        #expect(check.status == .exited(78), "\(check.standardErrorText)")
        #expect(check.standardErrorText == """
            weavedid: \(config): control.socket: cannot create the control socket's directory (from control.socket) "\(d)/closed/run": the user running the check (\(Self.nobody)) may not create it in "\(d)/closed" (mode 0755, owner root, group root), the nearest directory there on its way (write and search access): Permission denied (EACCES); the daemon would not start: create it for the daemon's user, or set control.socket to a path in a directory the daemon may write

            """)
        let daemon = try Self.startAsNobody(config, directory)
        #expect(daemon.wait() == .exited(78), "\(daemon.log)")
        #expect(daemon.log.contains("cannot create \"\(d)/closed/run\", the control socket's directory (from control.socket): Permission denied (EACCES)"), "\(daemon.log)")
    }

    /// Where it may: the check passes, and the daemon starts and stops cleanly.
    @Test func directoriesTheUserMayCreate_passTheCheck_andTheDaemonStarts() throws {
        let directory = try Self.fixture()
        let d = directory.path
        let config = Self.config(directory, state: d + "/open/state", socket: d + "/open/run/control.sock")
        let check = try Self.checkAsNobody(config)
        #expect(check.status == .exited(0), "\(check.standardErrorText)")
        #expect(check.standardErrorText == "")
        let daemon = try Self.startAsNobody(config, directory)
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A lock file a run as root left (0600, root's) in a state directory the daemon's user owns:
    /// the directory is not at fault, the file is; the check and the start name it, its owner
    /// and mode, and say to give the directory's content to the daemon's user. Removing the lock
    /// alone is offered too, saying what becomes of `jobs.json`: with none there, the daemon
    /// creates it; with one it may read, it reads and replaces it.
    @Test(arguments: [false, true])
    func aLockFileLeftByRoot_failsTheCheckAndTheStart_namingItsOwner(withStateFile: Bool) throws {
        let (directory, state, lock, config) = try Self.stateDirectoryWithALockFile(owner: 0, mode: 0o600)
        if withStateFile {
            let file = directory.write("open/state/jobs.json", #"{"lastRunNumber": 0, "jobs": {}}"#)
            chown(file, 65534, 65534)
        }
        let rest = withStateFile ? "may read and replace the rest: jobs.json" : "may create the rest there: jobs.json"
        let problem = "may not open \"\(lock)\" (mode 0600, owner root, group root) for writing: Permission denied (EACCES); a daemon run as root left it: "
            + "give the state directory's content to the daemon's user (chown -R nobody: \(state)), or remove weavedid.lock alone"
        let check = try Self.checkAsNobody(config)
        #expect(check.status == .exited(78), "\(check.standardErrorText)")
        #expect(check.standardErrorText == "weavedid: \(config): stateDirectory: the user running the check (\(Self.nobody)) \(problem) "
            + "(the user running the check \(rest))\n")
        let daemon = try Self.startAsNobody(config, directory)
        #expect(daemon.wait() == .exited(78), "\(daemon.log)")
        #expect(daemon.log.contains("error   daemon: cannot lock the state directory \"\(state)\": the daemon (\(Self.nobody)) \(problem) "
            + "(the daemon \(rest))"), "\(daemon.log)")
        #expect(!daemon.log.contains("the daemon needs a state directory it may create"), "\(daemon.log)")
    }

    /// The lock file and `jobs.json` both left by root (0600 and 0640, root's) in a state
    /// directory the daemon's user owns: removing the lock alone would not do, and the refusal
    /// does not offer it, naming `jobs.json` too. Removed all the same, the start refuses the
    /// state file it may not read (exit 78) rather than start without it and replace it at its
    /// first write: the file is left as it was. Given to the daemon's user, it is read.
    @Test func aJobsFileLeftByRootToo_isNamed_andNeverReplaced() throws {
        let (directory, state, lock, config) = try Self.stateDirectoryWithALockFile(owner: 0, mode: 0o600)
        let jobs = directory.write("open/state/jobs.json", #"{"lastRunNumber":7,"jobs":{}}"#)
        chmod(jobs, 0o640)
        let inode = try FileStatus(path: jobs, followSymlinks: false).inode
        let lockProblem = "may not open \"\(lock)\" (mode 0600, owner root, group root) for writing: Permission denied (EACCES); a daemon run as root left it, "
        let more = "may not use more of the state directory either (\"\(jobs)\" (mode 0640, owner root, group root), which it may not read: "
            + "Permission denied (EACCES)): give the state directory's content to the daemon's user (chown -R nobody: \(state)); removing "
            + "weavedid.lock alone would not do, as the daemon could not read its jobs' state"
        let check = try Self.checkAsNobody(config)
        #expect(check.status == .exited(78), "\(check.standardErrorText)")
        #expect(check.standardErrorText == "weavedid: \(config): stateDirectory: the user running the check (\(Self.nobody)) \(lockProblem)"
            + "and the user running the check \(more)\n")
        let daemon = try Self.startAsNobody(config, directory)
        #expect(daemon.wait() == .exited(78), "\(daemon.log)")
        #expect(daemon.log.contains("error   daemon: cannot lock the state directory \"\(state)\": the daemon (\(Self.nobody)) \(lockProblem)and the daemon \(more)"),
            "\(daemon.log)")

        try FileManager.default.removeItem(atPath: lock)
        let stateProblem = "may not read the jobs' state file \"\(jobs)\" (mode 0640, owner root, group root): Permission denied (EACCES); "
            + "the daemon does not start rather than replace the file, which keeps the jobs' pauses and run count: a daemon run as root "
            + "left it: give the state directory's content to the daemon's user (chown -R nobody: \(state))"
        let checkAgain = try Self.checkAsNobody(config)
        #expect(checkAgain.status == .exited(78), "\(checkAgain.standardErrorText)")
        #expect(checkAgain.standardErrorText == "weavedid: \(config): stateDirectory: the user running the check (\(Self.nobody)) \(stateProblem)\n")
        let refused = try Self.startAsNobody(config, directory)
        #expect(refused.wait() == .exited(78), "\(refused.log)")
        #expect(refused.log.contains("error   daemon: cannot use the state directory \"\(state)\": the daemon (\(Self.nobody)) \(stateProblem)"), "\(refused.log)")
        #expect(!fileExists(directory.path + "/open/control.sock"), "the refused daemon bound its socket")
        #expect(try FileStatus(path: jobs, followSymlinks: false).inode == inode)
        #expect(directory.read("open/state/jobs.json") == #"{"lastRunNumber":7,"jobs":{}}"#)

        chown(jobs, 65534, 65534)
        let started = try Self.startAsNobody(config, directory)
        try #require(started.waitForLog("ready;"), "\(started.log)")
        #expect(!started.log.contains("jobs.json"), "\(started.log)")
        started.send(.terminate)
        #expect(started.wait() == .exited(0), "\(started.log)")
    }
}

extension StartDirectoryPermissionTests {
    /// A stale socket root left in a sticky directory (`/tmp`-like, 1777): the daemon's user may
    /// not remove it; the refusal names its owner and the sticky bit, and says what to do.
    @Test func aStaleSocketOfRootsInAStickyDirectory_isNamedWithItsOwnerAndTheStickyBit() throws {
        let directory = try Self.fixture()
        let d = directory.path
        let shared = d + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        chmod(shared, 0o1777)
        let socket = shared + "/c.sock"
        do {
            let stale = try UnixSocket.make(.stream)
            try stale.descriptor.bind(to: UnixSocketAddress(path: socket))
        }  // closed: nobody listens
        chmod(socket, 0o755)
        let config = Self.config(directory, state: d + "/open/state", socket: socket)
        let daemon = try Self.startAsNobody(config, directory)
        #expect(daemon.wait() == .exited(1), "\(daemon.log)")
        #expect(daemon.log.contains("cannot remove the stale socket \"\(socket)\": Operation not permitted (EPERM); the socket (mode 0755, owner "
            + "root, group root) is root's (a daemon run as that user left it), and its directory \"\(shared)\" (mode 1777, owner root, group root) "
            + "has the sticky bit, so only the socket's owner, the directory's owner or root may remove it, and the daemon runs as \(Self.nobody): "
            + "remove it as root or as its owner (rm \(socket)), or choose another control.socket"), "\(daemon.log)")
    }
}

extension StartDirectoryPermissionTests {
    /// The checking user's own lock file without write access for its owner is refused with
    /// its mode to mend, not as a file another user's run left.
    @Test func itsOwnLockFileReadOnly_failsTheCheck_sayingToMendItsMode() throws {
        let (directory, _, lock, config) = try Self.stateDirectoryWithALockFile(owner: 65534, mode: 0o400)
        defer { withExtendedLifetime(directory) {} }
        let check = try Self.checkAsNobody(config)
        #expect(check.status == .exited(78), "\(check.standardErrorText)")
        #expect(check.standardErrorText == "weavedid: \(config): stateDirectory: the user running the check (\(Self.nobody)) may not open "
            + "its own lock file \"\(lock)\" (mode 0400, owner nobody, group \(FileOwnershipName.group(65534))) for writing: "
            + "Permission denied (EACCES); give its owner read and write (chmod 0600 \(lock))\n")
    }

    /// A symbolic link that leads nowhere on the way to the state directory fails the check:
    /// the start could not make the directory through it.
    @Test func aDanglingLinkOnTheWayToTheStateDirectory_failsTheCheck() throws {
        let directory = try Self.fixture()
        let d = directory.path
        #expect(symlink(d + "/open/gone", d + "/open/link") == 0)
        let config = Self.config(directory, state: d + "/open/link/state", socket: d + "/open/control.sock")
        for check in [try Self.checkAsNobody(config), try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])] {
            #expect(check.status == .exited(78), "\(check.standardErrorText)")
            #expect(check.standardErrorText.hasPrefix("weavedid: \(config): stateDirectory: cannot create the state directory "
                + "\"\(d)/open/link/state\": \"\(d)/open/link\" on its way is a symbolic link to \"\(d)/open/gone\", which does not exist"),
                "\(check.standardErrorText)")
        }
    }

    /// A jobs.json that is no file (a directory the daemon may not read) is not taken for a
    /// state file the daemon would replace: the start is not refused over it.
    @Test func aJobsPathThatIsNoFile_doesNotRefuseTheStart() throws {
        let (directory, _, _, config) = try Self.stateDirectoryWithALockFile(owner: 65534, mode: 0o600)
        let jobs = directory.path + "/open/state/jobs.json"
        try FileManager.default.createDirectory(atPath: jobs, withIntermediateDirectories: false)
        chmod(jobs, 0)
        let daemon = try Self.startAsNobody(config, directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(!daemon.log.contains("may not read the jobs' state file"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }
}
