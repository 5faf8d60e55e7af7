import Glibc
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

extension DaemonConfiguration {
    /// `weavedid --check-config`: throws when the start would fail making or writing in its own
    /// directories as the user running the check: the state directory (made with its missing
    /// parents, then the lock file opened in it) and the control socket's directory (made the
    /// same way, then the socket bound in it).
    ///
    /// A directory that exists must let that user write in it and search it; one that does not,
    /// the nearest directory there on its way, where the start makes the first one missing.
    /// Asked of the kernel (`faccessat` with `AT_EACCESS`), so ACLs and a read-only file system
    /// (`EROFS`) count. The error names the user, the directory refused (with its owner, group
    /// and mode) and the setting that put the path there, and carries the `errno` (`EACCES`,
    /// `EROFS`, ...), so the check exits 78 as the start would. As root, only a read-only file
    /// system or a path that is no directory is refused.
    ///
    /// Before each path it looks at, it tells `note` (`StepDeadline`), whose error it throws.
    func checkStartDirectories(noting note: (LoadStep) throws(ConfigurationError) -> Void = { _ in }) throws(ConfigurationError) {
        let file = sourceName
        let stateRemedy = "create it for the daemon's user, or set stateDirectory (or STATE_DIRECTORY when the file sets none) "
            + "to a directory it may create and write in"
        try checkDirectory(
            stateDirectory, what: "the state directory", field: "stateDirectory", remedy: stateRemedy, file: file, note: note)
        try checkLockFile(file: file, note: note)
        let socketRemedy = socketOrigin == .controlSocket
            ? "create it for the daemon's user, or set control.socket to a path in a directory the daemon may write"
            : "create it for the daemon's user, or set control.socket (or runtimeDirectory) to a place the daemon may write"
        try checkDirectory(
            ControlSocketBinder.parent(of: control.socket), what: "the control socket's directory (from \(socketOrigin))",
            field: "control.socket", remedy: socketRemedy, file: file, note: note)
        try checkSocketFile(file: file, note: note)
    }

    /// The control socket's own path: the start replaces a socket there that nobody listens on,
    /// and refuses anything else (a regular file, a directory, a symbolic link), leaving it as
    /// it is (`ControlSocketBinder.bind`). Nothing is removed here either.
    private func checkSocketFile(file: String, note: (LoadStep) throws(ConfigurationError) -> Void) throws(ConfigurationError) {
        let path = control.socket
        try note(LoadStep("looking at", file: file, fieldPath: "control.socket", path: path))
        guard let found = try? FileStatus(path: path, followSymlinks: false), found.kind != .socket else { return }
        throw ConfigurationError(
            file: file, fieldPath: "control.socket",
            problem: "the control socket's path (from \(socketOrigin)) \(JSONValue.quotedPathForMessage(path)) exists and is "
                + "\(Self.describe(found.kind)), not a socket; the daemon would not start (it replaces only a socket nobody "
                + "listens on, and leaves anything else there as it is): remove it or choose another control.socket",
            errno: EEXIST)
    }

    private func checkDirectory(
        _ directory: String, what: String, field: String, remedy: String, file: String,
        note: (LoadStep) throws(ConfigurationError) -> Void
    ) throws(ConfigurationError) {
        let shown = JSONValue.quotedPathForMessage(directory)
        let user = FileOwnership.currentUser
        func fail(_ problem: String, _ errno: Int32) -> ConfigurationError {
            ConfigurationError(file: file, fieldPath: field, problem: "\(problem); the daemon would not start: \(remedy)", errno: errno)
        }
        func status(_ path: String) throws(ConfigurationError) -> Result<FileStatus, Errno> {
            try note(LoadStep("looking at", file: file, fieldPath: field, path: path))
            do { return .success(try FileStatus(path: path, followSymlinks: true)) } catch { return .failure(error) }
        }
        func refusal(_ path: String) throws(ConfigurationError) -> Errno? {
            try note(LoadStep("checking access to", file: file, fieldPath: field, path: path))
            do {
                try FileDescriptor.currentWorkingDirectory.checkAccess(at: path, [.write, .execute])
                return nil
            } catch {
                return error
            }
        }
        switch try status(directory) {
        case let .success(found) where found.kind == .directory:
            if let error = try refusal(directory) {
                throw fail("the user running the check (\(user)) may not write in \(what) \(shown) (\(FileOwnership.describe(found)); "
                    + "write and search access): \(error)", error.rawValue)
            }
        case let .success(found):
            throw fail("\(what) \(shown) is \(Self.describe(found.kind)), not a directory", ENOTDIR)
        case let .failure(error) where error == .noSuchFileOrDirectory:
            // The nearest directory there on the way: the start makes what is missing below it.
            var nearest = "/"
            var part = ""
            walk: for component in ConfigurationDirectories.normalizedComponents(directory).dropLast() {
                part += "/" + component
                switch try status(part) {
                case let .success(found) where found.kind == .directory:
                    nearest = part
                case let .success(found):
                    throw fail("cannot create \(what) \(shown): \(JSONValue.quotedPathForMessage(part)) on its way is "
                        + "\(Self.describe(found.kind)), not a directory", ENOTDIR)
                case .failure:
                    // A symbolic link that leads nowhere is there all the same: the start's
                    // mkdir of it fails (EEXIST) rather than making the directory.
                    if let link = try? FileStatus(path: part, followSymlinks: false), link.kind == .symbolicLink {
                        throw fail("cannot create \(what) \(shown): \(JSONValue.quotedPathForMessage(part)) on its way is a symbolic "
                            + "link\(Self.linkTarget(of: part)), which does not exist", ENOENT)
                    }
                    break walk
                }
            }
            guard let error = try refusal(nearest) else { return }
            let found = (try? FileStatus(path: nearest, followSymlinks: true)).map { " (\(FileOwnership.describe($0)))" } ?? ""
            throw fail("cannot create \(what) \(shown): the user running the check (\(user)) may not create it in "
                + "\(JSONValue.quotedPathForMessage(nearest))\(found), the nearest directory there on its way (write and search "
                + "access): \(error)", error.rawValue)
        case let .failure(error):
            throw fail("cannot look at \(what) \(shown) as the user running the check (\(user)): \(error)", error.rawValue)
        }
    }

    /// The lock file the start opens for writing in an existing state directory, and the jobs'
    /// state file it reads: one left by a run as another user (root) refuses the start.
    private func checkLockFile(file: String, note: (LoadStep) throws(ConfigurationError) -> Void) throws(ConfigurationError) {
        let path = ConfigurationDirectories.join(stateDirectory, StateDirectoryLock.fileName)
        try note(LoadStep("looking at", file: file, fieldPath: "stateDirectory", path: path))
        try checkLockFile(path, file: file)
        let state = ConfigurationDirectories.join(stateDirectory, SyncStateStore.fileName)
        try note(LoadStep("looking at", file: file, fieldPath: "stateDirectory", path: state))
        if let (problem, errno) = StateDirectoryLock.unreadableStateFile(directory: stateDirectory, who: "the user running the check") {
            throw ConfigurationError(file: file, fieldPath: "stateDirectory", problem: problem, errno: errno)
        }
    }

    private func checkLockFile(_ path: String, file: String) throws(ConfigurationError) {
        guard let found = try? FileStatus(path: path, followSymlinks: false), found.kind == .regular else { return }
        do {
            try FileDescriptor.currentWorkingDirectory.checkAccess(at: path, [.read, .write])
        } catch {
            // The checking user's own file, without read and write for its owner: no other
            // user's run left it; its mode is what to mend.
            guard found.userID != CurrentProcess.effectiveUserID else {
                let shownPath = path.shellWord.escapingControlCharacters
                throw ConfigurationError(
                    file: file, fieldPath: "stateDirectory",
                    problem: "the user running the check (\(FileOwnership.currentUser)) may not open its own lock file "
                        + "\(JSONValue.quotedPathForMessage(path)) (\(FileOwnership.describe(found))) for writing: \(error); "
                        + "give its owner read and write (chmod 0600 \(shownPath))",
                    errno: error.rawValue)
            }
            throw ConfigurationError(
                file: file, fieldPath: "stateDirectory",
                problem: StateDirectoryLock.foreignFileProblem(
                    path: path, status: found, directory: stateDirectory, error: error, who: "the user running the check"),
                errno: error.rawValue)
        }
    }
}
