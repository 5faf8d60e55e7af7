/// Where measured results go so that the optimizer cannot drop the work that made them: a
/// function it may neither inline nor optimize, and so cannot see that it ignores its argument.
/// (Checked in the disassembly: loops around it still allocate, retain and call what they
/// measure.) A call costs about a nanosecond; `harness: loop + sink` shows it.
@inline(never) @_optimize(none)
func blackHole<T>(_ value: T) {}

/// Returns its argument through a function the optimizer cannot see into, so that a value
/// built once outside a loop is not known (and folded) inside it.
@inline(never) @_optimize(none)
func opaque<T>(_ value: T) -> T { value }

/// How long and how often to measure.
struct Settings: Sendable {
    var quick: Bool
    /// Samples per figure (each figure and its baseline alternate, sample by sample).
    var samples: Int
    /// The wall time one sample of a fast figure aims at, in nanoseconds.
    var sampleNanos: UInt64
    /// Samples of the slow, one-shot figures (bootstrap, validation, daemon start).
    var slowSamples: Int
    /// Seconds of each control-socket load run, and how many rounds.
    var controlSeconds: Double
    var controlRounds: Int
    /// Seconds the daemon is left idle before its memory and wakeups are read, and the window
    /// wakeups are counted over. Idle is the state it stays in: libdispatch ends a worker
    /// thread idle for 5 s, so the full run settles past that (the workers the start used
    /// would otherwise end inside the window, and their hand-offs count as wakeups).
    var idleSettle: Double
    var idleWindow: Double
    /// Daemon starts the idle figures are sampled over (one sample per start).
    var idleSamples: Int
    /// Samples of the mirror's first runs (each a durable and a non-durable run of both sides).
    var mirrorSamples: Int

    static let full = Settings(
        quick: false, samples: 15, sampleNanos: 30_000_000, slowSamples: 15, controlSeconds: 1.5, controlRounds: 5,
        idleSettle: 8, idleWindow: 5, idleSamples: 5, mirrorSamples: 3)
    static let quick = Settings(
        quick: true, samples: 5, sampleNanos: 8_000_000, slowSamples: 5, controlSeconds: 0.4, controlRounds: 2,
        idleSettle: 1, idleWindow: 2, idleSamples: 3, mirrorSamples: 3)
}

/// The distribution of one figure's samples.
struct Stats: Sendable {
    var values: [Double]

    init(_ values: [Double]) { self.values = values.sorted() }

    var median: Double {
        guard !values.isEmpty else { return .nan }
        let mid = values.count / 2
        return values.count % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2
    }

    var min: Double { values.first ?? .nan }
    var max: Double { values.last ?? .nan }

    /// The `p`-th percentile (0...100), nearest rank.
    func percentile(_ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(values.count)).rounded(.up))
        return values[Swift.min(Swift.max(rank, 1), values.count) - 1]
    }
}

/// Times `body(n)` (n iterations) and returns nanoseconds.
@inline(__always)
func time(_ n: Int, _ body: (Int) -> Void) -> UInt64 {
    let start = System.now()
    body(n)
    return System.now() - start
}

/// The iteration count that makes one sample of `body` take about `target` nanoseconds.
func calibrate(_ body: (Int) -> Void, target: UInt64) -> Int {
    var n = 1
    while true {
        let elapsed = time(n, body)
        if elapsed >= target / 10 || n >= 1 << 40 {
            let scaled = Double(n) * Double(target) / Double(Swift.max(elapsed, 1))
            return Swift.max(1, Int(scaled))
        }
        n *= elapsed < target / 1000 ? 16 : 4
    }
}

/// Measures a figure and its baseline in the same run: both calibrated, warmed up, then sampled
/// alternately (figure, baseline, figure, …) so that load from other processes hits both alike.
/// Values are nanoseconds per iteration.
func measurePair(_ settings: Settings, figure: (Int) -> Void, baseline: (Int) -> Void) -> (figure: Stats, baseline: Stats) {
    let nFigure = calibrate(figure, target: settings.sampleNanos)
    let nBaseline = calibrate(baseline, target: settings.sampleNanos)
    _ = time(nFigure, figure)
    _ = time(nBaseline, baseline)
    var f: [Double] = [], b: [Double] = []
    for _ in 0..<settings.samples {
        f.append(Double(time(nFigure, figure)) / Double(nFigure))
        b.append(Double(time(nBaseline, baseline)) / Double(nBaseline))
    }
    return (Stats(f), Stats(b))
}

/// Times `body(n)` for an async body.
func timeAsync(_ n: Int, isolation: isolated (any Actor)? = #isolation, _ body: (Int) async -> Void) async -> UInt64 {
    let start = System.now()
    await body(n)
    return System.now() - start
}

/// `measurePair` for async bodies.
func measurePairAsync(
    _ settings: Settings, isolation: isolated (any Actor)? = #isolation,
    figure: (Int) async -> Void, baseline: (Int) async -> Void
) async -> (figure: Stats, baseline: Stats) {
    func calibrateAsync(_ body: (Int) async -> Void) async -> Int {
        var n = 1
        while true {
            let elapsed = await timeAsync(n, body)
            if elapsed >= settings.sampleNanos / 10 || n >= 1 << 40 {
                return Swift.max(1, Int(Double(n) * Double(settings.sampleNanos) / Double(Swift.max(elapsed, 1))))
            }
            n *= elapsed < settings.sampleNanos / 1000 ? 16 : 4
        }
    }
    let nFigure = await calibrateAsync(figure)
    let nBaseline = await calibrateAsync(baseline)
    _ = await timeAsync(nFigure, figure)
    _ = await timeAsync(nBaseline, baseline)
    var f: [Double] = [], b: [Double] = []
    for _ in 0..<settings.samples {
        f.append(Double(await timeAsync(nFigure, figure)) / Double(nFigure))
        b.append(Double(await timeAsync(nBaseline, baseline)) / Double(nBaseline))
    }
    return (Stats(f), Stats(b))
}
