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
    static let quick = MirrorTree(top: 10, sub: 10, filesPerDirectory: 5, largeFiles: 2, largeBytes: 4 << 20)

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

extension MirrorTree {
    /// Every file's path relative to the root, in the order `generate` writes them.
    var relativePaths: [String] {
        var paths: [String] = []
        for t in 0..<top {
            for s in 0..<sub {
                for f in 0..<filesPerDirectory { paths.append("d\(padded(t, 2))/s\(padded(s, 2))/f\(padded(f, 4)).dat") }
            }
        }
        for l in 0..<largeFiles { paths.append("large/big-\(l).bin") }
        return paths
    }

    /// Checks a copy against the source, cheaply: every file is there with the source's size and
    /// mode bits, every 50th small file is the same byte for byte, and each large file matches
    /// in three 64 KB windows (start, middle, end). Nil if it matches, else what differs.
    func checkCopy(source: String, destination: String) -> String? {
        var differences: [String] = []
        let paths = relativePaths
        for (index, path) in paths.enumerated() {
            var a = stat(), b = stat()
            guard stat(source + "/" + path, &a) == 0 else { return "source \(path) is missing" }
            guard stat(destination + "/" + path, &b) == 0 else {
                differences.append("\(path) missing")
                continue
            }
            if a.st_size != b.st_size {
                differences.append("\(path) has \(b.st_size) bytes, not \(a.st_size)")
            } else if a.st_mode & 0o7777 != b.st_mode & 0o7777 {
                differences.append("\(path) has mode \(String(b.st_mode & 0o7777, radix: 8)), not \(String(a.st_mode & 0o7777, radix: 8))")
            } else if path.hasPrefix("large/") {
                let size = Int(a.st_size), window = 65_536
                for offset in [0, max(0, size / 2 - window / 2), max(0, size - window)]
                where !System.sameBytes(source + "/" + path, destination + "/" + path, offset: offset, count: window) {
                    differences.append("\(path) differs near byte \(offset)")
                    break
                }
            } else if index % 50 == 0,
                !System.sameBytes(source + "/" + path, destination + "/" + path, offset: 0, count: Int(a.st_size))
            {
                differences.append("\(path) differs")
            }
            if differences.count >= 3 { break }
        }
        return differences.isEmpty ? nil : differences.joined(separator: "; ")
    }
}

/// Where rsync is looked for when it is not in PATH.
let rsyncFallbacks = ["/usr/bin/rsync", "/usr/local/bin/rsync", "/bin/rsync"]

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

    /// Whether `count` bytes from `offset` are the same in both files (false if either is short).
    static func sameBytes(_ a: String, _ b: String, offset: Int, count: Int) -> Bool {
        func read(_ path: String) -> [UInt8]? {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var bytes = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return nil }
                done += n
            }
            return bytes
        }
        guard let x = read(a), let y = read(b) else { return false }
        return x == y
    }

    /// Resets the peak resident memory (VmHWM) of `pid` to its current resident memory
    /// (`/proc/PID/clear_refs`, value 5); false where not allowed.
    @discardableResult
    static func resetPeakMemory(_ pid: pid_t) -> Bool {
        writeFile("/proc/\(pid)/clear_refs", "5\n")
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
    let samples = settings.mirrorSamples
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
    let rsync = System.findProgram("rsync", fallbacks: rsyncFallbacks)
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
    func engineRun(_ name: String, expectCopied: Int?, check destination: String? = nil) -> Double? {
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
        if let destination, let difference = tree.checkCopy(source: source, destination: destination) {
            problems.append("job \(name)'s copy differs from the source: \(difference)")
        }
        return Double(elapsed)
    }
    var rsyncRSS = 0
    func rsyncRun(_ flags: [String], _ destination: String, check: Bool = false) -> Double? {
        guard let rsync else { return nil }
        let label = "rsync " + flags.joined(separator: " ")
        let run = System.timedRun(rsync, flags + [source + "/", destination + "/"], output: directory + "/rsync.log")
        guard run.status == 0 else {
            problems.append("\(label) exited with \(run.status): \(System.readFile(directory + "/rsync.log") ?? "")")
            return nil
        }
        rsyncRSS = max(rsyncRSS, run.maxRSSKB)
        print("    \(label): \(Unit.time.format(Double(run.nanos)))")
        if check, let difference = tree.checkCopy(source: source, destination: destination) {
            problems.append("\(label)'s copy differs from the source: \(difference)")
        }
        return Double(run.nanos)
    }

    var durable: [Double] = [], durableBase: [Double] = []
    var fast: [Double] = [], fastBase: [Double] = []
    var idle: [Double] = [], idleBase: [Double] = []
    // Peak memory per sample: the daemon's VmHWM, reset before the sample where allowed, and
    // the largest ru_maxrss of the sample's rsync runs.
    var peaks: [Double] = [], rsyncPeaks: [Double] = []
    let peakReset = System.resetPeakMemory(d.pid)
    if !peakReset { report.note("mirror: VmHWM could not be reset (/proc/PID/clear_refs): each peak covers the runs before it too") }
    func recordPeaks() {
        peaks.append(Double(System.statusField("/proc/\(d.pid)/status", "VmHWM") ?? 0) * 1024 / 1e6)
        if rsync != nil { rsyncPeaks.append(Double(rsyncRSS) * 1024 / 1e6) }
        print("    peak memory: weavedid VmHWM \(Unit.megabytes.format(peaks.last ?? 0))"
            + (rsync == nil ? "" : ", rsync ru_maxrss \(Unit.megabytes.format(rsyncPeaks.last ?? 0))"))
        rsyncRSS = 0
        System.resetPeakMemory(d.pid)
    }
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
                    if let t = engineRun(engineName, expectCopied: tree.files, check: engineDestination) {
                        if engineName == "durable" { durable.append(t) } else { fast.append(t) }
                    }
                },
                {
                    System.flushCaches()
                    if let t = rsyncRun(flags, rsyncDestination, check: true) {
                        if engineName == "durable" { durableBase.append(t) } else { fastBase.append(t) }
                    }
                },
            ]
            for body in sample % 2 == 0 ? pair : pair.reversed() { body() }
        }
        recordPeaks()
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
    // The nothing-to-do runs are not a sample of the peak (they copy nothing); said only if
    // they went clearly (10 %) above the first runs.
    let idlePeak = Double(System.statusField("/proc/\(d.pid)/status", "VmHWM") ?? 0) * 1024 / 1e6
    print("    weavedid VmHWM over the nothing-to-do runs: \(Unit.megabytes.format(idlePeak))")
    if idlePeak > (peaks.max() ?? 0) * 1.1 {
        report.note("mirror: the daemon's VmHWM over the nothing-to-do runs (\(Unit.megabytes.format(idlePeak))) exceeded every first-run sample")
    }
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
        stats: Stats(peaks),
        baselineName: rsync == nil ? nil : "rsync", baseline: rsync == nil ? nil : Stats(rsyncPeaks),
        target: .atMost(64),
        note: "one value per sample of first runs (durable and not, both into empty destinations): the daemon's VmHWM "
            + (peakReset ? "reset before each" : "(not reset: cumulative)")
            + "; baseline: the largest ru_maxrss of those rsync runs, which wait4 reports as the largest of the rsync "
            + "process and the processes it forked and waited for (not their sum)"))
}
