/// Whether `condition` holds within a bounded wait: it ends as soon as it does, and a
/// condition that never holds fails the test instead of hanging the run. Checked after each
/// `Task.yield()` for 1,000 tries (what a task already going needs), then every 10 ms for
/// 3,000 polls (30 s at least). Polls, not a time: while the blocking tests running beside
/// this one hold every thread of the pool (two, on two cores), the tasks awaited wait, and so
/// do the polls.
public func eventually(_ condition: () async -> Bool) async -> Bool {
    for _ in 0..<1_000 {
        if await condition() { return true }
        await Task.yield()
    }
    for _ in 0..<3_000 {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}
