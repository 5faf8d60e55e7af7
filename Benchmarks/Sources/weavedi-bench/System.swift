#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The few system calls the harness needs, on Glibc alone (no Foundation: the harness's own
/// footprint stays small and its start-up cost stays that of a plain Swift program).
enum System {
    /// CLOCK_MONOTONIC in nanoseconds.
    @inline(__always)
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    static func sleep(seconds: Double) {
        var ts = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
        var remaining = timespec()
        while nanosleep(&ts, &remaining) == -1 && errno == EINTR { ts = remaining }
    }

    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// This process's environment, from /proc (so that children can inherit it).
    static func environmentList() -> [String] {
        guard let bytes = readBytes("/proc/self/environ") else { return [] }
        return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    static func readBytes(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            result += buffer[..<n]
        }
        return result
    }

    static func readFile(_ path: String) -> String? {
        readBytes(path).map { String(decoding: $0, as: UTF8.self) }
    }

    @discardableResult
    static func writeFile(_ path: String, _ text: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// Nil if `path` can be written (an existing file opened for writing, or a new one created
    /// and removed again), else why not.
    static func checkWritable(_ path: String) -> String? {
        if exists(path) {
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            if fd < 0 { return String(cString: strerror(errno)) }
            close(fd)
            return nil
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 { return String(cString: strerror(errno)) }
        close(fd)
        unlink(path)
        return nil
    }

    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    static func isExecutable(_ path: String) -> Bool {
        access(path, X_OK) == 0
    }

    /// The program `name`: the first executable of that name in the directories of `PATH`, else
    /// the first of `fallbacks` that is executable.
    static func findProgram(_ name: String, fallbacks: [String]) -> String? {
        let directories = (environment("PATH") ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
        for directory in directories where directory.hasPrefix("/") {
            let path = directory + "/" + name
            if isExecutableFile(path) { return path }
        }
        return fallbacks.first(where: isExecutableFile)
    }

    /// An executable regular file (not a directory, which `access(X_OK)` also lets through).
    static func isExecutableFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && isExecutable(path)
    }

    /// A new directory under /tmp.
    static func makeTemporaryDirectory(_ label: String) -> String {
        var template = Array("/tmp/\(label)-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in
            guard let made = mkdtemp(buffer.baseAddress!) else { fatalError("mkdtemp failed: errno \(errno)") }
            return String(cString: made)
        }
    }

    static func removeTree(_ path: String) {
        guard path.hasPrefix("/tmp/") else { return }
        if let pid = spawn("/bin/rm", ["-rf", path]) { _ = wait(pid) }
    }

    static func writeError(_ text: String) {
        var line = text
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if n <= 0 { break }
                offset += n
            }
        }
    }

    static var processorCount: Int { sysconf(Int32(_SC_NPROCESSORS_ONLN)) }

    // MARK: Processes

    /// Starts `path` with `arguments`; `environment` nil inherits ours. Standard output and
    /// error go to `output` (a file, appended) or /dev/null.
    ///
    /// The child starts as a service manager would start it: no signal blocked and every
    /// signal's disposition the default. (Spawning from a libdispatch worker thread, as
    /// everything after `main`'s first `await` is, would otherwise hand the child that thread's
    /// mask, which blocks most signals: a child that never unblocks SIGTERM ignores `stop`.)
    static func spawn(
        _ path: String, _ arguments: [String], environment: [String]? = nil, output: String? = nil, searchPath: Bool = false
    ) -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let target = output ?? "/dev/null"
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, target, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = (environment ?? environmentList()).map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let status = argv.withUnsafeBufferPointer { args in
            envp.withUnsafeBufferPointer { env in
                searchPath
                    ? posix_spawnp(&pid, path, &actions, &attributes, args.baseAddress!, env.baseAddress!)
                    : posix_spawn(&pid, path, &actions, &attributes, args.baseAddress!, env.baseAddress!)
            }
        }
        return status == 0 ? pid : nil
    }

    /// Waits for `pid`; returns its exit status (128 + signal when killed).
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            if errno != EINTR { return -1 }
        }
        return exitCode(status)
    }

    /// Waits up to `seconds` for `pid`; nil if it is still running.
    static func wait(_ pid: pid_t, seconds: Double) -> Int32? {
        let deadline = now() + UInt64(seconds * 1e9)
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { return exitCode(status) }
            if r == -1 && errno != EINTR { return -1 }
            if now() >= deadline { return nil }
            sleep(seconds: 0.002)
        }
    }

    /// Sends SIGTERM, then SIGKILL if it is not gone within `seconds`.
    static func stop(_ pid: pid_t, seconds: Double = 5) {
        kill(pid, SIGTERM)
        if wait(pid, seconds: seconds) == nil {
            kill(pid, SIGKILL)
            _ = wait(pid)
        }
    }

    private static func exitCode(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Runs a command to completion; returns its status and what it printed.
    static func run(_ path: String, _ arguments: [String], searchPath: Bool = true, echo: Bool = false) -> (status: Int32, output: String) {
        let directory = makeTemporaryDirectory("weavedi-bench-run")
        defer { removeTree(directory) }
        let log = directory + "/output"
        guard let pid = spawn(path, arguments, output: echo ? nil : log, searchPath: searchPath) else {
            return (-1, "cannot start \(path)")
        }
        let status = wait(pid)
        return (status, readFile(log) ?? "")
    }

    // MARK: /proc

    /// A `Key: value` field of /proc/PID/status (e.g. `VmRSS` in kB, `voluntary_ctxt_switches`).
    static func statusField(_ path: String, _ key: String) -> Int? {
        guard let text = readFile(path) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            let digits = line.dropFirst(key.count + 1).filter { $0.isNumber }
            return Int(String(digits))
        }
        return nil
    }

    /// Voluntary context switches of every thread of `pid`, by thread id: each is a thread going
    /// to sleep, so each is followed by a wakeup. (Involuntary ones are preemptions while
    /// running, not wakeups.)
    static func wakeups(_ pid: pid_t) -> [Int: Int] {
        var result: [Int: Int] = [:]
        guard let dir = opendir("/proc/\(pid)/task") else { return result }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let tid = Int(name) else { continue }
            let path = "/proc/\(pid)/task/\(tid)/status"
            result[tid] = statusField(path, "voluntary_ctxt_switches") ?? 0
        }
        return result
    }

    // MARK: Sockets

    static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        precondition(bytes.count < MemoryLayout.size(ofValue: address.sun_path), "socket path too long: \(path)")
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// A connected Unix stream socket, or -1.
    static func connectStream(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        let status = withAddress(path) { connect(fd, $0, $1) }
        if status != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    /// A bound, non-blocking Unix datagram socket (the harness's NOTIFY_SOCKET), or -1.
    static func bindDatagram(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return -1 }
        unlink(path)
        if withAddress(path, { bind(fd, $0, $1) }) != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    /// Waits until `fd` is readable or `timeout` seconds pass.
    static func waitReadable(_ fd: Int32, timeout: Double) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let r = poll(&entry, 1, Int32(max(0, timeout * 1000)))
        return r > 0
    }

    static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    // MARK: Threads

    private final class ThreadBody {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Starts a thread running `body`; join it with `join`.
    static func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        let status = pthread_create(&thread, nil, { raw in
            Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
        return thread
    }

    static func join(_ thread: pthread_t) {
        pthread_join(thread, nil)
    }
}

/// A start line for threads: each calls `arrive()` and spins until all have.
final class StartLine: Sendable {
    private let waiting: Atomic<Int>

    init(parties: Int) { waiting = Atomic(parties) }

    func arrive() {
        waiting.subtract(1, ordering: .acquiringAndReleasing)
        while waiting.load(ordering: .acquiring) > 0 { sched_yield() }
    }
}

/// Prints a line to standard output at once (unbuffered), so that progress shows when the
/// output goes to a file or a pipe.
func print(_ text: String = "") {
    var line = text + "\n"
    line.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let n = write(1, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            offset += n
        }
    }
}
