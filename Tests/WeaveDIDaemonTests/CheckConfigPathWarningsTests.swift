import Foundation
import Testing
import WeaveDIControl
import WeaveDIPosix

/// `weavedid --check-config` warns about the paths the daemon starts without but whose absence
/// fails runs or writes until they are there (a mirror job's source or destination root, the
/// metrics file's directory), naming the field and the path; the check still passes, as the
/// start does.
@Suite struct CheckConfigPathWarningsTests {
    /// A configuration of five mirror jobs and a metrics file, below `d`.
    static func document(_ d: String) -> String {
        func job(_ name: String, _ source: String, _ destination: String, mountPoint: Bool = false) -> String {
            #"{"name": "\#(name)", "source": "\#(d)/\#(source)", "destination": "\#(d)/\#(destination)", "interval": 3600, "destinationMountPoint": \#(mountPoint)}"#
        }
        let jobs = [
            job("here", "src/ok", "dst/here"), job("nosource", "src/none", "dst/x"), job("noroot", "src/ok", "dst/new"),
            job("noparent", "src/ok", "gone/deeper/new"), job("disk", "src/ok", "mnt/disk", mountPoint: true),
        ]
        return #"""
            {"stateDirectory": "\#(d)/state", "control": {"socket": "\#(d)/run/control.sock"},
             "sync": {"metricsFile": "\#(d)/textfile/weavedi.prom", "jobs": [\#(jobs.joined(separator: ",\n"))]}}
            """#
    }

    func check(_ config: String) throws -> SubprocessResult {
        try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
    }

    /// The check of `config` as root, which must pass without a word (root may do anything
    /// the test set up), then as `nobody`, which must pass: its result, for its warnings.
    /// The configuration's state and socket directories (`document`'s, `<d>/state` and `<d>/run`)
    /// are made open to `nobody` first: a check that cannot make them fails (78).
    func checkAsRootThenNobody(_ config: String) throws -> SubprocessResult {
        let d = (config as NSString).deletingLastPathComponent
        for name in ["state", "run"] {
            try FileManager.default.createDirectory(atPath: "\(d)/\(name)", withIntermediateDirectories: true)
            chmod("\(d)/\(name)", 0o777)
        }
        let asRoot = try check(config)
        #expect(asRoot.status == .exited(0), "\(asRoot.standardErrorText)")
        #expect(asRoot.standardErrorText == "")
        let asNobody = try Subprocess.run(
            "/usr/bin/setpriv", arguments: ["--reuid=65534", "--regid=65534", "--clear-groups", DaemonProcess.binary, "--check-config", "--config", config],
            environment: [:])
        #expect(asNobody.status == .exited(0), "\(asNobody.standardErrorText)")
        return asNobody
    }

    @Test func missingSourcesDestinationsAndMetricsDirectory_areWarnings_andTheCheckPasses() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        for path in ["src/ok", "dst/here", "dst/x", "mnt"] {
            try FileManager.default.createDirectory(atPath: "\(d)/\(path)", withIntermediateDirectories: true)
        }
        let config = directory.write("weavedid.json", Self.document(d))
        let checked = try check(config)
        #expect(checked.status == .exited(0), "\(checked.standardErrorText)")
        let fails = "the daemon starts, but each run of the job fails until"
        #expect(checked.standardErrorText == """
            weavedid: warning: \(config): sync.jobs[1].source: the source "\(d)/src/none" of job "nosource" does not exist; \(fails) it does
            weavedid: warning: \(config): sync.jobs[2].destination: the destination "\(d)/dst/new" of job "noroot" does not exist; \(fails) it does: runs never create it (once the daemon runs, `weavedictl fix job.noroot` creates it, with its parents)
            weavedid: warning: \(config): sync.jobs[3].destination: the destination "\(d)/gone/deeper/new" of job "noparent" does not exist, nor its parent "\(d)/gone/deeper"; \(fails) it does: runs never create it (once the daemon runs, `weavedictl fix job.noparent` creates it, with its parents)
            weavedid: warning: \(config): sync.jobs[4].destination: the destination "\(d)/mnt/disk" of job "disk" does not exist; \(fails) a file system is mounted there (nothing creates it, as destinationMountPoint is set)
            weavedid: warning: \(config): sync.metricsFile: the directory "\(d)/textfile" of the metrics file does not exist; the daemon starts, but each write of the metrics file fails (its check sync.metricsFile is degraded) until it does: create it

            """)
        #expect(checked.standardOutputText == "weavedid: configuration OK, with 5 warnings (\(config))\n")

        // The daemon starts with them, as the warnings say.
        let daemon = try DaemonProcess(["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory)
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    @Test func aMetricsDirectoryThatIsAFile_isAWarning_andNoneOnceAllIsThere() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        for path in ["src/ok", "src/none", "dst/here", "dst/x", "dst/new", "gone/deeper/new", "mnt/disk"] {
            try FileManager.default.createDirectory(atPath: "\(d)/\(path)", withIntermediateDirectories: true)
        }
        directory.write("textfile", "not a directory")
        let config = directory.write("weavedid.json", Self.document(d))
        let checked = try check(config)
        #expect(checked.status == .exited(0), "\(checked.standardErrorText)")
        #expect(checked.standardErrorText == """
            weavedid: warning: \(config): sync.metricsFile: the directory "\(d)/textfile" of the metrics file is a regular file, not a directory; the daemon starts, but each write of the metrics file fails (its check sync.metricsFile is degraded) until it is one

            """)
        try FileManager.default.removeItem(atPath: "\(d)/textfile")
        try FileManager.default.createDirectory(atPath: "\(d)/textfile", withIntermediateDirectories: false)
        let clean = try check(config)
        #expect(clean.status == .exited(0), "\(clean.standardErrorText)")
        #expect(clean.standardErrorText == "")
        #expect(clean.standardOutputText == "weavedid: configuration OK (\(config))\n")
    }

    /// The paths are looked at as the user running the check: as root a source only root may
    /// reach passes; as another user (`nobody` here, as the service's user would be) the check
    /// says it cannot look at it, and why.
    @Test func aPathTheUserRunningTheCheckCannotReach_isAWarning_withTheError() throws {
        try ChildAsNobody.requirePossible()
        let directory = TemporaryDirectory()
        let d = directory.path
        for path in ["locked/src", "open/dst", "open/textfile"] {
            try FileManager.default.createDirectory(atPath: "\(d)/\(path)", withIntermediateDirectories: true)
        }
        chmod(d, 0o755)
        chmod("\(d)/locked", 0o700)
        chmod("\(d)/open/dst", 0o777)
        chmod("\(d)/open/textfile", 0o777)
        let config = directory.write("weavedid.json", #"""
            {"stateDirectory": "\#(d)/state", "control": {"socket": "\#(d)/run/control.sock"},
             "sync": {"metricsFile": "\#(d)/open/textfile/weavedi.prom",
                      "jobs": [{"name": "docs", "source": "\#(d)/locked/src", "destination": "\#(d)/open/dst", "interval": 3600}]}}
            """#)
        chmod(config, 0o644)
        let asNobody = try checkAsRootThenNobody(config)
        #expect(asNobody.standardErrorText == """
            weavedid: warning: \(config): sync.jobs[0].source: cannot look at the source "\(d)/locked/src" of job "docs": Permission denied (EACCES); the daemon starts, but each run of the job fails until the daemon's user may read it

            """)
        #expect(asNobody.standardOutputText == "weavedid: configuration OK, with 1 warning (\(config))\n")
    }

    /// A source the user cannot read, a destination root and a metrics directory it cannot
    /// write in are there to `stat`, but each run (or write) fails with EACCES: the check asks
    /// the kernel what that user may do (`faccessat`, ACLs included), and says so.
    @Test func pathsTheUserRunningTheCheckMayNotReadOrWrite_areWarnings_withTheError() throws {
        try ChildAsNobody.requirePossible()
        let directory = TemporaryDirectory()
        let d = directory.path
        for path in ["closed/src", "closed/dst", "open/src", "open/dst", "textfile"] {
            try FileManager.default.createDirectory(atPath: "\(d)/\(path)", withIntermediateDirectories: true)
        }
        for path in ["", "/closed", "/open", "/open/src"] { chmod(d + path, 0o755) }
        chmod("\(d)/closed/src", 0o700)
        chmod("\(d)/closed/dst", 0o555)
        chmod("\(d)/open/dst", 0o777)
        chmod("\(d)/textfile", 0o755)
        let config = directory.write("weavedid.json", #"""
            {"stateDirectory": "\#(d)/state", "control": {"socket": "\#(d)/run/control.sock"},
             "sync": {"metricsFile": "\#(d)/textfile/weavedi.prom",
                      "jobs": [{"name": "closed", "source": "\#(d)/closed/src", "destination": "\#(d)/closed/dst", "interval": 3600},
                               {"name": "open", "source": "\#(d)/open/src", "destination": "\#(d)/open/dst", "interval": 3600}]}}
            """#)
        chmod(config, 0o644)
        let asNobody = try checkAsRootThenNobody(config)
        let fails = "the daemon starts, but each run of the job fails until"
        #expect(asNobody.standardErrorText == """
            weavedid: warning: \(config): sync.jobs[0].source: cannot read the source "\(d)/closed/src" of job "closed" (read and search access): Permission denied (EACCES); \(fails) the daemon's user may read it
            weavedid: warning: \(config): sync.jobs[0].destination: cannot write in the destination "\(d)/closed/dst" of job "closed" (write and search access): Permission denied (EACCES); \(fails) the daemon's user may write in it
            weavedid: warning: \(config): sync.metricsFile: cannot write in the directory "\(d)/textfile" of the metrics file (write and search access): Permission denied (EACCES); the daemon starts, but each write of the metrics file fails (its check sync.metricsFile is degraded) until the daemon's user may write there

            """)
        #expect(asNobody.standardOutputText == "weavedid: configuration OK, with 3 warnings (\(config))\n")
    }

    /// A destination that is a symbolic link to nothing is not said to be missing, with the
    /// advice of `weavedictl fix` (which refuses to create a root through a link), but to be a
    /// link, with advice that works.
    @Test func aDestinationThatIsADanglingSymbolicLink_isSaidToBeOne() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        try FileManager.default.createDirectory(atPath: "\(d)/src", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(d)/dst", withDestinationPath: "\(d)/disk/backup")
        let config = directory.write("weavedid.json", #"""
            {"stateDirectory": "\#(d)/state", "control": {"socket": "\#(d)/run/control.sock"},
             "sync": {"jobs": [{"name": "docs", "source": "\#(d)/src", "destination": "\#(d)/dst", "interval": 3600}]}}
            """#)
        let checked = try check(config)
        #expect(checked.status == .exited(0), "\(checked.standardErrorText)")
        #expect(checked.standardErrorText == """
            weavedid: warning: \(config): sync.jobs[0].destination: the destination "\(d)/dst" of job "docs" is a symbolic link to "\(d)/disk/backup", which does not exist; the daemon starts, but each run of the job fails until it does: create it by hand, or configure the real path as the destination (`weavedictl fix job.docs` does not create a destination through a symbolic link)

            """)
        #expect(checked.standardOutputText == "weavedid: configuration OK, with 1 warning (\(config))\n")
    }

    /// A source that is a symbolic link to nothing (a disk not mounted behind it) is not only
    /// "missing": the warning names the link and its target, and says that a run follows the
    /// link, as it resolves the source's real path.
    @Test func aSourceThatIsADanglingSymbolicLink_isSaidToBeOne() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        for path in ["dst", "logs"] { try FileManager.default.createDirectory(atPath: "\(d)/\(path)", withIntermediateDirectories: true) }
        try FileManager.default.createSymbolicLink(atPath: "\(d)/src", withDestinationPath: "\(d)/disk/docs")
        try FileManager.default.createSymbolicLink(atPath: "\(d)/rel", withDestinationPath: "gone")
        let config = directory.write("weavedid.json", #"""
            {"stateDirectory": "\#(d)/state", "control": {"socket": "\#(d)/run/control.sock"},
             "sync": {"jobs": [{"name": "docs", "source": "\#(d)/src", "destination": "\#(d)/dst", "interval": 3600},
                               {"name": "logs", "source": "\#(d)/rel", "destination": "\#(d)/logs", "interval": 3600}]}}
            """#)
        let checked = try check(config)
        #expect(checked.status == .exited(0), "\(checked.standardErrorText)")
        let fails = "the daemon starts, but each run of the job fails until it does: a run follows the link, so create its target (or mount what it leads to), or point the link, or the source, at a directory that exists"
        #expect(checked.standardErrorText == """
            weavedid: warning: \(config): sync.jobs[0].source: the source "\(d)/src" of job "docs" is a symbolic link to "\(d)/disk/docs", which does not exist; \(fails)
            weavedid: warning: \(config): sync.jobs[1].source: the source "\(d)/rel" of job "logs" is a symbolic link to "gone", which does not exist; \(fails)

            """)
        #expect(checked.standardOutputText == "weavedid: configuration OK, with 2 warnings (\(config))\n")
    }

    /// The built-in default's example source and destination are created at start only where
    /// nothing is: a dangling symbolic link there stays, and each run fails, so the check says so.
    @Test func theBuiltInDefault_withDanglingLinksAsTheExampleRoots_areWarnings() throws {
        guard (try? FileStatus(path: "/etc/weavedi/weavedid.json")) == nil else {
            try Test.cancel("/etc/weavedi/weavedid.json exists, so the built-in default is not used")
        }
        let directory = TemporaryDirectory()
        let d = directory.path
        try FileManager.default.createDirectory(atPath: "\(d)/.weavedi/example", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(d)/.weavedi/example/source", withDestinationPath: "nowhere")
        try FileManager.default.createSymbolicLink(atPath: "\(d)/.weavedi/example/mirror", withDestinationPath: "elsewhere")
        let daemon = try DaemonProcess(["--check-config"], directory: directory)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(daemon.log == """
            weavedid: warning: built-in default: sync.jobs[0].source: the source "\(d)/.weavedi/example/source" of job "example" is a symbolic link to "nowhere", which does not exist; the daemon starts, but each run of the job fails until it does: a run follows the link, so create its target (or mount what it leads to), or remove the link (the daemon then creates the source as it starts)
            weavedid: warning: built-in default: sync.jobs[0].destination: the destination "\(d)/.weavedi/example/mirror" of job "example" is a symbolic link to "elsewhere", which does not exist; the daemon starts, but each run of the job fails until it does: create it by hand, or remove the link (the daemon then creates the destination as it starts; `weavedictl fix job.example` does not create a destination through a symbolic link)
            weavedid: configuration OK, with 2 warnings (built-in default)

            """)
    }

    /// A disabled job is never scheduled, but runs by hand and once enabled again: its paths
    /// are warned about as an enabled job's, marked `(job disabled)`.
    @Test func aDisabledJobsPaths_areWarnedAbout_markedDisabled() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        for path in ["src", "dst"] { try FileManager.default.createDirectory(atPath: "\(d)/\(path)", withIntermediateDirectories: true) }
        let config = directory.write("weavedid.json", #"""
            {"stateDirectory": "\#(d)/state", "control": {"socket": "\#(d)/run/control.sock"},
             "sync": {"jobs": [{"name": "docs", "source": "\#(d)/gone", "destination": "\#(d)/dst", "interval": 3600},
                               {"name": "old", "source": "\#(d)/old", "destination": "\#(d)/dst-old", "interval": 3600, "enabled": false},
                               {"name": "off", "source": "\#(d)/src", "destination": "\#(d)/dst-off", "interval": 3600, "enabled": false}]}}
            """#)
        let checked = try check(config)
        #expect(checked.status == .exited(0), "\(checked.standardErrorText)")
        let fails = "the daemon starts, but each run of the job fails until it does"
        #expect(checked.standardErrorText == """
            weavedid: warning: \(config): sync.jobs[0].source: the source "\(d)/gone" of job "docs" does not exist; \(fails)
            weavedid: warning: \(config): sync.jobs[1].source: the source "\(d)/old" of job "old" (job disabled) does not exist; \(fails)
            weavedid: warning: \(config): sync.jobs[1].destination: the destination "\(d)/dst-old" of job "old" (job disabled) does not exist; \(fails): runs never create it (once the daemon runs, `weavedictl fix job.old` creates it, with its parents)
            weavedid: warning: \(config): sync.jobs[2].destination: the destination "\(d)/dst-off" of job "off" (job disabled) does not exist; \(fails): runs never create it (once the daemon runs, `weavedictl fix job.off` creates it, with its parents)

            """)
        #expect(checked.standardOutputText == "weavedid: configuration OK, with 4 warnings (\(config))\n")
    }

    /// The built-in default's example job is created below the working directory as the
    /// daemon starts; where the user running the check may not write there, with the state and
    /// runtime directories elsewhere, the daemon starts but creates nothing there and each run
    /// fails: one warning names the directory. With those directories below the working
    /// directory too, the start itself fails (78), and the check says so. Root may write
    /// anywhere; `nobody` may not in a directory of root's (0755), but may in one open to all.
    @Test func theBuiltInDefault_inADirectoryTheUserMayNotWriteIn_isAWarning() throws {
        try ChildAsNobody.requirePossible()
        guard (try? FileStatus(path: "/etc/weavedi/weavedid.json")) == nil else {
            try Test.cancel("/etc/weavedi/weavedid.json exists, so the built-in default is not used")
        }
        let directory = TemporaryDirectory()
        let d = directory.path
        try FileManager.default.createDirectory(atPath: "\(d)/open", withIntermediateDirectories: true)
        chmod(d, 0o755)
        chmod("\(d)/open", 0o777)
        let elsewhere = ["STATE_DIRECTORY": "\(d)/open/state", "RUNTIME_DIRECTORY": "\(d)/open/run"]
        /// `weavedid --check-config` (or the start) in `workingDirectory`, with no HOME nor
        /// XDG_* (so the built-in default's paths are all below it, but for `environment`), as
        /// root or as `nobody`.
        func check(
            in workingDirectory: String, asNobody: Bool = true, environment: [String: String] = [:], start: Bool = false
        ) throws -> SubprocessResult {
            let shell = ["/bin/sh", "-c", #"cd "$1" && exec "$2" $3"#, "sh", workingDirectory, DaemonProcess.binary, start ? "" : "--check-config"]
            let env = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
            return asNobody
                ? try Subprocess.run("/usr/bin/setpriv", arguments: ["--reuid=65534", "--regid=65534", "--clear-groups"] + shell, environment: env)
                : try Subprocess.run(shell[0], arguments: Array(shell.dropFirst()), environment: env)
        }
        let asRoot = try check(in: d, asNobody: false)
        #expect(asRoot.status == .exited(0) && asRoot.standardErrorText == "", "\(asRoot.standardErrorText)")
        let closed = try check(in: d, environment: elsewhere)
        #expect(closed.status == .exited(0), "\(closed.standardErrorText)")
        #expect(closed.standardErrorText == """
            weavedid: warning: built-in default: sync.jobs[0]: the built-in default's example job "example" has its source and destination created below "\(d)/.weavedi/example" as the daemon starts, but the user running the check may not create them in "\(d)" (write and search access): Permission denied (EACCES); the daemon starts (its state and runtime directories are elsewhere) but creates neither, and each run of the job fails: start weavedid in a directory its user may write in, or give it a configuration file (--config)

            """)
        #expect(closed.standardOutputText == "weavedid: configuration OK, with 1 warning (built-in default)\n")
        // As the warning says: the daemon starts.
        let daemon = try DaemonProcess(environment: elsewhere, directory: directory, wrapper: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        #expect(daemon.waitForLog("ready;"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        // With the state directory below the working directory too, the start fails: the
        // check says so, as an error.
        let failing = try check(in: d)
        #expect(failing.status == .exited(78), "\(failing.standardErrorText)")
        #expect(failing.standardErrorText.hasPrefix(
            "weavedid: built-in default: stateDirectory: cannot create the state directory \"\(d)/.weavedi/state\": the user running the check (uid 65534"),
            "\(failing.standardErrorText)")
        #expect(failing.standardOutputText == "")
        let failed = try check(in: d, start: true)
        #expect(failed.status == .exited(78), "\(failed.standardErrorText)")
        let open = try check(in: d + "/open")
        #expect(open.status == .exited(0) && open.standardErrorText == "", "\(open.standardErrorText)")
        #expect(open.standardOutputText == "weavedid: configuration OK (built-in default)\n")
        // Nothing was created by the checks.
        #expect((try? FileStatus(path: d + "/open/.weavedi", followSymlinks: false)) == nil)
    }

    /// A missing destination with a symbolic link on its way (`/mnt/disk` a link to a disk
    /// not mounted, or to anything): `weavedictl fix` creates no directory through a link, so
    /// the warning names the link and gives advice that works.
    @Test func aMissingDestinationWithALinkOnItsWay_isSaidToHaveIt() throws {
        let directory = TemporaryDirectory()
        let d = directory.path
        for path in ["src", "real"] { try FileManager.default.createDirectory(atPath: "\(d)/\(path)", withIntermediateDirectories: true) }
        try FileManager.default.createSymbolicLink(atPath: "\(d)/disk", withDestinationPath: "\(d)/unmounted")
        try FileManager.default.createSymbolicLink(atPath: "\(d)/there", withDestinationPath: "\(d)/real")
        let config = directory.write("weavedid.json", #"""
            {"stateDirectory": "\#(d)/state", "control": {"socket": "\#(d)/run/control.sock"},
             "sync": {"jobs": [{"name": "docs", "source": "\#(d)/src", "destination": "\#(d)/disk/backup", "interval": 3600},
                               {"name": "logs", "source": "\#(d)/src", "destination": "\#(d)/there/logs", "interval": 3600}]}}
            """#)
        let checked = try check(config)
        #expect(checked.status == .exited(0), "\(checked.standardErrorText)")
        let fails = "the daemon starts, but each run of the job fails until it does: runs never create it, and"
        #expect(checked.standardErrorText == """
            weavedid: warning: \(config): sync.jobs[0].destination: the destination "\(d)/disk/backup" of job "docs" does not exist, nor its parent "\(d)/disk"; \(fails) `weavedictl fix job.docs` creates no destination through the symbolic link "\(d)/disk" on its way: create it by hand, or configure the destination by its real path
            weavedid: warning: \(config): sync.jobs[1].destination: the destination "\(d)/there/logs" of job "logs" does not exist; \(fails) `weavedictl fix job.logs` creates no destination through the symbolic link "\(d)/there" on its way: create it by hand, or configure the destination by its real path

            """)
    }

    /// The built-in default's example job: its source and destination are not there in a new
    /// directory, but the daemon creates both as it starts, and the first run succeeds.
    @Test func theBuiltInDefault_inAnEmptyDirectory_hasNoWarnings() throws {
        guard (try? FileStatus(path: "/etc/weavedi/weavedid.json")) == nil else {
            try Test.cancel("/etc/weavedi/weavedid.json exists, so the built-in default is not used")
        }
        let daemon = try DaemonProcess(["--check-config"])  // no HOME nor XDG_* (`childEnvironment`)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
        #expect(daemon.log == "weavedid: configuration OK (built-in default)\n")
        // The check creates nothing.
        #expect((try? FileStatus(path: daemon.directory.path + "/.weavedi", followSymlinks: false)) == nil)
    }
}
