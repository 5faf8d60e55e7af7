import WeaveDI
import WeaveDIControl
import WeaveDIPosix

extension DaemonConfiguration {
    /// What `weavedid --check-config` warns about on this machine, beyond what the start
    /// refuses: paths that the daemon starts without, and copes with at run time, but whose
    /// absence fails what needs them until they are there. One line each, led by its field path:
    ///
    /// - a mirror job's source that is not there: each run of the job fails;
    /// - a mirror job's destination root that is not there (and whether its parent is not
    ///   either): runs never create it, so each fails; `weavedictl fix job.NAME` creates it
    ///   with its parents, except with `destinationMountPoint`, where only a mount mends it;
    /// - the directory of `sync.metricsFile` that is not there, or is no directory: each write
    ///   of the metrics file fails (its check `sync.metricsFile` is degraded).
    ///
    /// A path that cannot be looked at (`EACCES` as a user that may not search a directory on
    /// the way) is said with the error, and so is one that is there but may not be used as a
    /// run needs (`faccessat` with `AT_EACCESS`, so ACLs count): a source to read and search, a
    /// destination root and the metrics file's directory to write in and search. A missing
    /// destination that is a symbolic link to nothing is said to be one, and a missing one with
    /// a symbolic link on its way is said to have it (the fix creates no root through a link). A
    /// source that is a symbolic link to nothing is said to be one, with its target (a run follows
    /// it). The built-in default's example job is not warned about as missing (but a dangling link
    /// as its source or destination is, as the start creates neither there, and so is a working directory
    /// where they cannot be created: `exampleJobWarnings`): the daemon creates its source and destination at start (`ExampleJob`). The
    /// paths are looked at as the user running the check, which need not be the daemon's: as
    /// root, every path is reachable.
    ///
    /// A disabled job's paths are warned about as an enabled one's, its name followed by
    /// `(job disabled)`: it runs by hand, and when it is enabled again.
    ///
    /// Under systemd (`underSystemd`, the daemon's own look: `DaemonContext.runsUnderSystemd`),
    /// a warning about a path says what the unit's sandbox does to it (`SandboxAdvice`): a
    /// destination read-only (`EROFS`) names `ReadWritePaths=`, a path that fails under `/home`,
    /// `/root` or `/run/user` names `ProtectHome=`, and a source or destination under `/tmp` or
    /// `/var/tmp` is a warning of its own (`PrivateTmp=`), even when it is there.
    ///
    /// Before each path it looks at, it tells `note` (`StepDeadline`, which gives up on a path
    /// that does not answer), whose error it throws.
    ///
    /// `atReload`: for a reload in effect, the warnings say the reload is (`the reload is in
    /// effect, but each run of the job fails until …`), not that the daemon starts.
    func fileSystemWarnings(
        underSystemd: Bool = false, atReload: Bool = false, noting note: (LoadStep) throws(ConfigurationError) -> Void = { _ in }
    ) throws(ConfigurationError) -> [String] {
        let goesOn = atReload ? "the reload is in effect" : "the daemon starts"
        let file = sourceName
        /// What the unit's sandbox does to `path`, which failed with `error`, after `; `.
        func sandbox(_ path: String, _ error: Errno? = nil) -> String {
            guard underSystemd else { return "" }
            if error == .readOnlyFileSystem { return "; " + SandboxAdvice.readOnly }
            return SandboxAdvice.homeHidden(path).map { "; " + $0 } ?? ""
        }
        func look(_ fieldPath: String, _ path: String, followSymlinks: Bool = true) throws(ConfigurationError) -> Result<FileKind, Errno> {
            try note(LoadStep("looking at", file: file, fieldPath: fieldPath, path: path))
            do {
                return .success(try FileStatus(path: path, followSymlinks: followSymlinks).kind)
            } catch {
                return .failure(error)
            }
        }
        /// The error of `faccessat(path, check, AT_EACCESS)`, or nil when the user running the
        /// check may do it.
        func refusal(_ fieldPath: String, _ path: String, _ check: AccessCheck) throws(ConfigurationError) -> Errno? {
            try note(LoadStep("checking access to", file: file, fieldPath: fieldPath, path: path))
            do {
                try FileDescriptor.currentWorkingDirectory.checkAccess(at: path, check)
                return nil
            } catch {
                return error
            }
        }
        func isMissing(_ error: Errno) -> Bool { error == .noSuchFileOrDirectory || error == .notDirectory }
        /// The first directory on the way to `path` that is a symbolic link, among those there.
        func linkOnTheWay(_ fieldPath: String, to path: String) throws(ConfigurationError) -> String? {
            var part = ""
            for component in ConfigurationDirectories.normalizedComponents(path).dropLast() {
                part += "/" + component
                guard case let .success(kind) = try look(fieldPath, part, followSymlinks: false) else { return nil }
                if kind == .symbolicLink { return part }
            }
            return nil
        }
        let fails = "\(goesOn), but each run of the job fails until"
        var warnings: [String] = []
        for (index, job) in sync.jobs.enumerated() {
            guard let mirror = job.mirror else { continue }
            // The built-in default's example job: the daemon creates its source and destination
            // as it starts (`ExampleJob.prepare`), so their absence is no warning.
            let createdAtStart = isBuiltInDefault && job.name == "example"
            let field = "sync.jobs[\(index)]"
            // A disabled job is never scheduled, but runs by hand (`weavedictl run-job`, a fix)
            // and once enabled again: its paths are warned about too, marked so.
            let name = DaemonConfiguration.Job.quoted(job.name) + (job.enabled ? "" : " (job disabled)")
            let source = "the source \(JSONValue.quotedPathForMessage(mirror.source)) of job \(name)"
            let destination = "the destination \(JSONValue.quotedPathForMessage(mirror.destination)) of job \(name)"
            if underSystemd {
                for (what, path, shown) in [("source", mirror.source, source), ("destination", mirror.destination, destination)] {
                    if let advice = SandboxAdvice.privateTmp(path) { warnings.append("\(field).\(what): \(shown): \(advice)") }
                }
            }
            switch try look("\(field).source", mirror.source) {
            case let .success(kind):
                if let error = try refusal("\(field).source", mirror.source, kind == .directory ? [.read, .execute] : .read) {
                    let access = kind == .directory ? "read and search access" : "read access"
                    warnings.append("\(field).source: cannot read \(source) (\(access)): \(error); \(fails) the daemon's user may read it"
                        + sandbox(mirror.source, error))
                }
            case let .failure(error) where isMissing(error):
                // A symbolic link to nothing: a run follows a source root that is a link (it
                // resolves the real path), so it works once the target is a directory. The
                // example job's start creates no source where a link is (`ExampleJob`).
                if case .success(.symbolicLink) = try look("\(field).source", mirror.source, followSymlinks: false) {
                    let target = Self.linkTarget(of: mirror.source)
                    // No file configures the example job's source: the advice is the link's.
                    let advice = createdAtStart
                        ? "a run follows the link, so create its target (or mount what it leads to), or remove the link (the "
                            + "daemon then creates the source as it starts)"
                        : "a run follows the link, so create its target (or mount what it leads to), or point the link, or the "
                            + "source, at a directory that exists"
                    warnings.append("\(field).source: \(source) is a symbolic link\(target), which does not exist; \(fails) it does: "
                        + advice)
                } else if !createdAtStart {
                    warnings.append("\(field).source: \(source) does not exist; \(fails) it does" + sandbox(mirror.source))
                }
            case let .failure(error):
                warnings.append("\(field).source: cannot look at \(source): \(error); \(fails) the daemon's user may read it"
                    + sandbox(mirror.source, error))
            }
            let error: Errno
            switch try look("\(field).destination", mirror.destination) {
            case .success(.directory):
                if let error = try refusal("\(field).destination", mirror.destination, [.write, .execute]) {
                    warnings.append("\(field).destination: cannot write in \(destination) (write and search access): \(error); "
                        + "\(fails) the daemon's user may write in it" + sandbox(mirror.destination, error))
                }
                continue
            case .success:
                continue  // Not a directory: the load refuses it.
            case let .failure(failure):
                error = failure
            }
            guard isMissing(error) else {
                warnings.append("\(field).destination: cannot look at \(destination): \(error); \(fails) the daemon's user may write it"
                    + sandbox(mirror.destination, error))
                continue
            }
            // A symbolic link to nothing: a run follows it (once it leads to a directory), but
            // the job's fix creates no root through a link, nor does the example job's start.
            if case .success(.symbolicLink) = try look("\(field).destination", mirror.destination, followSymlinks: false) {
                let target = Self.linkTarget(of: mirror.destination)
                // No file configures the example job's destination: the advice is the link's.
                let advice = createdAtStart
                    ? "create it by hand, or remove the link (the daemon then creates the destination as it starts; "
                    : "create it by hand, or configure the real path as the destination ("
                warnings.append("\(field).destination: \(destination) is a symbolic link\(target), which does not exist; \(fails) it does: "
                    + advice + "`weavedictl fix job.\(job.name)` does not create a destination through a symbolic link)")
                continue
            }
            if createdAtStart { continue }
            let parent = Self.parent(of: mirror.destination)
            var missing = "does not exist"
            if case let .failure(error) = try look("\(field).destination", parent), isMissing(error) {
                missing += ", nor its parent \(JSONValue.quotedPathForMessage(parent))"
            }
            if mirror.destinationMountPoint {
                warnings.append("\(field).destination: \(destination) \(missing); \(fails) a file system is mounted there (nothing "
                    + "creates it, as destinationMountPoint is set)")
            } else if let link = try linkOnTheWay("\(field).destination", to: mirror.destination) {
                // The fix makes the missing directories without following a link on the way.
                warnings.append("\(field).destination: \(destination) \(missing); \(fails) it does: runs never create it, and "
                    + "`weavedictl fix job.\(job.name)` creates no destination through the symbolic link "
                    + "\(JSONValue.quotedPathForMessage(link)) on its way: create it by hand, or configure the destination by its real path")
            } else {
                warnings.append("\(field).destination: \(destination) \(missing); \(fails) it does: runs never create it (once the "
                    + "daemon runs, `weavedictl fix job.\(job.name)` creates it, with its parents)" + sandbox(mirror.destination))
            }
        }
        try warnings += exampleJobWarnings(look: look, refusal: refusal)
        if let metricsFile = sync.metricsFile {
            let directory = Self.parent(of: metricsFile)
            let shown = "the directory \(JSONValue.quotedPathForMessage(directory)) of the metrics file"
            let fails = "\(goesOn), but each write of the metrics file fails (its check sync.metricsFile is degraded) until"
            switch try look("sync.metricsFile", directory) {
            case .success(.directory):
                if let error = try refusal("sync.metricsFile", directory, [.write, .execute]) {
                    warnings.append("sync.metricsFile: cannot write in \(shown) (write and search access): \(error); \(fails) the daemon's user may write there")
                }
            case let .success(kind):
                warnings.append("sync.metricsFile: \(shown) is \(Self.describe(kind)), not a directory; \(fails) it is one")
            case let .failure(error) where isMissing(error):
                warnings.append("sync.metricsFile: \(shown) does not exist; \(fails) it does: create it")
            case let .failure(error):
                warnings.append("sync.metricsFile: cannot look at \(shown): \(error); \(fails) the daemon's user may write there")
            }
        }
        return warnings
    }

    /// The built-in default's example job: the daemon creates its missing source and destination
    /// as it starts (`ExampleJob`, a source only where nothing is, not even a link), below the
    /// working directory; where the user running the check may not create them (write and
    /// search access to the nearest directory there on their way), one warning, naming that
    /// directory, as the start then creates nothing and each run fails.
    private func exampleJobWarnings(
        look: (String, String, Bool) throws(ConfigurationError) -> Result<FileKind, Errno>,
        refusal: (String, String, AccessCheck) throws(ConfigurationError) -> Errno?
    ) throws(ConfigurationError) -> [String] {
        guard isBuiltInDefault, let index = sync.jobs.firstIndex(where: { $0.name == "example" }),
            let mirror = sync.jobs[index].mirror
        else { return [] }
        let field = "sync.jobs[\(index)]"
        var checked: [String] = []
        var warnings: [String] = []
        for (what, path) in [("source", mirror.source), ("destination", mirror.destination)] {
            guard case let .failure(error) = try look("\(field).\(what)", path, true),
                error == .noSuchFileOrDirectory || error == .notDirectory,
                case .failure = try look("\(field).\(what)", path, false)  // a link is warned about as such
            else { continue }
            // The nearest directory there on the way, where the start makes the first one missing.
            var nearest = "/"
            var part = ""
            for component in ConfigurationDirectories.normalizedComponents(path).dropLast() {
                part += "/" + component
                guard case .success(.directory) = try look("\(field).\(what)", part, true) else { break }
                nearest = part
            }
            guard !checked.contains(nearest) else { continue }
            checked.append(nearest)
            guard let error = try refusal("\(field).\(what)", nearest, [.write, .execute]) else { continue }
            warnings.append("\(field): the built-in default's example job \"example\" has its source and destination created below "
                + "\(JSONValue.quotedPathForMessage(Self.parent(of: mirror.source))) as the daemon starts, but the user running the "
                + "check may not create them in \(JSONValue.quotedPathForMessage(nearest)) (write and search access): \(error); the "
                + "daemon starts (its state and runtime directories are elsewhere) but creates neither, and each run of the job fails: "
                + "start weavedid in a directory its user may write in, or give it a configuration file (--config)")
        }
        return warnings
    }

    /// ` to "TARGET"`, what the symbolic link at `path` names, for a warning; nothing when it
    /// cannot be read.
    static func linkTarget(of path: String) -> String {
        (try? FileDescriptor.currentWorkingDirectory.readSymbolicLink(at: path)).map { " to \(JSONValue.quotedPathForMessage($0))" } ?? ""
    }

    /// How many of `fileSystemWarnings` `--check-config` prints; past them, one line counts the
    /// others (the verdict counts them all), so that thousands of jobs make a few lines.
    static let pathWarningsShown = 10

    /// The lines `--check-config` prints of `warnings` (from `fileSystemWarnings`): the first
    /// `pathWarningsShown`, then one counting the others.
    static func shownPathWarnings(_ warnings: [String]) -> [String] {
        guard warnings.count > pathWarningsShown else { return warnings }
        return warnings.prefix(pathWarningsShown) + ["\(warnings.count - pathWarningsShown) more path warnings like these, not shown"]
    }

    /// The directory `path` (absolute, normalized or not) lies in: `/srv` for `/srv/docs/`.
    static func parent(of path: String) -> String {
        let components = ConfigurationDirectories.normalizedComponents(path)
        return "/" + components.dropLast().joined(separator: "/")
    }
}
