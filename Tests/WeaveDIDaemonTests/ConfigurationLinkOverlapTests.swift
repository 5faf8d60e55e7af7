import Foundation
import Testing
@testable import WeaveDIDaemon
import WeaveDIPosix

/// Mirror trees that overlap only through symbolic links: the file's paths pass the lexical
/// rules, the paths they resolve to on this machine do not (`checkMirrorTreesOnDisk`).
@Suite struct ConfigurationLinkOverlapTests {
    /// A scratch tree under /tmp for the jobs' roots; `t` is its path.
    final class Tree {
        let directory = TemporaryDirectory("weavedi-link-overlap")
        var t: String { directory.path }

        /// Creates the directories `paths` (relative to `t`).
        func directories(_ paths: String...) throws {
            for path in paths {
                try FileManager.default.createDirectory(atPath: t + "/" + path, withIntermediateDirectories: true)
            }
        }

        /// A symbolic link at `path` (relative to `t`) pointing to `target`, as given.
        func link(_ path: String, to target: String) throws {
            try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: t + "/" + path, pointingTo: target)
        }
    }

    /// A configuration of mirror jobs, each `(name, source, destination)`.
    func document(_ jobs: (String, String, String)...) -> String {
        let entries = jobs.map { #"{"name": "\#($0.0)", "source": "\#($0.1)", "destination": "\#($0.2)", "delete": true}"# }
        return #"{"sync": {"jobs": [\#(entries.joined(separator: ", "))]}}"#
    }

    /// The text of the error `checkMirrorTreesOnDisk` throws for `text` after the file name, or
    /// nil (recording an issue) if it finds nothing. The file itself must load: its paths pass
    /// the lexical rules.
    func diskError(
        _ text: String, environment: [String: String] = systemdEnvironment, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> String? {
        let configuration = try loadConfiguration(text, environment: environment)
        do {
            try configuration.checkMirrorTreesOnDisk()
            Issue.record("expected an overlap through links, found none", sourceLocation: sourceLocation)
            return nil
        } catch {
            let file = try #require(configuration.filePath)
            #expect(error.errno == EINVAL, sourceLocation: sourceLocation)
            #expect(error.description.hasPrefix(file + ": "), sourceLocation: sourceLocation)
            return String(error.description.dropFirst(file.count + 2))
        }
    }

    /// A root that is a file, or lies below one, would fail every run: the check says so, naming
    /// the part that exists when it is not the root itself, links followed.
    @Test func aRootThatIsAFile_orLiesBelowOne_isRefused() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("a", "b")
        #expect(FileManager.default.createFile(atPath: t + "/file", contents: Data("x".utf8)))
        try tree.link("to-file", to: t + "/file")
        #expect(mkfifo(t + "/pipe", 0o600) == 0)
        let directories = "not a directory; a mirror's source and destination are directories: name the directory to mirror, "
            + "or the one to mirror into"
        #expect(try diskError(document(("j", t + "/file", t + "/b")))
            == #"sync.jobs[0].source: the source "\#(t)/file" of job "j" is a regular file, "#  + directories)
        #expect(try diskError(document(("j", t + "/a", t + "/to-file")))
            == #"sync.jobs[0].destination: the destination "\#(t)/to-file" of job "j" is a regular file, "# + directories)
        #expect(try diskError(document(("j", t + "/a", t + "/file/below/out")))
            == #"sync.jobs[0].destination: the destination "\#(t)/file/below/out" of job "j" is a regular file ("\#(t)/file", the part of it that exists), "#
                + directories)
        #expect(try diskError(document(("j", t + "/pipe", t + "/b")))
            == #"sync.jobs[0].source: the source "\#(t)/pipe" of job "j" is a named pipe, "# + directories)
        // Directories, and a destination that does not exist yet below one, are fine.
        try loadConfiguration(document(("j", t + "/a", t + "/b/new/out"))).checkMirrorTreesOnDisk()
    }

    @Test func aDestinationReachingTheControlSocketThroughALink_isRefused() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("a", "run")
        try tree.link("into-run", to: t + "/run")
        let text = #"{"control": {"socket": "\#(t)/run/control.sock"}, "sync": {"jobs": [{"name": "a", "source": "\#(t)/a", "destination": "\#(t)/into-run", "delete": true}]}}"#
        #expect(try diskError(text)
            == #"sync.jobs[0].destination: the destination "\#(t)/into-run" of job "a" contains the control socket "\#(t)/run/control.sock" through symbolic links ("\#(t)/into-run" resolves to "\#(t)/run", "\#(t)/run/control.sock" to "\#(t)/run/control.sock")"#)
        // A destination beside the socket's directory is fine.
        try tree.link("beside", to: t + "/elsewhere")
        let beside = try loadConfiguration(text.replacingOccurrences(of: "/into-run", with: "/beside"))
        #expect(throws: Never.self) { try beside.checkMirrorTreesOnDisk() }
    }

    @Test func aDestinationReachingTheStateDirectoryThroughALink_isRefused() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("a", "var/state")
        try tree.link("into-var", to: t + "/var")
        try tree.link("into-state", to: "var/state")
        func text(_ destination: String, explicitState: Bool = true) -> String {
            let field = explicitState ? #""stateDirectory": "\#(t)/var/state", "# : ""
            return #"{\#(field)"sync": {"jobs": [{"name": "a", "source": "\#(t)/a", "destination": "\#(t)/\#(destination)", "delete": true}]}}"#
        }
        let consequence = "; the job would overwrite or delete the daemon's lock (weavedid.lock) and the jobs' state file (jobs.json) there"
        #expect(try diskError(text("into-var"))
            == #"sync.jobs[0].destination: the destination "\#(t)/into-var" of job "a" contains the state directory "\#(t)/var/state" through symbolic links ("\#(t)/into-var" resolves to "\#(t)/var", "\#(t)/var/state" to "\#(t)/var/state")"# + consequence)
        // The default state directory (STATE_DIRECTORY), and a link of the state directory's own.
        #expect(try diskError(text("into-state", explicitState: false), environment: ["STATE_DIRECTORY": t + "/var/state"])
            == #"sync.jobs[0].destination: the destination "\#(t)/into-state" of job "a" is the state directory "\#(t)/var/state" through symbolic links ("\#(t)/into-state" resolves to "\#(t)/var/state", "\#(t)/var/state" to "\#(t)/var/state")"# + consequence)
        // The daemon's files there, even before they exist.
        #expect(try diskError(text("into-state/jobs.json"))
            == #"sync.jobs[0].destination: the destination "\#(t)/into-state/jobs.json" of job "a" is the jobs' state file "\#(t)/var/state/jobs.json" through symbolic links ("\#(t)/into-state/jobs.json" resolves to "\#(t)/var/state/jobs.json", "\#(t)/var/state/jobs.json" to "\#(t)/var/state/jobs.json"); a destination may lie inside the state directory, but not at the daemon's own files there"#)
        // Inside the state directory, beside them, is fine.
        #expect(throws: Never.self) { try loadConfiguration(text("into-state/mirror")).checkMirrorTreesOnDisk() }
    }

    @Test func aLinkToAnotherJobsDestination_isThatDestination() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("a", "b", "backup")
        try tree.link("alias", to: t + "/backup")
        #expect(try diskError(document(("a", t + "/a", t + "/backup"), ("b", t + "/b", t + "/alias")))
            == #"sync.jobs[1].destination: the destination "\#(t)/alias" of job "b" is the destination "\#(t)/backup" of job "a" (sync.jobs[0]) through symbolic links ("\#(t)/alias" resolves to "\#(t)/backup", "\#(t)/backup" to "\#(t)/backup"); the jobs would overwrite or delete each other's files"#)
        // The same the other way round: the link configured first.
        #expect(try diskError(document(("a", t + "/a", t + "/alias"), ("b", t + "/b", t + "/backup")))
            == #"sync.jobs[1].destination: the destination "\#(t)/backup" of job "b" is the destination "\#(t)/alias" of job "a" (sync.jobs[0]) through symbolic links ("\#(t)/backup" resolves to "\#(t)/backup", "\#(t)/alias" to "\#(t)/backup"); the jobs would overwrite or delete each other's files"#)
    }

    @Test func aDestinationBelowALinkIntoAnotherJobsSource_isInsideThatSource() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("srv/data/x", "b", "backup", "data")
        try tree.link("data/link", to: t + "/srv/data")
        #expect(try diskError(document(("a", t + "/srv/data", t + "/backup"), ("b", t + "/b", t + "/data/link/x")))
            == #"sync.jobs[1].destination: the destination "\#(t)/data/link/x" of job "b" is inside the source "\#(t)/srv/data" of job "a" (sync.jobs[0]) through symbolic links ("\#(t)/data/link/x" resolves to "\#(t)/srv/data/x", "\#(t)/srv/data" to "\#(t)/srv/data"); the jobs would overwrite or delete each other's files"#)
    }

    @Test func aSourceOrDestinationThatContainsTheOtherThroughALink() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("a", "b", "trees/a", "backup")
        try tree.link("all", to: "trees")  // relative: from the link's directory
        // b's destination holds a's: b's deletions would empty a's tree.
        #expect(try diskError(document(("a", t + "/a", t + "/trees/a"), ("b", t + "/b", t + "/all")))
            == #"sync.jobs[1].destination: the destination "\#(t)/all" of job "b" contains the destination "\#(t)/trees/a" of job "a" (sync.jobs[0]) through symbolic links ("\#(t)/all" resolves to "\#(t)/trees", "\#(t)/trees/a" to "\#(t)/trees/a"); the jobs would overwrite or delete each other's files"#)
        // b reads from inside the tree a writes.
        #expect(try diskError(document(("a", t + "/a", t + "/trees"), ("b", t + "/all/a", t + "/backup")))
            == #"sync.jobs[1].source: the source "\#(t)/all/a" of job "b" is inside the destination "\#(t)/trees" of job "a" (sync.jobs[0]) through symbolic links ("\#(t)/all/a" resolves to "\#(t)/trees/a", "\#(t)/trees" to "\#(t)/trees"); the jobs would overwrite or delete each other's files"#)
    }

    @Test func aChainOfLinks_isFollowedToItsEnd() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("a", "b", "disks/backup", "links/deep")
        try tree.link("first", to: t + "/links/second")  // absolute
        try tree.link("links/second", to: "deep/third")  // relative to links/
        try tree.link("links/deep/third", to: "../../disks/backup")  // relative, with ..
        #expect(try diskError(document(("a", t + "/a", t + "/disks/backup"), ("b", t + "/b", t + "/first")))
            == #"sync.jobs[1].destination: the destination "\#(t)/first" of job "b" is the destination "\#(t)/disks/backup" of job "a" (sync.jobs[0]) through symbolic links ("\#(t)/first" resolves to "\#(t)/disks/backup", "\#(t)/disks/backup" to "\#(t)/disks/backup"); the jobs would overwrite or delete each other's files"#)
    }

    @Test func aPathThatDoesNotExistYet_belowALink_isResolvedAsFarAsItExists() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("a", "b", "backup")
        try tree.link("link", to: t + "/backup")
        // "new/deeper" does not exist: the run would fail until it does, and then write into a's tree.
        #expect(try diskError(document(("a", t + "/a", t + "/backup"), ("b", t + "/b", t + "/link/new/deeper")))
            == #"sync.jobs[1].destination: the destination "\#(t)/link/new/deeper" of job "b" is inside the destination "\#(t)/backup" of job "a" (sync.jobs[0]) through symbolic links ("\#(t)/link/new/deeper" resolves to "\#(t)/backup/new/deeper", "\#(t)/backup" to "\#(t)/backup"); the jobs would overwrite or delete each other's files"#)
        // A link whose target does not exist yet leads where the target will be: once a's
        // destination is made (its health fix makes it), both jobs write there.
        try tree.link("later", to: t + "/backup/later")
        #expect(try diskError(document(("a", t + "/a", t + "/backup/later"), ("b", t + "/b", t + "/later/x/..")))
            == #"sync.jobs[1].destination: the destination "\#(t)/later/x/.." of job "b" is the destination "\#(t)/backup/later" of job "a" (sync.jobs[0]) through symbolic links ("\#(t)/later/x/.." resolves to "\#(t)/backup/later", "\#(t)/backup/later" to "\#(t)/backup/later"); the jobs would overwrite or delete each other's files"#)
    }

    @Test func aDestinationThatIsItsOwnSourceThroughALink_isRefusedToo() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("docs")
        try tree.link("copy", to: "docs/copy")
        #expect(try diskError(document(("docs", t + "/docs", t + "/copy")))
            == #"sync.jobs[0].destination: the destination "\#(t)/copy" of job "docs" is inside its source "\#(t)/docs" through symbolic links ("\#(t)/copy" resolves to "\#(t)/docs/copy", "\#(t)/docs" to "\#(t)/docs")"#)
    }

    @Test func jobsApartWhateverTheirLinks_pass() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("data", "backup/a", "backup2", "loop")
        try tree.link("data-alias", to: t + "/data")
        try tree.link("backup-alias", to: "backup")
        try tree.link("backup2-alias", to: t + "/backup2")
        try tree.link("loop/one", to: "two")
        try tree.link("loop/two", to: "one")
        try tree.link("nowhere", to: t + "/missing/dir")
        let text = document(
            ("a", t + "/data", t + "/backup/a"),
            // Two sources may be one tree: both are only read.
            ("b", t + "/data-alias", t + "/backup-alias/b"),
            // "backup/a2" is a neighbour of "backup/a", not inside it; "backup2" of "backup".
            ("c", t + "/backup2-alias/in", t + "/backup-alias/a2"),
            // A loop of links and a link to nowhere resolve as far as they can, and no further.
            ("d", t + "/loop/one/in", t + "/nowhere/d"),
            ("e", t + "/loop/two/in", t + "/missing/e"))
        try loadConfiguration(text).checkMirrorTreesOnDisk()
    }

    @Test func resolvedPath_isTheRealPathOfWhatExists_andTheRestAsWritten() throws {
        let tree = Tree()
        let t = tree.t
        try tree.directories("real/dir")
        try tree.link("link", to: "real")
        try tree.link("real/dangling", to: "../gone/away")
        try tree.link("self", to: "self")
        #expect(ResolvedPath.resolve(t + "/link/dir") == t + "/real/dir")
        #expect(ResolvedPath.resolve(t + "//link/./dir/") == t + "/real/dir")
        #expect(ResolvedPath.resolve(t + "/link/../real/dir") == t + "/real/dir")
        #expect(ResolvedPath.resolve(t + "/link/new/../other") == t + "/real/other")
        #expect(ResolvedPath.resolve(t + "/link/dangling/x") == t + "/gone/away/x")
        #expect(ResolvedPath.resolve(t + "/self/x") == t + "/self/x")  // a loop: as written from there
        #expect(ResolvedPath.resolve("/") == "/")
    }
}
