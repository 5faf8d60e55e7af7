import Foundation
import Testing
@testable import WeaveDIDaemon
import WeaveDIPosix

/// Every message about the configuration quotes a value from outside one way (an account's
/// name with `JSONValue.quotedForMessage`, a path with `quotedPathForMessage`, which shortens
/// it only past PATH_MAX): a quote in it cannot end the quoting early,
/// nor a newline start a line of its own. Each message is made here with a value holding a
/// quote and a newline.
@Suite struct ConfigurationQuotingTests {
    /// A name with a quote and a newline, as a file system holds it.
    static let name = "q\"\nx"
    /// The same, as a JSON string writes it, and as a message quotes it (the two agree).
    static let escaped = #"q\"\nx"#

    /// The message of each check, made with `name` in a path or an account's name: (what it is,
    /// the message, what it should be).
    func messages() throws -> [(String, String?, String)] {
        let w = Self.escaped
        var cases: [(String, String?, String)] = []

        // Checks of the file alone.
        cases.append(("a destination inside its source",
            errorText(#"{"sync": {"jobs": [{"name": "a", "source": "/srv/\#(w)", "destination": "/srv/\#(w)/m"}]}}"#),
            #"sync.jobs[0].destination: the destination "/srv/\#(w)/m" is inside the source "/srv/\#(w)""#))
        cases.append(("jobs' trees that overlap",
            errorText(#"{"sync": {"jobs": [{"name": "a", "source": "/srv/a", "destination": "/srv/\#(w)"}, {"name": "b", "source": "/srv/b", "destination": "/srv/\#(w)/in"}]}}"#),
            #"sync.jobs[1].destination: the destination "/srv/\#(w)/in" is inside the destination "/srv/\#(w)" of job "a" (sync.jobs[0]); the jobs would overwrite or delete each other's files"#))
        cases.append(("a destination at a path of the daemon's",
            errorText(#"{"stateDirectory": "/var/\#(w)", "sync": {"jobs": [{"name": "a", "source": "/srv/a", "destination": "/var/\#(w)"}]}}"#),
            #"sync.jobs[0].destination: the destination "/var/\#(w)" is the state directory "/var/\#(w)"; the job would overwrite or delete the daemon's lock (weavedid.lock) and the jobs' state file (jobs.json) there"#))
        let runtime = "/run/" + String(repeating: "r", count: 40) + w + String(repeating: "r", count: 60)
        cases.append(("a default socket path too long",
            errorText(#"{"runtimeDirectory": "\#(runtime)"}"#),
            #"control.socket: the default socket path "\#(runtime)/control.sock" is 122 bytes long, but a Unix socket path may have at most 107 bytes (sun_path); set control.socket or a shorter runtimeDirectory"#))
        // A path is shown whole, however long (up to PATH_MAX): two long paths often differ
        // only at their end, which a value's 60-character cut would hide.
        let deep = "/srv/" + String(repeating: "long-directory-name/", count: 10) + w
        cases.append(("long paths, shown whole",
            errorText(#"{"sync": {"jobs": [{"name": "a", "source": "\#(deep)", "destination": "\#(deep)/copy"}]}}"#),
            #"sync.jobs[0].destination: the destination "\#(deep)/copy" is inside the source "\#(deep)""#))
        let relative = String(deep.dropFirst())
        cases.append(("a long relative path, shown whole",
            errorText(#"{"stateDirectory": "\#(relative)"}"#),
            #"stateDirectory: expected an absolute path, got "\#(relative)""#))
        cases.append(("a long metrics file path whose end is wrong, shown whole",
            errorText(#"{"sync": {"metricsFile": "\#(deep)/m.txt/"}}"#),
            #"sync.metricsFile: expected a file name ending in ".prom" (the only files node_exporter's textfile collector reads), got "\#(deep)/m.txt/""#))

        // Checks on the file system, through symbolic links.
        let tree = TemporaryDirectory("weavedi-quoting")
        let t = tree.path
        let named = t + "/" + Self.name
        for path in [named + "/source", named + "/backup", named + "/state", t + "/b"] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        for (link, target) in [("into-source", named + "/source"), ("alias", named + "/backup"), ("into-state", named + "/state")] {
            try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: t + "/" + link, pointingTo: target)
        }
        let n = t + "/" + w
        cases.append(("a destination that is its source through links",
            try diskError(#"{"sync": {"jobs": [{"name": "a", "source": "\#(n)/source", "destination": "\#(t)/into-source"}]}}"#),
            #"sync.jobs[0].destination: the destination "\#(t)/into-source" of job "a" is its source "\#(n)/source" through symbolic links ("\#(t)/into-source" resolves to "\#(n)/source", "\#(n)/source" to "\#(n)/source")"#))
        cases.append(("jobs' trees that overlap through links",
            try diskError(#"{"sync": {"jobs": [{"name": "a", "source": "\#(n)/source", "destination": "\#(n)/backup"}, {"name": "b", "source": "\#(t)/b", "destination": "\#(t)/alias"}]}}"#),
            #"sync.jobs[1].destination: the destination "\#(t)/alias" of job "b" is the destination "\#(n)/backup" of job "a" (sync.jobs[0]) through symbolic links ("\#(t)/alias" resolves to "\#(n)/backup", "\#(n)/backup" to "\#(n)/backup"); the jobs would overwrite or delete each other's files"#))
        cases.append(("a destination at a path of the daemon's through links",
            try diskError(#"{"stateDirectory": "\#(n)/state", "sync": {"jobs": [{"name": "a", "source": "\#(n)/source", "destination": "\#(t)/into-state"}]}}"#),
            #"sync.jobs[0].destination: the destination "\#(t)/into-state" of job "a" is the state directory "\#(n)/state" through symbolic links ("\#(t)/into-state" resolves to "\#(n)/state", "\#(n)/state" to "\#(n)/state"); the job would overwrite or delete the daemon's lock (weavedid.lock) and the jobs' state file (jobs.json) there"#))

        // One directory at two paths through a mount, and the step a deadline names.
        let overlap = MountOverlap(relation: .same, directories: [.init(path: "/mnt/" + Self.name, otherPath: "/data/src")])
        cases.append(("paths that a mount makes one directory", overlap.explanation,
            #""/mnt/\#(w)" and "/data/src" are the same directory (same device and inode)"#))
        cases.append(("the step a deadline names",
            LoadStep("resolving", file: "/etc/weavedi/weavedid.json", fieldPath: "sync.jobs[0].source", path: "/mnt/" + Self.name).subject,
            #"resolving "/mnt/\#(w)""#))

        // Accounts this machine does not know (the file refuses a newline in a name; these
        // lists are checked as they come).
        var control = DaemonConfiguration.Control(socket: "/run/weavedi/control.sock")
        control.adminUsers = [.name("gh" + Self.name)]
        let accounts = AdminAccounts(control, user: { _ throws(Errno) in nil }, group: { _ throws(Errno) in nil })
        cases.append(("an administrator this machine does not know", accounts.warnings.first,
            #"control.adminUsers[0]: no user named "gh\#(w)" on this machine; ignored, it gives nobody administrator rights"#))
        var refusal: String?
        do { _ = try ControlSocketBinder.groupID(.name("no-such-group-" + Self.name), file: "/etc/weavedi/weavedid.json") } catch { refusal = error.description }
        cases.append(("a socket group this machine does not know", refusal,
            #"/etc/weavedi/weavedid.json: control.socketGroup: no group named "no-such-group-\#(w)" on this machine: create it (the package's weavedi group comes with systemd/sysusers.d/weavedi.conf), name another group, or remove the field"#))
        withExtendedLifetime(tree) {}
        return cases
    }

    @Test func outsideValues_areQuotedOneWay_aQuoteOrANewlineEscaped() throws {
        for (what, message, expected) in try messages() {
            #expect(message == expected, "\(what)")
            #expect(message?.contains("\n") == false, "\(what): \(message ?? "no message")")
        }
    }

    /// The error `checkMirrorTreesOnDisk` throws for `text`, after the file name.
    private func diskError(_ text: String) throws -> String? {
        let configuration = try loadConfiguration(text)
        do {
            try configuration.checkMirrorTreesOnDisk()
            return nil
        } catch {
            let file = try #require(configuration.filePath)
            return String(error.description.dropFirst(file.count + 2))
        }
    }
}
