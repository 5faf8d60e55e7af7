import Glibc

/// A child process started with `posix_spawn(3)`, for tests and tools.
///
/// The child gets exactly the given environment, an empty signal mask and
/// default dispositions for all signals (`POSIX_SPAWN_SETSIGMASK` and
/// `POSIX_SPAWN_SETSIGDEF`), so it stays killable even when the parent blocks
/// `SIGTERM` for a `SignalReader`. The child gets descriptors 0 to 2 only:
/// every other descriptor of this process, close-on-exec or not, is closed in it
/// (glibc 2.34 and later), so a child never holds another's socket or pipe open
/// by chance. Captured output arrives on pipes owned by this value. The child
/// is not reaped automatically: call `wait()`.
public struct Subprocess: ~Copyable, Sendable {
    /// The child's process id.
    public let pid: Int32
    /// The read end of the child's standard output, when captured.
    public var standardOutput: OwnedDescriptor?
    /// The read end of the child's standard error, when captured.
    public var standardError: OwnedDescriptor?

    /// Starts `executable` with `arguments` (not including argv[0], which is `executable`).
    ///
    /// A name without `/` is searched in the `PATH` of `environment`, falling back
    /// to `/usr/local/bin:/usr/bin:/bin`; `ENOENT` is thrown when nothing matches.
    /// `workingDirectory` is where the child starts (`posix_spawn_file_actions_addchdir_np`).
    public static func spawn(
        _ executable: String,
        arguments: [String] = [],
        environment: [String: String],
        standardInput: SubprocessInput = .discard,
        standardOutput: SubprocessOutput = .inherit,
        standardError: SubprocessOutput = .inherit,
        workingDirectory: String? = nil
    ) throws(Errno) -> Subprocess {
        let path = try resolve(executable, searchPath: environment["PATH"])
        var actions = posix_spawn_file_actions_t()
        try checkReturnedErrno(posix_spawn_file_actions_init(&actions))
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        try checkReturnedErrno(posix_spawnattr_init(&attributes))
        defer { posix_spawnattr_destroy(&attributes) }

        var emptyMask = SignalSet().rawValue
        var allSignals = SignalSet.all.rawValue
        try checkReturnedErrno(posix_spawnattr_setsigmask(&attributes, &emptyMask))
        try checkReturnedErrno(posix_spawnattr_setsigdefault(&attributes, &allSignals))
        try checkReturnedErrno(posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)))

        if let workingDirectory {
            try checkReturnedErrno(workingDirectory.withCString { LinuxSymbols.addChdir(&actions, $0) })
        }
        if standardInput == .discard {
            try checkReturnedErrno(posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0))
        }
        var outputRead: OwnedDescriptor? = nil
        var errorRead: OwnedDescriptor? = nil
        // The parent's copies of the write ends must close so readers see end of file.
        var parentWriteEnds: [FileDescriptor] = []
        defer { for writeEnd in parentWriteEnds { try? writeEnd.close() } }
        for (target, disposition) in [(Int32(1), standardOutput), (Int32(2), standardError)] {
            switch disposition {
            case .inherit:
                break
            case .discard:
                try checkReturnedErrno(
                    posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0))
            case let .file(path):
                try checkReturnedErrno(
                    posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, 0o644))
            case .capture:
                // Both ends are close-on-exec; dup2 gives the child a plain copy on `target`.
                let pipe = try OwnedPipe.make()
                let writeEnd = pipe.writeEnd.release()
                parentWriteEnds.append(writeEnd)
                try checkReturnedErrno(posix_spawn_file_actions_adddup2(&actions, writeEnd.rawValue, target))
                if target == 1 {
                    outputRead = Optional(pipe.readEnd)
                } else {
                    errorRead = Optional(pipe.readEnd)
                }
            }
        }

        // Last, after the dup2s onto 0 to 2 that it must not undo.
        if let addCloseFrom = LinuxSymbols.addCloseFrom {
            try checkReturnedErrno(addCloseFrom(&actions, 3))
        }

        let argv = [path] + arguments
        let envp = environment.map { "\($0.key)=\($0.value)" }.sorted()
        var pid: pid_t = 0
        let result = withCStringArray(argv) { argvPointer in
            withCStringArray(envp) { envpPointer in
                posix_spawn(&pid, path, &actions, &attributes, argvPointer, envpPointer)
            }
        }
        try checkReturnedErrno(result)
        return Subprocess(pid: pid, standardOutput: outputRead, standardError: errorRead)
    }

    /// Spawns with captured output, reads both streams to the end and waits for the exit.
    public static func run(
        _ executable: String,
        arguments: [String] = [],
        environment: [String: String],
        standardInput: SubprocessInput = .discard
    ) throws(Errno) -> SubprocessResult {
        var child = try spawn(
            executable, arguments: arguments, environment: environment,
            standardInput: standardInput, standardOutput: .capture, standardError: .capture)
        let output: (standardOutput: [UInt8], standardError: [UInt8])
        do {
            output = try child.collectOutput()
        } catch {
            try? child.kill(.kill)
            _ = try? child.wait()
            throw error
        }
        let status = try child.wait()
        return SubprocessResult(status: status, standardOutput: output.standardOutput,
                                standardError: output.standardError)
    }

    /// Sends `signal` to the child (`kill(2)`).
    public func kill(_ signal: Signal = .terminate) throws(Errno) {
        try signal.send(to: pid)
    }

    /// Blocks until the child terminates (`waitpid(2)`, retrying `EINTR`) and reaps it.
    public func wait() throws(Errno) -> TerminationStatus {
        while true {
            var status: Int32 = 0
            _ = try valueOrErrno { waitpid(pid, &status, 0) }
            if let termination = TerminationStatus(waitStatus: status) { return termination }
        }
    }

    /// Reaps the child if it has terminated (`waitpid` with `WNOHANG`); `nil` while it runs.
    public func waitIfExited() throws(Errno) -> TerminationStatus? {
        var status: Int32 = 0
        let reaped = try valueOrErrno { waitpid(pid, &status, WNOHANG) }
        return reaped == 0 ? nil : TerminationStatus(waitStatus: status)
    }

    /// Reads captured standard output and error until both reach end of file, then closes them.
    public mutating func collectOutput() throws(Errno) -> (standardOutput: [UInt8], standardError: [UInt8]) {
        let output = standardOutput.take()
        let error = standardError.take()
        let outputRaw = Self.handle(output)
        var collected: [[UInt8]] = [[], []]
        var entries = [outputRaw, Self.handle(error)].compactMap { raw in
            raw.map { PollDescriptor($0, events: .readable) }
        }
        while entries.contains(where: { $0.descriptor.rawValue >= 0 }) {
            try PollDescriptor.poll(&entries, timeout: nil)
            for index in entries.indices where !entries[index].returnedEvents.isEmpty {
                let chunk = try entries[index].descriptor.read(upToCount: 64 * 1024)
                if chunk.isEmpty {
                    entries[index].descriptor = FileDescriptor(rawValue: -1)  // poll skips negative fds
                } else {
                    collected[entries[index].descriptor == outputRaw ? 0 : 1].append(contentsOf: chunk)
                }
            }
        }
        _ = consume output  // closes the read ends
        _ = consume error
        return (collected[0], collected[1])
    }

    /// The non-owning handle inside an optional owned descriptor, without consuming it.
    private static func handle(_ owned: borrowing OwnedDescriptor?) -> FileDescriptor? {
        switch owned {
        case .some(let descriptor): descriptor.descriptor
        case .none: nil
        }
    }

    /// Finds `name` in `searchPath` unless it contains a slash.
    private static func resolve(_ name: String, searchPath: String?) throws(Errno) -> String {
        if name.contains("/") { return name }
        let directories = (searchPath ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
        for directory in directories where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0,
               let status = try? FileStatus(path: candidate), status.kind == .regular {
                return candidate
            }
        }
        throw Errno.noSuchFileOrDirectory
    }

    /// Calls `body` with a NULL-terminated array of C strings that lives for the call.
    private static func withCStringArray<R>(
        _ strings: [String],
        _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R
    ) -> R {
        let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
