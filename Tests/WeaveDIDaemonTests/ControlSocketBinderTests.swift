import Foundation
import Synchronization
import Testing
import WeaveDI
import WeaveDIPosix
@testable import WeaveDIDaemon

/// `ControlSocketBinder` in this process, where what it does to the process as a whole shows.
@Suite struct ControlSocketBinderTests {
    /// The process's umask, as the kernel reports it (`/proc/self/status`), without changing it.
    static func umask() -> String? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        return status.split(separator: "\n").first { $0.hasPrefix("Umask:") }.map(String.init)
    }

    /// Right after `bind`, before its group and mode are set, the socket file has its owner's
    /// bits only, whatever the umask lets through: nobody else can connect in between.
    @Test func aSocketJustBound_isTheOwnersOnly() throws {
        let line = try #require(Self.umask())
        let mask = UInt32(line.split(separator: "\t").last.map(String.init) ?? "", radix: 8) ?? 0o777
        guard mask & 0o077 != 0o077 else {
            try Test.cancel("the umask (\(line)) hides the group's and others' bits anyway")
        }
        let directory = TemporaryDirectory()
        let path = directory.path + "/control.sock"
        let listener = try ControlSocketBinder.listenOwnerOnly(at: UnixSocketAddress(path: path), mode: 0o666)
        let status = try FileStatus(path: path, followSymlinks: false)
        #expect(status.kind == .socket)
        #expect(status.permissions.rawValue & 0o077 == 0, "mode \(String(status.permissions.rawValue, radix: 8)) with \(line)")
        _ = listener
    }

    /// Binding the socket leaves the umask alone: it belongs to every thread of the daemon, and
    /// a file another thread makes meanwhile (a mirror run's directory, beside a rebind by the
    /// `control.socket` fix) would take a mask made for the socket. Another thread looks at the
    /// umask all the while the socket is bound again and again; the socket still ends with its
    /// mode and nothing more.
    @Test func binding_leavesTheProcessUmaskAlone_andTheSocketGetsItsMode() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/run/control.sock"
        let log = DaemonLog(filter: LogFilter(defaultLevel: .off, overrides: [:]), journald: false)
        let original = try #require(Self.umask())
        let done = Atomic<Bool>(false)
        let seen = Locked<Set<String>>([])
        let watcher = try PosixThread {
            while !done.load(ordering: .acquiring) {
                if let mask = Self.umask() { seen.withLock { _ = $0.insert(mask) } }
            }
        }
        for _ in 0..<300 {
            var made = false
            let listener = try ControlSocketBinder.bind(path: path, mode: 0o640, group: nil, origin: .controlSocket, file: "test.json", log: log, madeDirectory: &made)
            #expect(try FileStatus(path: path, followSymlinks: false).permissions.rawValue & 0o7777 == 0o640)
            try listener.close()
            try FileDescriptor.currentWorkingDirectory.unlink(at: path)
        }
        done.store(true, ordering: .releasing)
        watcher.join()
        #expect(seen.withLock { $0 } == [original])
    }
}
