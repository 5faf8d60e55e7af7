#if canImport(Glibc)
import Glibc
#endif

// The control socket under load: `Ping` and `GetHealth` with 1 and 50 concurrent clients,
// against Redis answering PING over a Unix socket with the same client code in the same run.
// A client is a thread with its own connection doing blocking request/response for a fixed
// time; the only difference between the daemon and Redis is the bytes sent and the byte that
// ends a reply (NUL for varlink, LF for RESP).

/// What one load run sends and how a reply ends.
struct Protocol: Sendable {
    var name: String
    var path: String
    var request: [UInt8]
    var terminator: UInt8
    /// A complete reply must contain this (checked on every client's first reply).
    var expect: String
}

/// One client's results, touched only by its thread until it is joined.
final class ClientRecord: @unchecked Sendable {
    var latencies: [UInt64] = []
    var errors = 0
    var firstReply = ""
    var start: UInt64 = 0
    var end: UInt64 = 0

    init() { latencies.reserveCapacity(200_000) }
}

struct LoadResult {
    var completed: Int
    var errors: Int
    var seconds: Double
    var latencies: Stats
    var problem: String?

    var throughput: Double { Double(completed) / seconds }
}

/// Runs `clients` blocking clients against `proto` for `seconds`.
func runLoad(_ proto: Protocol, clients: Int, seconds: Double) -> LoadResult {
    var descriptors: [Int32] = []
    for _ in 0..<clients {
        var fd: Int32 = -1
        for _ in 0..<50 {
            fd = System.connectStream(proto.path)
            if fd >= 0 { break }
            System.sleep(seconds: 0.02)
        }
        guard fd >= 0 else {
            for d in descriptors { close(d) }
            return LoadResult(completed: 0, errors: 1, seconds: 1, latencies: Stats([]), problem: "cannot connect to \(proto.path)")
        }
        descriptors.append(fd)
    }
    let records = (0..<clients).map { _ in ClientRecord() }
    let line = StartLine(parties: clients)
    let request = proto.request, terminator = proto.terminator
    let threads = (0..<clients).map { index in
        let fd = descriptors[index], record = records[index]
        return System.startThread {
            let capacity = 1 << 16
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            defer { buffer.deallocate() }
            line.arrive()
            record.start = System.now()
            let deadline = record.start + UInt64(seconds * 1e9)
            var first = true
            loop: while true {
                let sent = System.now()
                if sent >= deadline { break }
                let ok = request.withUnsafeBytes { System.sendAll(fd, $0) }
                if !ok {
                    record.errors += 1
                    break
                }
                var received = 0
                while true {
                    if received == capacity { received = 0 }  // only the last byte matters
                    let n = recv(fd, buffer + received, capacity - received, 0)
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 {
                        record.errors += 1
                        break loop
                    }
                    if first {
                        record.firstReply += String(decoding: UnsafeRawBufferPointer(start: buffer + received, count: n), as: UTF8.self)
                    }
                    received += n
                    if buffer.load(fromByteOffset: received - 1, as: UInt8.self) == terminator { break }
                }
                record.latencies.append(System.now() - sent)
                first = false
            }
            record.end = System.now()
        }
    }
    for thread in threads { System.join(thread) }
    for fd in descriptors { close(fd) }
    let start = records.map(\.start).min() ?? 0, end = records.map(\.end).max() ?? 0
    var all: [Double] = []
    all.reserveCapacity(records.reduce(0) { $0 + $1.latencies.count })
    for record in records { for l in record.latencies { all.append(Double(l)) } }
    let errors = records.reduce(0) { $0 + $1.errors }
    var problem: String?
    if let bad = records.first(where: { !$0.firstReply.contains(proto.expect) }) {
        problem = "unexpected reply from \(proto.name): \(bad.firstReply.prefix(200))"
    }
    return LoadResult(
        completed: all.count, errors: errors, seconds: Double(end - start) / 1e9, latencies: Stats(all), problem: problem)
}

/// A redis-server of our own on a Unix socket, if the program is installed.
final class RedisServer {
    /// Where redis-server is looked for when it is not in PATH.
    static let fallbacks = ["/usr/bin/redis-server", "/usr/local/bin/redis-server", "/usr/sbin/redis-server"]

    let binary: String
    let pid: pid_t
    let socket: String

    init?(directory: String) {
        guard let binary = System.findProgram("redis-server", fallbacks: RedisServer.fallbacks) else { return nil }
        self.binary = binary
        socket = directory + "/redis.sock"
        guard let pid = System.spawn(binary, [
            "--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--dir", directory,
        ], environment: ["PATH=/usr/bin:/bin"], output: directory + "/redis.log") else { return nil }
        self.pid = pid
        let deadline = System.now() + 10_000_000_000
        while System.now() < deadline {
            let fd = System.connectStream(socket)
            if fd >= 0 {
                close(fd)
                return
            }
            System.sleep(seconds: 0.01)
        }
        System.stop(pid)
        return nil
    }

    func stop() { System.stop(pid) }
}

func benchControl(_ settings: Settings, _ report: Report, daemon: String) {
    let directory = System.makeTemporaryDirectory("weavedi-bench")
    defer { System.removeTree(directory) }
    let config = writeDaemonConfiguration(directory)
    guard let d = NotifiedProcess(daemon, ["--config", config], environment: daemonEnvironment(directory), directory: directory, label: "weavedid"),
        d.waitReady() != nil
    else {
        print("  weavedid did not start (log: \(System.readFile(directory + "/weavedid.log") ?? ""))")
        return
    }
    defer { d.stop() }
    let socket = directory + "/run/control.sock"
    let redis = RedisServer(directory: directory)
    defer { redis?.stop() }
    print("control: \(socket)" + (redis.map { ", \($0.binary) on \($0.socket)" } ?? ""))
    if redis == nil {
        report.note("redis-server is not installed: the Redis baseline is skipped (install it with `apt-get install redis-server`)")
    }

    let ping = Protocol(
        name: "Ping", path: socket, request: Array(#"{"method":"io.weavedi.Daemon.Ping"}"#.utf8) + [0], terminator: 0,
        expect: #""version""#)
    let health = Protocol(
        name: "GetHealth", path: socket, request: Array(#"{"method":"io.weavedi.Daemon.GetHealth"}"#.utf8) + [0],
        terminator: 0, expect: #""health""#)
    let redisPing = redis.map {
        Protocol(name: "Redis PING", path: $0.socket, request: Array("*1\r\n$4\r\nPING\r\n".utf8), terminator: 10, expect: "+PONG")
    }

    let levels = [1, 50]
    var plans: [(key: String, proto: Protocol, clients: Int)] = []
    for clients in levels {
        plans.append(("ping/\(clients)", ping, clients))
        if let redisPing { plans.append(("redis/\(clients)", redisPing, clients)) }
        plans.append(("health/\(clients)", health, clients))
    }
    var throughput: [String: [Double]] = [:], p50: [String: [Double]] = [:], p99: [String: [Double]] = [:]
    var errors: [String: Int] = [:]
    for plan in plans {  // warm-up
        let result = runLoad(plan.proto, clients: plan.clients, seconds: min(0.3, settings.controlSeconds))
        if let problem = result.problem {
            print("  \(problem)")
            return
        }
        System.sleep(seconds: 0.1)  // let the server see the closed connections before the next batch
    }
    // Each round runs every case once, 1 client then 50; within a client count the order turns
    // by one place each round (Ping, Redis, GetHealth; Redis, GetHealth, Ping; …), so that no
    // case always runs first, right after the previous batch's connections closed.
    func rotated(_ round: Int) -> [(key: String, proto: Protocol, clients: Int)] {
        levels.flatMap { clients in
            let block = plans.filter { $0.clients == clients }
            let shift = round % block.count
            return Array(block[shift...] + block[..<shift])
        }
    }
    for round in 0..<settings.controlRounds {
        let order = rotated(round)
        print("  round \(round + 1) of \(settings.controlRounds): " + order.map(\.key).joined(separator: ", "))
        for plan in order {
            let result = runLoad(plan.proto, clients: plan.clients, seconds: settings.controlSeconds)
            throughput[plan.key, default: []].append(result.throughput)
            p50[plan.key, default: []].append(result.latencies.percentile(50))
            p99[plan.key, default: []].append(result.latencies.percentile(99))
            errors[plan.key, default: 0] += result.errors
            System.sleep(seconds: 0.1)
        }
    }
    for (key, count) in errors where count > 0 {
        report.note("\(key): \(count) client(s) saw a broken connection")
    }

    let noRedis = redis == nil ? "redis-server not installed" : nil
    for clients in levels {
        let redisKey = "redis/\(clients)"
        let redisThroughput = throughput[redisKey].map(Stats.init)
        let redisP99 = p99[redisKey].map(Stats.init)
        let latencyTarget = 1_000_000.0  // p99 < 1 ms, for every control-socket call
        for (key, name) in [("ping", "Ping"), ("health", "GetHealth")] {
            let k = "\(key)/\(clients)"
            let label = "\(name), \(clients) client\(clients == 1 ? "" : "s")"
            let ratioTarget: Target = key == "ping" && clients == 50 ? .ratioAtLeast(1.0) : .none
            report.add(Figure(
                group: "control", name: "\(label): throughput", unit: .rate, stats: Stats(throughput[k] ?? []),
                baselineName: redisThroughput == nil ? nil : "Redis PING", baseline: redisThroughput, target: ratioTarget,
                note: "requests per second, all clients together",
                skipReason: ratioTarget.isNone ? nil : noRedis))
            let latencies = Stats(p50[k] ?? [])
            var latency = Figure(
                group: "control", name: "\(label): p99 latency", unit: .time, stats: Stats(p99[k] ?? []),
                spread: "p50 \(Unit.time.format(latencies.median)); p99 \(Stats(p99[k] ?? []).spreadRange)",
                baselineName: redisP99 == nil ? nil : "Redis PING", baseline: redisP99, target: .below(latencyTarget),
                note: "per round; the table shows the median round")
            latency.percentiles = [("p50", latencies), ("p99", Stats(p99[k] ?? []))]
            if let redisP50 = p50[redisKey].map(Stats.init), let redisP99 {
                latency.percentiles += [("baseline p50", redisP50), ("baseline p99", redisP99)]
            }
            report.add(latency)
        }
    }
}

extension Target {
    var isNone: Bool {
        if case .none = self { return true }
        return false
    }
}

extension Stats {
    var spreadRange: String { "\(Unit.time.format(min)) – \(Unit.time.format(max))" }
}
