import Glibc
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Everything `weavedid` reads from its JSON configuration file, with defaults applied.
///
/// Obtain one with `load(path:environment:workingDirectory:)` for a file,
/// `builtInDefault(environment:workingDirectory:)` when there is none, or
/// `resolve(explicitPath:environment:workingDirectory:)` for the daemon's lookup order.
/// Directories that a file omits are derived from the environment (`$RUNTIME_DIRECTORY`,
/// `$XDG_RUNTIME_DIR`, `$STATE_DIRECTORY`; see `ConfigurationDirectories` and the README).
public struct DaemonConfiguration: Sendable, Equatable {
    /// Where a configuration came from.
    public enum Source: Sendable, Equatable {
        /// Read from the JSON file at `path`.
        case file(path: String)
        /// No file: the built-in default with its example mirror job.
        case builtInDefault
    }

    /// Where this configuration came from.
    public var source: Source
    /// The directory for the control socket and other runtime files.
    public var runtimeDirectory: String
    /// The directory for persistent state.
    public var stateDirectory: String
    /// How long the daemon drains jobs and connections after SIGTERM; default 10 seconds.
    public var shutdownTimeout: Duration
    /// The control socket and who may use it.
    public var control: Control
    /// The periodic health checks.
    public var health: Health
    /// The sync jobs and how many may run at once.
    public var sync: Sync
    /// What put `control.socket` where it is, for a message about it.
    var socketOrigin: SocketOrigin
    /// Whether the file sets `stateDirectory`: `STATE_DIRECTORY` is then not used, and one set
    /// to a relative path is no warning.
    var stateDirectoryIsSet = false
    /// `RUNTIME_DIRECTORY` and `XDG_RUNTIME_DIR` where the environment sets them to a relative
    /// path, which is ignored as if unset, for a message about the socket's default path
    /// (`ConfigurationDirectories.relativeVariables`).
    var ignoredRuntimeVariables: [String]

    /// Whether `control.socket` is the default below the working directory
    /// (`.weavedi/run/control.sock`): neither the configuration (`control.socket`,
    /// `runtimeDirectory`) nor the environment (`RUNTIME_DIRECTORY`, `XDG_RUNTIME_DIR`) put it
    /// elsewhere. A message about it then says so (`ReservedPath.controlSocket`).
    var socketIsWorkingDirectoryDefault: Bool { socketOrigin == .workingDirectory }

    /// What put `control.socket` where it is: the field itself, `runtimeDirectory`, the
    /// environment (systemd's `RUNTIME_DIRECTORY`, or an `XDG_RUNTIME_DIR` the daemon may
    /// have inherited from a login session), or the default below the working directory.
    enum SocketOrigin: Equatable, Sendable, CustomStringConvertible {
        case controlSocket, runtimeDirectory, runtimeDirectoryVariable, xdgRuntimeDirectory, workingDirectory

        /// `control.socket`, `RUNTIME_DIRECTORY in the environment`, …
        var description: String {
            switch self {
            case .controlSocket: "control.socket"
            case .runtimeDirectory: "runtimeDirectory"
            case .runtimeDirectoryVariable: "RUNTIME_DIRECTORY in the environment"
            case .xdgRuntimeDirectory: "XDG_RUNTIME_DIR in the environment"
            case .workingDirectory: "the default below the working directory"
            }
        }
    }

    /// The path the daemon reads when no `--config` is given: `/etc/weavedi/weavedid.json`.
    public static let defaultPath = "/etc/weavedi/weavedid.json"

    /// The path of the file this configuration was read from, or nil for the built-in default.
    public var filePath: String? {
        if case let .file(path) = source { return path }
        return nil
    }

    /// What messages name as where this configuration came from: its file's path, or
    /// "built-in default".
    public var sourceName: String { filePath ?? Self.builtInDefaultName }

    /// How messages name the built-in default, where they name a configuration's file.
    public static let builtInDefaultName = "built-in default"

    /// Whether this is the built-in default rather than a file's content.
    public var isBuiltInDefault: Bool { source == .builtInDefault }

    /// The defaults every file starts from: directories from the environment, no jobs.
    init(source: Source, environment: [String: String], workingDirectory: String) {
        let runtime = ConfigurationDirectories.runtime(environment: environment, workingDirectory: workingDirectory)
        self.source = source
        runtimeDirectory = runtime
        stateDirectory = ConfigurationDirectories.state(environment: environment, workingDirectory: workingDirectory)
        shutdownTimeout = .seconds(10)
        control = Control(socket: ConfigurationDirectories.join(runtime, "control.sock"))
        health = Health()
        sync = Sync()
        socketOrigin = ConfigurationDirectories.firstAbsoluteEntry(environment["RUNTIME_DIRECTORY"]) != nil ? .runtimeDirectoryVariable
            : ConfigurationDirectories.runtime(environment: environment) != nil ? .xdgRuntimeDirectory : .workingDirectory
        ignoredRuntimeVariables = ConfigurationDirectories.relativeVariables(environment: environment).filter { $0 != "STATE_DIRECTORY" }
    }

    /// The configuration used when there is no file: environment-derived directories and one
    /// example mirror job, `example`, from `<workingDirectory>/.weavedi/example/source` to
    /// `<workingDirectory>/.weavedi/example/mirror` every 60 seconds, also at start.
    ///
    /// It is not validated here: with a very long working directory and neither
    /// `$RUNTIME_DIRECTORY` nor `$XDG_RUNTIME_DIR` set, the control socket path can exceed the
    /// 107-byte limit, which `resolve` refuses.
    public static func builtInDefault(environment: [String: String], workingDirectory: String) -> DaemonConfiguration {
        var configuration = DaemonConfiguration(
            source: .builtInDefault, environment: environment, workingDirectory: workingDirectory)
        let example = ConfigurationDirectories.join(workingDirectory, ".weavedi/example")
        var job = Job(name: "example")
        job.interval = .seconds(60)
        job.runAtStart = true
        job.mirror = Mirror(
            source: ConfigurationDirectories.join(example, "source"),
            destination: ConfigurationDirectories.join(example, "mirror"))
        configuration.sync.jobs = [job]
        return configuration
    }

    /// Reads and validates the JSON file at `path`.
    ///
    /// Fields the file omits get their defaults; directories come from `environment` and
    /// `workingDirectory`. Throws the first problem in document order: an unreadable file
    /// (with its `errno`), a syntax error (with line and column) or an invalid field
    /// (`EINVAL`, naming the field). Once the file is read, before the rest, it tells `note`
    /// that it is checking what it read (`LoadStep.checking`: a `StepDeadline` step without a
    /// deadline, since it waits on no file system), whose error it throws. A UTF-8 byte order
    /// mark at the start, which some editors write, is skipped (RFC 8259 lets a parser ignore
    /// it); lines and columns in errors are counted after it.
    public static func load(
        path: String,
        environment: [String: String],
        workingDirectory: String,
        noting note: (LoadStep) throws(ConfigurationError) -> Void = { _ in }
    ) throws(ConfigurationError) -> DaemonConfiguration {
        let limits = JSONLimits()
        let file = try readFile(path: path, maxBytes: limits.maxBytes)
        try note(.checking(file: path))
        let bytes = file.starts(with: Self.byteOrderMark) ? Array(file.dropFirst(Self.byteOrderMark.count)) : file
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes, limits: limits)
        } catch {
            throw ConfigurationError(file: path, fieldPath: nil, problem: error.description, errno: EINVAL)
        }
        var decoder = ConfigurationDecoder(file: path, environment: environment, workingDirectory: workingDirectory)
        return try decoder.decode(document)
    }

    /// U+FEFF in UTF-8, as a file's first bytes.
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The daemon's lookup order: `explicitPath` (from `--config`) if given, which must exist;
    /// otherwise `defaultPath` if it exists; otherwise the built-in default. `note` hears what
    /// `load` tells it.
    public static func resolve(
        explicitPath: String?,
        environment: [String: String],
        workingDirectory: String,
        defaultPath: String = DaemonConfiguration.defaultPath,
        noting note: (LoadStep) throws(ConfigurationError) -> Void = { _ in }
    ) throws(ConfigurationError) -> DaemonConfiguration {
        if let explicitPath {
            return try load(path: explicitPath, environment: environment, workingDirectory: workingDirectory, noting: note)
        }
        do {
            return try load(path: defaultPath, environment: environment, workingDirectory: workingDirectory, noting: note)
        } catch where error.errno == ENOENT && error.fieldPath == nil && !hasDanglingLink(defaultPath) {
            let configuration = builtInDefault(environment: environment, workingDirectory: workingDirectory)
            try configuration.checkBuiltInDefaultSocket()
            return configuration
        }
    }

    /// Whether `path`, or the directory it is in, is a symbolic link that leads nowhere: a
    /// default file meant to be there, whose target went (or was never made), is an error to
    /// report, not a reason to start on the built-in default.
    static func hasDanglingLink(_ path: String) -> Bool {
        [path, parent(of: path)].contains { candidate in
            guard let status = try? FileStatus(path: candidate, followSymlinks: false),
                status.kind == .symbolicLink
            else { return false }
            return (try? FileStatus(path: candidate)) == nil
        }
    }

    /// Refuses a built-in default whose socket path does not fit in a Unix socket address: it
    /// lies below the working directory when neither `$RUNTIME_DIRECTORY` nor
    /// `$XDG_RUNTIME_DIR` is set.
    private func checkBuiltInDefaultSocket() throws(ConfigurationError) {
        guard let problem = Self.socketLengthProblem(control.socket, isDefault: true) else { return }
        throw ConfigurationError(
            file: Self.builtInDefaultName, fieldPath: "control.socket",
            problem: problem + "; start weavedid in a shorter working directory, set RUNTIME_DIRECTORY or XDG_RUNTIME_DIR, or give it a configuration file that sets control.socket")
    }

    /// Why `socket` cannot be a Unix socket address (over 107 bytes, `sun_path`), or nil when it
    /// fits; `isDefault` names it as the default path, which the message then quotes.
    static func socketLengthProblem(_ socket: String, isDefault: Bool) -> String? {
        let length = socket.utf8.count
        let maximum = UnixSocketAddress.maximumPathLength
        guard length > maximum else { return nil }
        let subject = isDefault ? "the default socket path \(JSONValue.quotedPathForMessage(socket))" : "the path"
        return "\(subject) is \(length) bytes long, but a Unix socket path may have at most \(maximum) bytes (sun_path)"
    }

    /// Reads the file with `open(2)`/`read(2)`. An open or read failure becomes a
    /// `ConfigurationError` carrying its `errno`, anything but a regular file one with `EINVAL`
    /// (a FIFO would block the start or a reload for good, a device could be endless), and a
    /// file over `maxBytes` one with `EFBIG` (reading stops there).
    private static func readFile(path: String, maxBytes: Int) throws(ConfigurationError) -> [UInt8] {
        let bytes: [UInt8]?
        do {
            bytes = try readBounded(path: path, maxBytes: maxBytes)
        } catch {
            switch error {
            case let .notRegular(kind):
                throw ConfigurationError(
                    file: path, fieldPath: nil, problem: "cannot read: not a regular file (\(describe(kind)))", errno: EINVAL)
            case let .system(error):
                throw ConfigurationError(
                    file: path, fieldPath: nil, problem: "cannot read: \(error)\(readFailureDetail(path: path, error: error))",
                    errno: error.rawValue)
            }
        }
        guard let bytes else {
            throw ConfigurationError(
                file: path, fieldPath: nil,
                problem: "cannot read: the file is larger than \(maxBytes) bytes", errno: EFBIG)
        }
        return bytes
    }

    /// What a file of `kind` is, for messages: "a named pipe", "a regular file".
    static func describe(_ kind: FileKind) -> String {
        switch kind {
        case .regular: "a regular file"
        case .directory: "a directory"
        case .symbolicLink: "a symbolic link"
        case .fifo: "a named pipe"
        case .characterDevice: "a character device"
        case .blockDevice: "a block device"
        case .socket: "a socket"
        default: "of an unknown type"
        }
    }

    /// What follows "is a regular file, " (or another kind) in a message on a mirror root that
    /// is no directory.
    static let mirrorRootsAreDirectories = "not a directory; a mirror's source and destination are directories: "
        + "name the directory to mirror, or the one to mirror into"

    enum ReadFailure: Error {
        case system(Errno)
        case notRegular(FileKind)
    }

    /// The whole regular file, or nil once it exceeds `maxBytes`. Opened without blocking, so
    /// that a FIFO with no writer fails here instead of hanging the open. The jobs' state file
    /// is read this way too (`SyncStateStore.load`).
    static func readBounded(path: String, maxBytes: Int) throws(ReadFailure) -> [UInt8]? {
        do {
            let file = try FileDescriptor.open(path, .readOnly, options: [.nonBlocking, .noControllingTerminal])
            let kind = try file.descriptor.status().kind
            if kind == .directory { throw Errno.isDirectory }
            guard kind == .regular else { throw ReadFailure.notRegular(kind) }
            var bytes: [UInt8] = []
            while true {
                let chunk = try file.descriptor.read(upToCount: 64 * 1024)
                if chunk.isEmpty { return bytes }
                bytes.append(contentsOf: chunk)
                if bytes.count > maxBytes { return nil }
            }
        } catch let error as ReadFailure {
            throw error
        } catch let error as Errno {
            throw .system(error)
        } catch {
            throw .system(.ioError)
        }
    }
}

extension DaemonConfiguration {
    /// The `health` section: how often the registry's checks run.
    public struct Health: Sendable, Equatable {
        /// How often health checks run; default 30 seconds, from 0.1 to 86400.
        public var interval: Duration = .seconds(30)
        /// How long a session may stay idle before it counts as unhealthy; default 300 seconds.
        public var sessionIdleLimit: Duration = .seconds(300)
    }
}
