import Glibc
import Testing
import WeaveDIDaemon
import WeaveDIPosix

@Suite struct ConfigurationPathErrorTests {
    /// A document with jobs given as complete JSON objects.
    private func jobs(_ objects: String...) -> String {
        #"{"sync": {"jobs": ["# + objects.joined(separator: ", ") + "]}}"
    }

    private func mirror(_ name: String, _ source: String, _ destination: String) -> String {
        #"{"name": "\#(name)", "source": "\#(source)", "destination": "\#(destination)"}"#
    }

    @Test func relativePaths_areRejected() {
        #expect(errorText(#"{"stateDirectory": "var/lib/weavedi"}"#) == #"stateDirectory: expected an absolute path, got "var/lib/weavedi""#)
        #expect(errorText(jobs(mirror("docs", "srv/docs", "/m"))) == #"sync.jobs[0].source: expected an absolute path, got "srv/docs""#)
        #expect(errorText(jobs(mirror("docs", "/srv/docs", "./m"))) == #"sync.jobs[0].destination: expected an absolute path, got "./m""#)
        #expect(errorText(#"{"control": {"socket": ""}}"#) == #"control.socket: expected an absolute path, got """#)
        #expect(errorText(#"{"runtimeDirectory": "/run/\u0000x"}"#) == "runtimeDirectory: the path contains a NUL byte")
    }

    @Test func metricsFile_mustBeAbsoluteAndEndInProm() {
        let expected = #"sync.metricsFile: expected a file name ending in ".prom" (the only files node_exporter's textfile collector reads), got "/var/lib/m.txt""#
        #expect(errorText(#"{"sync": {"metricsFile": "/var/lib/m.txt"}}"#) == expected)
        #expect(errorText(#"{"sync": {"metricsFile": "/var/lib/.prom"}}"#)?.hasPrefix("sync.metricsFile: expected a file name ending") == true)
        #expect(errorText(#"{"sync": {"metricsFile": "m.prom"}}"#) == #"sync.metricsFile: expected an absolute path, got "m.prom""#)
    }

    /// A path that ends in `/` names a directory, whatever its last name: `/var/lib/m.prom/`
    /// could never be written as a file.
    @Test func metricsFile_endingInASlash_isRejected() {
        #expect(errorText(#"{"sync": {"metricsFile": "/var/lib/m.prom/"}}"#)
            == #"sync.metricsFile: expected a file name ending in ".prom" (the only files node_exporter's textfile collector reads), got "/var/lib/m.prom/" (a path ending in '/' names a directory)"#)
        #expect(errorText(#"{"sync": {"metricsFile": "/var/lib/m.prom//"}}"#)?.hasSuffix("(a path ending in '/' names a directory)") == true)
    }

    @Test func socketPathTooLong_isRejected() throws {
        let long = "/run/" + String(repeating: "s", count: 98) + ".sock"
        #expect(long.utf8.count == 108)
        #expect(errorText(#"{"control": {"socket": "\#(long)"}}"#)
            == "control.socket: the path is 108 bytes long, but a Unix socket path may have at most 107 bytes (sun_path)")
        let fits = "/run/" + String(repeating: "s", count: 97) + ".sock"
        #expect(try loadConfiguration(#"{"control": {"socket": "\#(fits)"}}"#).control.socket == fits)
        let runtime = "/run/" + String(repeating: "r", count: 100)
        #expect(errorText(#"{"runtimeDirectory": "\#(runtime)"}"#)
            == "control.socket: the default socket path \"\(runtime)/control.sock\" is 118 bytes long, but a Unix socket path may have at most 107 bytes (sun_path); set control.socket or a shorter runtimeDirectory")
    }

    @Test func badSocketModes_areRejected() throws {
        let format = #"expected an octal mode string of 3 or 4 digits such as "0660", got "#
        #expect(errorText(#"{"control": {"socketMode": 660}}"#) == "control.socketMode: " + format + "660")
        #expect(errorText(#"{"control": {"socketMode": "0680"}}"#) == "control.socketMode: " + format + #""0680""#)
        #expect(errorText(#"{"control": {"socketMode": "66"}}"#) == "control.socketMode: " + format + #""66""#)
        #expect(errorText(#"{"control": {"socketMode": "00660"}}"#) == "control.socketMode: " + format + #""00660""#)
        #expect(errorText(#"{"control": {"socketMode": "1660"}}"#)
            == #"control.socketMode: mode "1660" has bits above 0777 (setuid, setgid or sticky), which a socket cannot use"#)
        #expect(errorText(#"{"control": {"socketMode": "0460"}}"#)
            == #"control.socketMode: mode "0460" must give the owner read and write permission (0600)"#)
        #expect(try loadConfiguration(#"{"control": {"socketMode": "600"}}"#).control.socketMode == 0o600)
    }

    @Test func badJobNames_areRejected() {
        let format = "expected a job name of 1 to 64 characters from A-Z, a-z, 0-9, '.', '_' and '-', got "
        #expect(errorText(jobs(mirror("my docs", "/a", "/b"))) == "sync.jobs[0].name: " + format + #""my docs""#)
        #expect(errorText(jobs(mirror("", "/a", "/b"))) == "sync.jobs[0].name: " + format + #""""#)
        #expect(errorText(jobs(mirror(String(repeating: "n", count: 65), "/a", "/b")))?.hasPrefix("sync.jobs[0].name: " + format) == true)
        #expect(errorText(jobs(mirror("..", "/a", "/b"))) == #"sync.jobs[0].name: a job may not be named "..""#)
    }

    @Test func duplicateJobName_namesTheSecondOccurrence() {
        let document = jobs(mirror("docs", "/a", "/b"), mirror("logs", "/c", "/d"), mirror("docs", "/e", "/f"))
        #expect(errorText(document) == #"sync.jobs[2].name: duplicate job name "docs" (also sync.jobs[0])"#)
        // A name may hold 64 characters: messages show it whole, not cut as a longer value is.
        let long = String(repeating: "n", count: 63) + "x"
        #expect(errorText(jobs(mirror(long, "/a", "/b"), mirror(long, "/c", "/d")))
            == #"sync.jobs[1].name: duplicate job name "\#(long)" (also sync.jobs[0])"#)
        #expect(errorText(jobs(mirror(long, "/srv/a", "/srv/b"), mirror("other", "/srv/c", "/srv/b/x")))
            == #"sync.jobs[1].destination: the destination "/srv/b/x" is inside the destination "/srv/b" of job "\#(long)" (sync.jobs[0]); "#
                + "the jobs would overwrite or delete each other's files")
    }

    @Test func overlappingMirrorPaths_areRejected() {
        #expect(errorText(jobs(mirror("docs", "/srv/docs", "/srv/docs/mirror")))
            == #"sync.jobs[0].destination: the destination "/srv/docs/mirror" is inside the source "/srv/docs""#)
        #expect(errorText(jobs(mirror("docs", "/srv/docs", "/srv")))
            == #"sync.jobs[0].destination: the destination "/srv" contains the source "/srv/docs""#)
        #expect(errorText(jobs(mirror("docs", "/srv/docs/", "//srv/./docs")))
            == #"sync.jobs[0].destination: the destination "//srv/./docs" is the same directory as the source "/srv/docs/""#)
        #expect(errorText(jobs(mirror("docs", "/srv/docs", "/srv/other/../docs/m")))
            == #"sync.jobs[0].destination: the destination "/srv/other/../docs/m" is inside the source "/srv/docs""#)
        // A shared string prefix is not containment.
        #expect((try? loadConfiguration(jobs(mirror("docs", "/srv/docs/a/..", "/srv/docs2")))) != nil)
    }

    @Test func controlSocketInsideADestination_isRejected() {
        let explicit = #"{"control": {"socket": "/var/lib/weavedi/m/ctl.sock"}, "sync": {"jobs": [{"name": "a", "source": "/srv", "destination": "/var/lib/weavedi/m"}]}}"#
        #expect(errorText(explicit)
            == #"sync.jobs[0].destination: the destination "/var/lib/weavedi/m" contains the control socket "/var/lib/weavedi/m/ctl.sock""#)
        #expect(errorText(jobs(mirror("a", "/srv", "/run")))
            == #"sync.jobs[0].destination: the destination "/run" contains the control socket "/run/weavedi/control.sock""#)
    }

    /// Without control.socket, runtimeDirectory, RUNTIME_DIRECTORY or XDG_RUNTIME_DIR, the
    /// socket lies below the working directory: a destination that holds it (the project's
    /// own directory) is refused saying where that default comes from, and how to move it.
    @Test func theDefaultSocketInTheWorkingDirectory_insideADestination_saysWhereItComesFrom() {
        let document = jobs(mirror("a", "/srv", testWorkingDirectory))
        #expect(errorText(document, environment: [:])
            == #"sync.jobs[0].destination: the destination "\#(testWorkingDirectory)" contains the control socket "\#(testWorkingDirectory)/.weavedi/run/control.sock"; "#
                + "that is its default path, in the working directory (.weavedi/run/control.sock), as no configuration file sets "
                + "control.socket or runtimeDirectory and neither RUNTIME_DIRECTORY nor XDG_RUNTIME_DIR is set: set control.socket, "
                + "or start weavedid in another directory")
        // Put there by the file, it is no default: the message says nothing more.
        let runtime = #"{"runtimeDirectory": "\#(testWorkingDirectory)/run", "sync": {"jobs": [{"name": "a", "source": "/srv", "destination": "\#(testWorkingDirectory)"}]}}"#
        #expect(errorText(runtime, environment: [:])
            == #"sync.jobs[0].destination: the destination "\#(testWorkingDirectory)" contains the control socket "\#(testWorkingDirectory)/run/control.sock""#)
        let socket = #"{"control": {"socket": "\#(testWorkingDirectory)/.weavedi/run/control.sock"}, "sync": {"jobs": [{"name": "a", "source": "/srv", "destination": "\#(testWorkingDirectory)"}]}}"#
        #expect(errorText(socket, environment: [:])
            == #"sync.jobs[0].destination: the destination "\#(testWorkingDirectory)" contains the control socket "\#(testWorkingDirectory)/.weavedi/run/control.sock""#)
    }

    /// A destination that is or holds the state directory would delete or overwrite the
    /// daemon's lock file and the jobs' state file; one inside it is fine, but not at those files.
    @Test func stateDirectoryInsideADestination_isRejected() throws {
        let consequence = "; the job would overwrite or delete the daemon's lock (weavedid.lock) and the jobs' state file (jobs.json) there"
        // An explicit stateDirectory, wherever it stands in the file.
        let explicit = #"{"sync": {"jobs": [{"name": "a", "source": "/data", "destination": "/srv"}]}, "stateDirectory": "/srv/state"}"#
        #expect(errorText(explicit)
            == #"sync.jobs[0].destination: the destination "/srv" contains the state directory "/srv/state""# + consequence)
        #expect(errorText(#"{"stateDirectory": "/srv/state/", "sync": {"jobs": [{"name": "a", "source": "/data", "destination": "/srv/x/../state"}]}}"#)
            == #"sync.jobs[0].destination: the destination "/srv/x/../state" is the state directory "/srv/state/""# + consequence)
        // The default: STATE_DIRECTORY, else below the working directory.
        #expect(errorText(jobs(mirror("a", "/srv", "/var/lib")))
            == #"sync.jobs[0].destination: the destination "/var/lib" contains the state directory "/var/lib/weavedi""# + consequence)
        #expect(errorText(jobs(mirror("a", "/srv", "/home/dev")), environment: ["XDG_RUNTIME_DIR": "/run/user/1000"])
            == #"sync.jobs[0].destination: the destination "/home/dev" contains the state directory "/home/dev/project/.weavedi/state""# + consequence)
        // The daemon's own files in it.
        let files = "; a destination may lie inside the state directory, but not at the daemon's own files there"
        #expect(errorText(jobs(mirror("a", "/srv", "/var/lib/weavedi/jobs.json")))
            == #"sync.jobs[0].destination: the destination "/var/lib/weavedi/jobs.json" is the jobs' state file "/var/lib/weavedi/jobs.json""# + files)
        #expect(errorText(jobs(mirror("a", "/srv", "/var/lib/weavedi/weavedid.lock/x")))
            == #"sync.jobs[0].destination: the destination "/var/lib/weavedi/weavedid.lock/x" is inside the daemon's lock file "/var/lib/weavedi/weavedid.lock""# + files)
        // The copy kept of a damaged state file: a destination there, or below, would keep it
        // from being kept (and a deleting run would remove it).
        #expect(errorText(jobs(mirror("a", "/srv", "/var/lib/weavedi/jobs.json.corrupt")))
            == #"sync.jobs[0].destination: the destination "/var/lib/weavedi/jobs.json.corrupt" is the copy kept of a damaged jobs' state file "/var/lib/weavedi/jobs.json.corrupt""# + files)
        #expect(errorText(jobs(mirror("a", "/srv", "/var/lib/weavedi/jobs.json.corrupt/x")))
            == #"sync.jobs[0].destination: the destination "/var/lib/weavedi/jobs.json.corrupt/x" is inside the copy kept of a damaged jobs' state file "/var/lib/weavedi/jobs.json.corrupt""# + files)
        // The first job that breaks the rule is named.
        #expect(errorText(jobs(mirror("a", "/srv", "/backup"), mirror("b", "/data", "/var")))?.hasPrefix("sync.jobs[1].destination: ") == true)
        // Anywhere else inside the state directory is fine.
        let inside = try loadConfiguration(jobs(
            mirror("a", "/srv/a", "/var/lib/weavedi/mirror/a"), mirror("b", "/srv/b", "/var/lib/weavedi/jobs.json2"),
            mirror("c", "/srv/c", "/var/lib/weavedi/.jobs.json.tmp.5")))
        #expect(inside.sync.jobs.count == 3)
    }

    /// The metrics file is rewritten after each run: a destination may not contain it (a
    /// deleting job would remove it), be it or lie below it (its path would become a directory),
    /// wherever `metricsFile` stands in the file.
    @Test func metricsFileInADestination_isRejected() throws {
        let consequence = "; the daemon writes it after each run, and the job would delete or overwrite it, "
            + "or keep it from being written; set sync.metricsFile outside every destination"
        func document(_ destination: String) -> String {
            #"{"sync": {"jobs": [{"name": "a", "source": "/srv", "destination": "\#(destination)"}], "metricsFile": "/var/lib/textfile/weavedi.prom"}}"#
        }
        #expect(errorText(document("/var/lib/textfile"))
            == #"sync.jobs[0].destination: the destination "/var/lib/textfile" contains the metrics file "/var/lib/textfile/weavedi.prom""# + consequence)
        #expect(errorText(document("/var/lib/textfile/./weavedi.prom/"))
            == #"sync.jobs[0].destination: the destination "/var/lib/textfile/./weavedi.prom/" is the metrics file "/var/lib/textfile/weavedi.prom""# + consequence)
        #expect(errorText(document("/var/lib/textfile/weavedi.prom/x"))
            == #"sync.jobs[0].destination: the destination "/var/lib/textfile/weavedi.prom/x" is inside the metrics file "/var/lib/textfile/weavedi.prom""# + consequence)
        // Beside it, or in the same directory, is fine.
        #expect(try loadConfiguration(document("/var/lib/textfile/mirror")).sync.jobs.count == 1)
        #expect(try loadConfiguration(document("/var/lib/textfile/weavedi.prom2")).sync.jobs.count == 1)
    }

    /// The kind is quoted as every value from the file is: escaped (an escape sequence or a
    /// bidirectional control in it reaches no terminal, nor a Reload's reply, raw), and cut.
    @Test func unknownJobKind_listsTheKnownOnes() {
        // Other suites may register more kinds in this process; mirror is always first.
        #expect(errorText(jobDocument(#""kind": "rsync""#))?.hasPrefix(#"sync.jobs[0].kind: unknown job kind "rsync" (known: mirror"#) == true)
        #expect(errorText(jobDocument(#""kind": "r\u001b[2J\u202e""#))?.hasPrefix(#"sync.jobs[0].kind: unknown job kind "r\u001b[2J\u202e" (known: mirror"#) == true)
        let long = String(repeating: "k", count: 100_000)
        #expect(errorText(jobDocument("\"kind\": \"\(long)\""))?.hasPrefix(
            "sync.jobs[0].kind: unknown job kind \"\(long.prefix(57))...\" (100000 characters) (known: mirror") == true)
        #expect(errorText(jobDocument(#""kind": 1"#)) == #"sync.jobs[0].kind: expected a job kind such as "mirror", got 1"#)
    }

    @Test func missingRequiredFields_areNamed() {
        #expect(errorText(#"{"sync": {"jobs": [{"source": "/a", "destination": "/b"}]}}"#)
            == #"sync.jobs[0]: missing required field "name""#)
        #expect(errorText(#"{"sync": {"jobs": [{"name": "a", "destination": "/b"}]}}"#)
            == #"sync.jobs[0]: missing required field "source" (a mirror job needs a source and a destination)"#)
        #expect(errorText(#"{"sync": {"jobs": [{"name": "a", "source": "/b"}]}}"#)
            == #"sync.jobs[0]: missing required field "destination" (a mirror job needs a source and a destination)"#)
    }

    /// The error loading the file at `path` produces, or nil (recording an issue) if it loads.
    private func loadError(_ path: String) -> ConfigurationError? {
        do {
            _ = try DaemonConfiguration.load(path: path, environment: [:], workingDirectory: "/")
            Issue.record("loaded \(path)")
            return nil
        } catch {
            return error
        }
    }

    @Test func missingFile_reportsENOENT() throws {
        let directory = try ConfigurationDirectory()
        let path = directory.path + "/absent.json"
        let error = try #require(loadError(path))
        #expect(error.errno == ENOENT)
        #expect(error.fieldPath == nil)
        #expect(error.description == "\(path): cannot read: No such file or directory (ENOENT)")
    }

    /// A path that is a symbolic link to nothing is said to be one, with its target: "No such
    /// file or directory" alone sends one looking for a file that is there.
    @Test func danglingSymbolicLink_isNamedAsSuch_withItsTarget() throws {
        let directory = try ConfigurationDirectory()
        let path = directory.path + "/link.json"
        #expect(symlink(directory.path + "/gone.json", path) == 0)
        let error = try #require(loadError(path))
        #expect(error.errno == ENOENT)
        #expect(error.description == "\(path): cannot read: No such file or directory (ENOENT); it is a symbolic link to "
            + "\"\(directory.path)/gone.json\", which does not exist: point the link at the configuration file, or give the file's real path")
    }

    @Test func directoryInsteadOfFile_reportsEISDIR() throws {
        let directory = try ConfigurationDirectory()
        let error = try #require(loadError(directory.path))
        #expect(error.errno == EISDIR)
        #expect(error.description == "\(directory.path): cannot read: Is a directory (EISDIR)")
    }

    @Test func unreadableFile_reportsEACCESUnlessRoot() throws {
        let directory = try ConfigurationDirectory()
        let path = try directory.write("{}", mode: 0o000)
        if geteuid() == 0 {
            // Root (CAP_DAC_OVERRIDE), as these tests usually run, reads a mode-000 file anyway:
            // assert that behaviour instead; the EACCES branch runs for ordinary users.
            #expect(try DaemonConfiguration.load(path: path, environment: [:], workingDirectory: "/").filePath == path)
        } else {
            let error = try #require(loadError(path))
            #expect(error.errno == EACCES)
            #expect(error.description.hasPrefix("\(path): cannot read: Permission denied (EACCES); the user reading it"))
        }
    }

    @Test func oversizedFile_reportsEFBIG() throws {
        let directory = try ConfigurationDirectory()
        let path = try directory.write("{}")
        let file = try FileDescriptor.open(path, .writeOnly)
        try file.descriptor.resize(to: 16 * 1024 * 1024 + 1)  // sparse: no 16 MiB written
        let error = try #require(loadError(path))
        #expect(error.errno == EFBIG)
        #expect(error.description == "\(path): cannot read: the file is larger than 16777216 bytes")
    }

    @Test func fifoOrDevice_isRefusedWithoutBlocking() throws {
        // A FIFO nobody writes to: opening it for reading would block the start (or a reload)
        // for good.
        let directory = try ConfigurationDirectory()
        let fifo = directory.path + "/weavedid.json"
        #expect(mkfifo(fifo, 0o644) == 0)
        let error = try #require(loadError(fifo))
        #expect(error.errno == EINVAL)
        #expect(error.description == "\(fifo): cannot read: not a regular file (a named pipe)")
        let device = try #require(loadError("/dev/zero"))
        #expect(device.description == "/dev/zero: cannot read: not a regular file (a character device)")
    }

    @Test func mirrorJobsSharingATree_areRejected() {
        // Two deleting mirrors into one destination would each delete the other's files.
        #expect(errorText(jobs(mirror("a", "/srv/a", "/backup"), mirror("b", "/srv/b", "/backup")))
            == #"sync.jobs[1].destination: the destination "/backup" is the destination "/backup" of job "a" (sync.jobs[0]); the jobs would overwrite or delete each other's files"#)
        #expect(errorText(jobs(mirror("a", "/srv/a", "/backup"), mirror("b", "/srv/b", "/backup/b")))
            == #"sync.jobs[1].destination: the destination "/backup/b" is inside the destination "/backup" of job "a" (sync.jobs[0]); the jobs would overwrite or delete each other's files"#)
        #expect(errorText(jobs(mirror("a", "/srv/a", "/backup/a"), mirror("b", "/srv/b", "/backup")))
            == #"sync.jobs[1].destination: the destination "/backup" contains the destination "/backup/a" of job "a" (sync.jobs[0]); the jobs would overwrite or delete each other's files"#)
        #expect(errorText(jobs(mirror("a", "/srv/a", "/backup"), mirror("b", "/srv/b", "/srv/a/copy")))
            == #"sync.jobs[1].destination: the destination "/srv/a/copy" is inside the source "/srv/a" of job "a" (sync.jobs[0]); the jobs would overwrite or delete each other's files"#)
        #expect(errorText(jobs(mirror("a", "/srv/a", "/backup"), mirror("b", "/backup/x", "/copy")))
            == #"sync.jobs[1].source: the source "/backup/x" is inside the destination "/backup" of job "a" (sync.jobs[0]); the jobs would overwrite or delete each other's files"#)
        // Reading one source into two destinations is fine, and so are neighbours.
        #expect((try? loadConfiguration(jobs(mirror("a", "/srv/a", "/backup/a"), mirror("b", "/srv/a", "/backup/b")))) != nil)
    }
}
