import Foundation
import Testing
import WeaveDI
import WeaveDIPosix

/// The command prefix that runs a program as nobody, if the tests may use one.
let dropToNobody: [String]? = {
    guard CurrentProcess.effectiveUserID == 0, (try? UserDatabase.user(named: "nobody")) != nil else { return nil }
    for path in ["/usr/bin/setpriv", "/bin/setpriv"] where fileExists(path) {
        return [path, "--reuid=65534", "--regid=65534", "--clear-groups"]
    }
    for path in ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"] where fileExists(path) {
        return [path, "-u", "nobody", "--"]
    }
    return nil
}()

/// A user without administrator rights: weavedictl run as `nobody` (the tests run as root).
@Suite(.enabled(if: dropToNobody != nil, "needs root and setpriv or runuser to run as nobody"))
struct CtlPermissionTests {
    /// A daemon whose socket nobody may connect to: mode 0666 in a directory of its own that
    /// is made 0755 once the daemon is ready (the daemon makes the socket's directory 0750).
    private func openDaemon() throws -> (DaemonProcess, socket: String) {
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let socket = directory.path + "/public/control.sock"
        let config = directory.write("weavedid.json", "{\"control\": {\"socket\": \"\(socket)\", \"socketMode\": \"0666\"}}")
        let daemon = try readyDaemon(["--config", config], directory: directory)
        chmod(directory.path + "/public", 0o755)
        return (daemon, socket)
    }

    @Test func nobody_mayRead_butAPrivilegedMethodExits77() throws {
        let nobody = try #require(dropToNobody)
        let (daemon, socket) = try openDaemon()
        let ping = try CtlRun.run(["--socket", socket, "ping"], wrapper: nobody)
        #expect(ping.code == 0, "reading methods are open to whoever can connect: \(ping.all)")
        let reload = try CtlRun.run(["--socket", socket, "reload"], wrapper: nobody)
        #expect(reload.code == 77, "\(reload.all)")
        #expect(reload.error.hasPrefix(
            "weavedictl: permission denied: io.weavedi.Daemon.Reload changes the daemon and needs administrator rights (you are uid 65534)."))
        #expect(reload.error.contains("control.adminUsers"))
        #expect(daemon.waitForLog("denied io.weavedi.Daemon.Reload to uid 65534"))
    }

    @Test func nobody_setLogLevel_exits77_andChangesNothing() throws {
        let nobody = try #require(dropToNobody)
        let (daemon, socket) = try openDaemon()
        let set = try CtlRun.run(["--socket", socket, "log-level", "off"], wrapper: nobody)
        #expect(set.code == 77, "\(set.all)")
        #expect(set.error.contains("io.weavedi.Daemon.SetLogLevel"))
        #expect(daemon.waitForLog("denied io.weavedi.Daemon.SetLogLevel to uid 65534"))
        let fix = try CtlRun.run(["--socket", socket, "fix"], wrapper: nobody)
        #expect(fix.code == 77)
        let get = try CtlRun.run(["--socket", socket, "log-level"])
        #expect(get.output.hasPrefix("level:  all\n"))
    }

    /// A reload takes the new administrators, socket mode and socket group at once: rights
    /// given and taken away, the socket opened to a group and closed again.
    @Test func aReload_appliesTheNewAdministrators_socketMode_andSocketGroup() throws {
        let nobody = try #require(dropToNobody)
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let socket = directory.path + "/public/control.sock"
        func configure(_ control: String) -> String {
            directory.write("weavedid.json", "{\"control\": {\"socket\": \"\(socket)\", \(control)}, \"sync\": {\"jobs\": []}}")
        }
        let config = configure(#""socketMode": "0666", "adminUsers": ["nobody"]"#)
        let daemon = try readyDaemon(["--config", config], directory: directory)
        chmod(directory.path + "/public", 0o755)
        func reload() throws {
            let run = try CtlRun.run(["--socket", socket, "reload"])
            #expect(run.code == 0 && run.output.contains("configuration reloaded"), "\(run.all)\n\(daemon.log)")
        }
        func asNobody(_ arguments: [String]) throws -> CtlRun {
            try CtlRun.run(["--socket", socket] + arguments, wrapper: nobody)
        }
        #expect(try asNobody(["log-level", "all"]).code == 0, "an administrator: \(daemon.log)")

        _ = configure(#""socketMode": "0666", "adminUsers": []"#)
        try reload()
        let denied = try asNobody(["log-level", "all"])
        #expect(denied.code == 77 && denied.error.contains("needs administrator rights"), "\(denied.all)")
        #expect(daemon.waitForLog("administrators now: users none; groups none"))

        _ = configure(#""socketMode": "0660", "socketGroup": 65534"#)
        try reload()
        let status = try FileStatus(path: socket, followSymlinks: false)
        #expect(status.permissions.rawValue & 0o777 == 0o660 && status.groupID == 65534)
        #expect(daemon.waitForLog("\"\(socket)\": mode 0660, group 65534"), "a mode as chmod takes it: \(daemon.log)")
        #expect(try asNobody(["ping"]).code == 0, "nobody's group (65534) may connect")

        _ = configure(#""socketMode": "0660""#)
        try reload()
        #expect(try FileStatus(path: socket, followSymlinks: false).groupID == getegid())
        let shut = try asNobody(["ping"])
        #expect(shut.code == 77 && shut.error.contains("Permission denied (EACCES)"), "\(shut.all)")

        // A group that does not exist: refused, and nothing changes.
        _ = configure(#""socketMode": "0666", "socketGroup": "no-such-group-here""#)
        let refused = try CtlRun.run(["--socket", socket, "reload"])
        #expect(refused.code != 0 && refused.all.contains("control.socketGroup: no group named \"no-such-group-here\""), "\(refused.all)")
        #expect(try FileStatus(path: socket, followSymlinks: false).permissions.rawValue & 0o777 == 0o660)
    }

    /// A socket open to all (0666) in a directory nobody may not search (the 0750 the daemon
    /// makes, root's group): connect says EACCES, and the message names the directory, not
    /// the socket's mode.
    @Test func aDirectoryThatMayNotBeSearched_isNamed_notTheSocket() throws {
        let nobody = try #require(dropToNobody)
        let directory = TemporaryDirectory()
        chmod(directory.path, 0o755)
        let socket = directory.path + "/private/control.sock"
        let config = directory.write("weavedid.json", "{\"control\": {\"socket\": \"\(socket)\", \"socketMode\": \"0666\"}}")
        let daemon = try readyDaemon(["--config", config], directory: directory)
        let status = try FileStatus(path: directory.path + "/private", followSymlinks: true)
        try #require(status.permissions.rawValue & 0o777 == 0o750 && status.groupID != 65534, "\(status)")
        let run = try CtlRun.run(["--socket", socket, "ping"], wrapper: nobody)
        #expect(run.code == 77, "\(run.all)")
        #expect(run.error.hasPrefix("weavedictl: cannot connect to \(socket): Permission denied (EACCES)\n"
            + "The directory \(directory.path)/private (mode 0750, owner root, group "), "\(run.error)")
        #expect(run.error.contains("), on the way to the socket, may not be searched by this user (uid 65534), so nothing in it can be reached"),
            "\(run.error)")
        #expect(run.error.contains("control.socketGroup") && !run.error.contains("The control socket is open to its owner and group only"),
            "\(run.error)")
        // Through a symbolic link to the socket, or to its directory, the directory is found too.
        try #require(symlink("private/control.sock", directory.path + "/link.sock") == 0 && symlink("private", directory.path + "/dir") == 0)
        for path in [directory.path + "/link.sock", directory.path + "/dir/control.sock"] {
            let linked = try CtlRun.run(["--socket", path, "ping"], wrapper: nobody)
            #expect(linked.code == 77, "\(linked.all)")
            #expect(linked.error.contains("\nThe directory \(directory.path)/private (mode 0750, owner root, group "), "\(linked.error)")
        }
        // Once the directory may be searched, the socket's own mode decides: it is open to all.
        chmod(directory.path + "/private", 0o755)
        #expect(try CtlRun.run(["--socket", socket, "ping"], wrapper: nobody).code == 0)
        _ = daemon
    }

    @Test func nobody_onTheDefaultSocket_cannotConnect_andExits77() throws {
        let nobody = try #require(dropToNobody)
        let daemon = try readyDaemon()
        chmod(daemon.directory.path, 0o755)  // leave the 0750 runtime directory and 0660 socket to stop nobody
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "ping"], wrapper: nobody)
        #expect(run.code == 77, "\(run.all)")
        #expect(run.error.hasPrefix("weavedictl: cannot connect to \(daemon.defaultSocket): Permission denied (EACCES)\n"))
        #expect(run.error.contains("control.socketGroup"))
    }
}
