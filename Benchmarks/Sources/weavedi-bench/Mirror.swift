#if canImport(Glibc)
import Glibc
#endif

// The mirror job against rsync, in the same run on the same tree: a durable first run against
// `rsync -a --fsync`, a first run with `durable: false` against `rsync -a`, a run with nothing
// to do against a second `rsync -a`, and the daemon's peak resident memory. The tree is made
// here, deterministically, in a temporary directory under /tmp, where the destinations are too.
// The daemon runs one job per durability setting; a run is the varlink call
// `io.weavedi.Daemon.RunJob`, timed by the wall clock around it.

/// The shape of the generated tree.
struct MirrorTree {
    /// Top-level directories, subdirectories in each, small files in each subdirectory.
    var top: Int
    var sub: Int
    var filesPerDirectory: Int
    var largeFiles: Int
    var largeBytes: Int

    var smallFiles: Int { top * sub * filesPerDirectory }
    var files: Int { smallFiles + largeFiles }

    static let full = MirrorTree(top: 20, sub: 10, filesPerDirectory: 100, largeFiles: 8, largeBytes: 32 << 20)
    static let quick = MirrorTree(top: 20, sub: 10, filesPerDirectory: 10, largeFiles: 2, largeBytes: 8 << 20)

    var description: String {
        "\(grouped(smallFiles)) files of 1–16 KB + \(largeFiles) × \(largeBytes >> 20) MB"
    }

    /// Writes the tree under `root` (which exists); returns the bytes written, or nil on an error.
    func generate(_ root: String) -> Int? {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {  // xorshift64*
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 0x2545_F491_4F6C_DD1D
        }
        let chunk = 1 << 20
        var pool = [UInt8](repeating: 0, count: chunk + 16_384)
        pool.withUnsafeMutableBytes { raw in
            for i in 0..<(raw.count / 8) { raw.storeBytes(of: next(), toByteOffset: i * 8, as: UInt64.self) }
        }
        var total = 0
        func write(_ path: String, _ count: Int, offset: Int, tag: UInt64) -> Bool {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            var written = 0
            var tag = tag
            while written < count {
                let n = min(chunk, count - written)
                // The first 8 bytes of each chunk name the file and the chunk, so no two are alike.
                let start = offset + (written == 0 ? 0 : 8 * Int(tag & 1023))
                pool.withUnsafeMutableBytes { raw in raw.storeBytes(of: tag, toByteOffset: start, as: UInt64.self) }
                let ok = pool.withUnsafeBytes { raw in
                    System.writeAll(fd, UnsafeRawBufferPointer(rebasing: raw[start..<(start + n)]))
                }
                guard ok else { return false }
                written += n
                tag &+= 0x1_0000_0000
            }
            total += count
            return true
        }
        var index: UInt64 = 0
        for t in 0..<top {
            let dt = root + "/d\(padded(t, 2))"
            guard mkdir(dt, 0o755) == 0 else { return nil }
            for s in 0..<sub {
                let ds = dt + "/s\(padded(s, 2))"
                guard mkdir(ds, 0o755) == 0 else { return nil }
                for f in 0..<filesPerDirectory {
                    let size = 1024 + Int(next() % 15_361)
                    index += 1
                    guard write(ds + "/f\(padded(f, 4)).dat", size, offset: Int(next() % 16_384) & ~7, tag: index) else { return nil }
                }
            }
        }
        guard mkdir(root + "/large", 0o755) == 0 else { return nil }
        for l in 0..<largeFiles {
            index += 1
            guard write(root + "/large/big-\(l).bin", largeBytes, offset: 0, tag: index) else { return nil }
        }
        return total
    }
}

func padded(_ value: Int, _ width: Int) -> String {
    let text = "\(value)"
    return String(repeating: "0", count: max(0, width - text.count)) + text
}

func grouped(_ value: Int) -> String {
    var text = "\(value)", out = ""
    while text.count > 3 {
        out = "," + text.suffix(3) + out
        text.removeLast(3)
    }
    return text + out
}

extension System {
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// Runs `path arguments…` to completion: its exit status, wall time in nanoseconds, and peak
    /// resident memory in kB (of that process, not of the children it starts).
    static func timedRun(_ path: String, _ arguments: [String], output: String) -> (status: Int32, nanos: UInt64, maxRSSKB: Int) {
        let start = now()
        guard let pid = spawn(path, arguments, environment: ["PATH=/usr/bin:/bin", "LC_ALL=C"], output: output) else {
            return (-1, 0, 0)
        }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) == -1 {
            if errno != EINTR { return (-1, 0, 0) }
        }
        let elapsed = now() - start
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (code, elapsed, usage.ru_maxrss)
    }

    /// Writes dirty pages out and, where allowed, drops the page cache (so that first runs read
    /// from the disk alike). Returns whether the caches were dropped.
    @discardableResult
    static func flushCaches() -> Bool {
        Glibc.sync()
        return writeFile("/proc/sys/vm/drop_caches", "3\n")
    }

    /// A fresh, empty directory at `path` (removed first if it exists).
    static func emptyDirectory(_ path: String) {
        removeTree(path)
        mkdir(path, 0o755)
    }
}

/// One varlink call on a fresh connection: the reply, without its NUL, or nil.
func varlinkCall(_ socket: String, _ request: String) -> String? {
    let fd = System.connectStream(socket)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    let bytes = Array(request.utf8) + [0]
    guard bytes.withUnsafeBytes({ System.sendAll(fd, $0) }) else { return nil }
    var reply: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return nil }
        reply += buffer[..<n]
        if reply.last == 0 {
            reply.removeLast()
            return String(decoding: reply, as: UTF8.self)
        }
    }
}

/// The text of a string or number member `"key":…` of a flat JSON reply (enough for `run`).
func jsonMember(_ json: String, _ key: String) -> String? {
    let needle = Array("\"\(key)\":".utf8)
    let bytes = Array(json.utf8)
    guard bytes.count >= needle.count,
        let at = (0...(bytes.count - needle.count)).first(where: { bytes[$0..<($0 + needle.count)].elementsEqual(needle) })
    else { return nil }
    var rest = Substring(String(decoding: bytes[(at + needle.count)...], as: UTF8.self)).drop { $0 == " " }
    if rest.first == "\"" {
        rest = rest.dropFirst()
        return String(rest.prefix { $0 != "\"" })
    }
    return String(rest.prefix { $0 != "," && $0 != "}" && $0 != " " })
}

func benchMirror(_ settings: Settings, _ report: Report, daemon: String) {
    let tree = settings.quick ? MirrorTree.quick : MirrorTree.full
    let samples = settings.quick ? 1 : 3
    let idleSamples = settings.quick ? 2 : 5
    let directory = System.makeTemporaryDirectory("weavedi-bench-mirror")
    defer { System.removeTree(directory) }
    let source = directory + "/source"
    mkdir(source, 0o755)
    print("mirror: generating \(tree.description) in \(source)")
    guard let bytes = tree.generate(source) else {
        print("  cannot write the tree in \(source) (errno \(errno))")
        report.note("mirror: the tree could not be generated")
        return
    }
    let dropped = System.flushCaches()
    let rsync = System.findProgram("rsync", fallbacks: ["/usr/bin/rsync", "/usr/local/bin/rsync", "/bin/rsync"])
    if let rsync { print("  rsync: \(rsync)") }
    if rsync == nil {
        print("  rsync is not installed: the comparison is skipped (install it with `apt-get install rsync`)")
        report.note("rsync is not installed: the rsync baselines are skipped (install it with `apt-get install rsync`)")
    }
    if !dropped { report.note("mirror: the page cache could not be dropped between runs (sync only)") }

    // One daemon, two jobs that differ only in `durable`; neither runs on its own.
    let engineDurable = directory + "/mirror-durable", engineFast = directory + "/mirror"
    let rsyncDurable = directory + "/rsync-fsync", rsyncFast = directory + "/rsync"
    func job(_ name: String, _ destination: String, durable: Bool) -> String {
        #"{"name": "\#(name)", "source": "\#(source)", "destination": "\#(destination)", "interval": 3600, "durable": \#(durable)}"#
    }
    let config = directory + "/weavedid.json"
    System.writeFile(config, """
        {"control": {"callTimeout": 3600},
         "sync": {"jobs": [\(job("durable", engineDurable, durable: true)), \(job("fast", engineFast, durable: false))]}}

        """)
    for path in [engineDurable, engineFast] { mkdir(path, 0o755) }
    guard let d = NotifiedProcess(daemon, ["--config", config], environment: daemonEnvironment(directory), directory: directory, label: "weavedid"),
        d.waitReady() != nil
    else {
        print("  weavedid did not start (log: \(System.readFile(directory + "/weavedid.log") ?? ""))")
        report.note("mirror: weavedid did not start")
        return
    }
    defer { d.stop() }
    let socket = directory + "/run/control.sock"
    print("  \(grouped(tree.files)) files, \(fixed(Double(bytes) / 1e6, 0)) MB; daemon pid \(d.pid), \(samples) sample(s), page cache \(dropped ? "dropped" : "kept") between runs")

    var problems: [String] = []
    /// A run of the daemon's job: wall nanoseconds around RunJob, or nil (and a problem noted).
    func engineRun(_ name: String, expectCopied: Int?) -> Double? {
        let start = System.now()
        let reply = varlinkCall(socket, #"{"method":"io.weavedi.Daemon.RunJob","parameters":{"name":"\#(name)"}}"#)
        let elapsed = System.now() - start
        guard let reply, jsonMember(reply, "result") == "success" else {
            problems.append("job \(name): \(reply ?? "no reply")")
            return nil
        }
        let copied = jsonMember(reply, "filesCopied") ?? "?"
        if let expectCopied, copied != "\(expectCopied)" {
            problems.append("job \(name) copied \(copied) files, expected \(expectCopied)")
        }
        print("    weavedid \(name): \(Unit.time.format(Double(elapsed))) (reply duration \(jsonMember(reply, "duration") ?? "?") s, \(copied) copied, \(jsonMember(reply, "filesSkipped") ?? "?") skipped)")
        return Double(elapsed)
    }
    var rsyncRSS = 0
    func rsyncRun(_ flags: [String], _ destination: String) -> Double? {
        guard let rsync else { return nil }
        let label = "rsync " + flags.joined(separator: " ")
        let run = System.timedRun(rsync, flags + [source + "/", destination + "/"], output: directory + "/rsync.log")
        guard run.status == 0 else {
            problems.append("\(label) exited with \(run.status): \(System.readFile(directory + "/rsync.log") ?? "")")
            return nil
        }
        rsyncRSS = max(rsyncRSS, run.maxRSSKB)
        print("    \(label): \(Unit.time.format(Double(run.nanos)))")
        return Double(run.nanos)
    }

    var durable: [Double] = [], durableBase: [Double] = []
    var fast: [Double] = [], fastBase: [Double] = []
    var idle: [Double] = [], idleBase: [Double] = []
    for sample in 0..<samples {
        print("  sample \(sample + 1) of \(samples)")
        // First runs into empty destinations, each after flushing; the engine goes first in
        // even samples, rsync in odd ones.
        for (engineName, engineDestination, flags, rsyncDestination) in [
            ("durable", engineDurable, ["-a", "--fsync"], rsyncDurable), ("fast", engineFast, ["-a"], rsyncFast),
        ] {
            for path in [engineDestination, rsyncDestination] { System.emptyDirectory(path) }
            let pair: [() -> Void] = [
                {
                    System.flushCaches()
                    if let t = engineRun(engineName, expectCopied: tree.files) {
                        if engineName == "durable" { durable.append(t) } else { fast.append(t) }
                    }
                },
                {
                    System.flushCaches()
                    if let t = rsyncRun(flags, rsyncDestination) {
                        if engineName == "durable" { durableBase.append(t) } else { fastBase.append(t) }
                    }
                },
            ]
            for body in sample % 2 == 0 ? pair : pair.reversed() { body() }
        }
        // Free the space of the durable copies before the next sample.
        for path in [engineDurable, rsyncDurable] { System.emptyDirectory(path) }
    }
    // Nothing to do: the job and rsync -a again over their complete destinations, warm (one
    // untimed pass each first, after the dirty data is written out), alternately.
    Glibc.sync()
    _ = engineRun("fast", expectCopied: 0)
    _ = rsyncRun(["-a"], rsyncFast)
    for _ in 0..<idleSamples {
        if let t = engineRun("fast", expectCopied: 0) { idle.append(t) }
        if let t = rsyncRun(["-a"], rsyncFast) { idleBase.append(t) }
    }
    let peakKB = System.statusField("/proc/\(d.pid)/status", "VmHWM") ?? 0
    for problem in problems { report.note("mirror: \(problem)") }

    let noRsync = rsync == nil ? "rsync not installed" : nil
    let cache = dropped ? "page cache dropped before each" : "sync before each (page cache not dropped)"
    func base(_ values: [Double]) -> Stats? { rsync == nil ? nil : Stats(values) }
    report.add(Figure(
        group: "mirror", name: "mirror: durable first run (\(tree.description))", unit: .time, stats: Stats(durable),
        baselineName: rsync == nil ? nil : "rsync -a --fsync", baseline: base(durableBase), target: .ratioAtMost(0.5),
        note: "wall time around RunJob into an empty destination; \(cache)", skipReason: noRsync))
    report.add(Figure(
        group: "mirror", name: "mirror: first run, durable: false", unit: .time, stats: Stats(fast),
        baselineName: rsync == nil ? nil : "rsync -a", baseline: base(fastBase), target: .ratioAtMost(1.0),
        note: "wall time around RunJob into an empty destination; \(cache)", skipReason: noRsync))
    report.add(Figure(
        group: "mirror", name: "mirror: run with nothing to do", unit: .time, stats: Stats(idle),
        baselineName: rsync == nil ? nil : "rsync -a", baseline: base(idleBase), target: .ratioAtMost(0.5),
        note: "the same job again over its complete destination, warm cache", skipReason: noRsync))
    report.add(Figure(
        group: "mirror", name: "weavedid: peak resident memory during the mirror runs (VmHWM)", unit: .megabytes,
        stats: Stats([Double(peakKB) * 1024 / 1e6]),
        baselineName: rsync == nil ? nil : "rsync", baseline: rsync == nil ? nil : Stats([Double(rsyncRSS) * 1024 / 1e6]),
        target: .atMost(64),
        note: "VmHWM of the daemon after every run; baseline: the largest ru_maxrss of the rsync client process"))
}
