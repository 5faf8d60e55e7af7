import WeaveDI

/// A path of the daemon's own that no mirror destination may reach: the control socket (the
/// configured one, and under socket activation the one systemd passed), the state directory,
/// the files the daemon keeps at the state directory's top (`weavedid.lock`, `jobs.json` and the
/// copy of a damaged one, `jobs.json.corrupt`), and the metrics file
/// (`sync.metricsFile`), when there is one.
///
/// A destination that is or contains the state directory would, with `delete`, remove
/// `weavedid.lock` (`StateDirectoryLock`: a second daemon then starts beside this one) and
/// `jobs.json` (the jobs' last results), and without `delete` overwrite them. A destination
/// inside the state directory is fine, and usual: the example configuration mirrors into
/// `/var/lib/weavedi/mirror/docs`, the one directory besides `/run/weavedi` that the packaged
/// unit may write. The daemon touches only those two files and the temporary files of
/// `jobs.json` (`.jobs.json.tmp.N`, of which it removes only regular files) at the top, and a
/// run writes only below its destination. But a destination at `weavedid.lock`, `jobs.json` or
/// `jobs.json.corrupt`, or below one, fails every run on a file that is no directory, or, made
/// while the file is missing (the job's fix makes a missing destination), turns it into a
/// directory that no state file can replace, or in which no damaged state file can be kept
/// (and a deleting run would remove the copy kept): it is refused too.
///
/// The socket systemd passes (socket activation) is bound where the socket unit says
/// (`ListenStream=`), which need not be `control.socket`: it is the one served, and a deleting
/// job would remove it as it would the configured one, leaving clients nothing to connect to
/// until the daemon and its socket unit are restarted. The daemon knows it only when it is
/// passed: at its start, its reloads and its runs' starts, not at a `--check-config` to which
/// none is passed.
///
/// The metrics file is rewritten after each run, through a temporary file beside it: a
/// destination that contains it would, with `delete`, remove it (and the directory it is
/// written in, so that the next writes fail), and without `delete` overwrite it with a file of
/// the source's; one at it or below it fails every run on a file that is no directory, or turns
/// its path into a directory that no metrics file can replace. Every relation is refused.
///
/// `ConfigurationDecoder` applies this to the file's paths, and
/// `DaemonConfiguration.checkMirrorTreesOnDisk` to the paths they resolve to and by device and
/// inode (`MountedLocation`); a mirror run's start (`MirrorRoots`) does the same again, as a
/// link or mount made since the load can put one of these paths under a destination
/// (`Found`).
struct ReservedPath: Sendable, Equatable {
    /// Which of the daemon's paths it is.
    enum Kind: Sendable {
        case controlSocket
        /// The socket systemd passed, bound at another path than `control.socket`.
        case passedSocket
        case stateDirectory
        /// `weavedid.lock`, `jobs.json` or `jobs.json.corrupt` in the state directory.
        case stateFile
        /// `sync.metricsFile`.
        case metricsFile
    }

    /// Which of the daemon's paths it is.
    let kind: Kind
    /// What it is, for the messages: `the control socket`, `the state directory`, …
    let name: String
    /// The path, as configured or derived from the defaults.
    let path: String
    /// The relations of a destination to it that are refused.
    let refused: [MirrorTreeOverlap.Relation]
    /// Why, after the refusal; for the control socket, empty, or where its default path comes
    /// from when that is the working directory.
    let consequence: String

    /// The field that sets it: `control.socket`, `stateDirectory` or `sync.metricsFile`; nil
    /// for the socket systemd passed, which the file does not set.
    var field: String? {
        switch kind {
        case .controlSocket: "control.socket"
        case .passedSocket: nil
        case .stateDirectory, .stateFile: "stateDirectory"
        case .metricsFile: "sync.metricsFile"
        }
    }

    /// The control socket, the socket systemd passed if it is bound at `passedSocket`, the
    /// state directory and the daemon's files in it, and the metrics file if there is one, in
    /// that order.
    static func all(of configuration: DaemonConfiguration, passedSocket: String? = nil) -> [ReservedPath] {
        [controlSocket(of: configuration)] + passed(passedSocket, of: configuration) + state(of: configuration)
            + metricsFile(of: configuration)
    }

    /// The control socket. When it is the default below the working directory, the message
    /// says so: that a destination such as the project's own directory holds it follows from
    /// where weavedid was started, which the configuration does not show.
    static func controlSocket(of configuration: DaemonConfiguration) -> ReservedPath {
        // A variable set to a relative path is ignored as if unset; said so, not that it is unset.
        let variables: String
        switch configuration.ignoredRuntimeVariables {
        case []: variables = "neither RUNTIME_DIRECTORY nor XDG_RUNTIME_DIR is set"
        case ["RUNTIME_DIRECTORY"]: variables = "RUNTIME_DIRECTORY is set but relative (ignored) and XDG_RUNTIME_DIR is not set"
        case ["XDG_RUNTIME_DIR"]: variables = "RUNTIME_DIRECTORY is not set and XDG_RUNTIME_DIR is set but relative (ignored)"
        default: variables = "RUNTIME_DIRECTORY and XDG_RUNTIME_DIR are set but relative (ignored)"
        }
        let origin = configuration.socketIsWorkingDirectoryDefault
            ? "; that is its default path, in the working directory (.weavedi/run/control.sock), as no configuration "
                + "file sets control.socket or runtimeDirectory and \(variables): "
                + "set control.socket, or start weavedid in another directory"
            : ""
        return ReservedPath(
            kind: .controlSocket, name: "the control socket", path: configuration.control.socket,
            refused: [.same, .contains], consequence: origin)
    }

    /// The socket systemd passed, bound at `path` (`DaemonContext.passedControlSocketPath`);
    /// none without one, or when it is `control.socket` as written.
    static func passed(_ path: String?, of configuration: DaemonConfiguration) -> [ReservedPath] {
        guard let path, MirrorTreeOverlap.relation(of: path, to: configuration.control.socket) != .same else { return [] }
        return [
            ReservedPath(
                kind: .passedSocket, name: "the control socket passed by systemd", path: path, refused: [.same, .contains],
                consequence: "; the daemon serves it in place of control.socket, and the job would delete or overwrite it; "
                    + "choose another destination, or another path for the socket unit's ListenStream=")
        ]
    }

    /// The state directory and the daemon's files in it.
    static func state(of configuration: DaemonConfiguration) -> [ReservedPath] {
        let state = configuration.stateDirectory
        let stateFile = "; a destination may lie inside the state directory, but not at the daemon's own files there"
        return [
            ReservedPath(
                kind: .stateDirectory, name: "the state directory", path: state, refused: [.same, .contains],
                consequence: "; the job would overwrite or delete the daemon's lock (\(StateDirectoryLock.fileName)) "
                    + "and the jobs' state file (\(SyncStateStore.fileName)) there"),
            ReservedPath(
                kind: .stateFile, name: "the daemon's lock file", path: ConfigurationDirectories.join(state, StateDirectoryLock.fileName),
                refused: [.same, .inside], consequence: stateFile),
            ReservedPath(
                kind: .stateFile, name: "the jobs' state file", path: ConfigurationDirectories.join(state, SyncStateStore.fileName),
                refused: [.same, .inside], consequence: stateFile),
            ReservedPath(
                kind: .stateFile, name: "the copy kept of a damaged jobs' state file",
                path: ConfigurationDirectories.join(state, SyncStateStore.damagedCopyName), refused: [.same, .inside],
                consequence: stateFile),
        ]
    }

    /// The metrics file (`sync.metricsFile`), or none when it is not set.
    static func metricsFile(of configuration: DaemonConfiguration) -> [ReservedPath] {
        guard let file = configuration.sync.metricsFile else { return [] }
        return [
            ReservedPath(
                kind: .metricsFile, name: "the metrics file", path: file, refused: [.same, .contains, .inside],
                consequence: "; the daemon writes it after each run, and the job would delete or overwrite it, "
                    + "or keep it from being written; set sync.metricsFile outside every destination")
        ]
    }

    /// Whether a destination that stands `relation` to this path is refused.
    func refuses(_ relation: MirrorTreeOverlap.Relation) -> Bool {
        refused.contains(relation)
    }

    /// `the destination "/var/lib" contains the state directory "/var/lib/weavedi"…`: `subject`
    /// (the destination), how it stands to this path, `how` (such as ` through a mount: …`) and
    /// the consequence. A destination that is the socket's own path is said to contain it.
    func problem(_ subject: String, _ relation: MirrorTreeOverlap.Relation, how: String = "") -> String {
        let verb = kind == .controlSocket || kind == .passedSocket ? "contains" : relation.verb
        return "\(subject) \(verb) \(name) \(JSONValue.quotedPathForMessage(path))\(how)\(consequence)"
    }
}

extension ReservedPath {
    /// A reserved path where it leads on this machine: resolved through links (`ResolvedPath`)
    /// and located by device and inode among a mount table (`MountedLocation`), so that a
    /// destination can be checked against it both ways. The load's check and each mirror run's
    /// start use it alike.
    struct Found {
        /// The path, as configured.
        let reserved: ReservedPath
        /// Where it leads through links.
        let resolved: String
        /// Where it lies among the mounts.
        let located: MountedLocation

        /// Resolves and locates `reserved` among `mounts` (reads the file system).
        init(_ reserved: ReservedPath, mounts: MountTable) {
            self.reserved = reserved
            resolved = ResolvedPath.resolve(reserved.path)
            located = MountedLocation.locate(resolved, mounts: mounts)
        }

        /// Why a destination that was configured as `configured`, resolves to `resolved` and
        /// lies at `located` may not be mirrored into, or nil when it stays clear of this path:
        /// `subject` (such as `the destination "/srv" of job "docs"`), how it reaches this path,
        /// through symbolic links or through a mount, and the consequence; as written, when the
        /// two paths stand so without links (the file's own check, which sees neither the
        /// built-in default's state directory nor anything but the file, did not refuse them).
        /// Every path is quoted (`JSONValue.quotedPathForMessage`), as `subject`'s should be: the
        /// load's messages and a run's say it alike.
        func problem(
            _ subject: String, configured: String, resolved destination: String, located destinationLocation: MountedLocation
        ) -> String? {
            if let relation = MirrorTreeOverlap.relation(of: destination, to: resolved), reserved.refuses(relation) {
                if MirrorTreeOverlap.relation(of: configured, to: reserved.path) == relation {
                    return reserved.problem(subject, relation)
                }
                let how = " through symbolic links "
                    + DaemonConfiguration.resolutions(configured, destination, reserved.path, resolved)
                return reserved.problem(subject, relation, how: how)
            }
            if let overlap = destinationLocation.relation(to: located), reserved.refuses(overlap.relation) {
                return reserved.problem(subject, overlap.relation, how: " through a mount: \(overlap.explanation)")
            }
            return nil
        }
    }
}
