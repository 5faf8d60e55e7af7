import Synchronization
import TestSupport
import Testing
@testable import WeaveDI

/// The disposals of one instance.
final class DisposalCount: Sendable {
    let value = Atomic<Int>(0)
}

/// Counts its own disposals, in a count kept by `registry` for every instance built, so that
/// a test can check each was disposed exactly once. `Tag` makes distinct types of it.
final class DisposalCounter<Tag>: Disposable {
    let count = DisposalCount()
    init(_ registry: Locked<[DisposalCount]>) { registry.withLock { [count] in $0.append(count) } }
    func dispose() async { count.value.add(1, ordering: .relaxed) }
}

enum SingletonTag {}
enum SessionTag {}
enum RequestTag {}

/// Lock-free readers racing the operations that replace what they read: shapes for
/// `swift test --sanitize=thread` and `--sanitize=address` (a reader holding a freed entry or
/// cell is a report there), each with an invariant that holds without the sanitizers too.
@Suite struct ConcurrencyStressTests {
    @Test func singletons_releasedAndEvictedWhileOtherThreadsResolveThem_areAlwaysFound_andDisposedOnce() async throws {
        let built = Locked<[DisposalCount]>([])
        let container = WeaveDI.Container()
        typealias Counter = DisposalCounter<SingletonTag>
        container.register(Counter.self) { Counter(built) }
        container.register(Holder<Counter>.self, scope: .transient) { r in Holder(try r.require(Counter.self)) }
        let stop = Atomic<Bool>(false)
        let missed = Atomic<Int>(0)
        let reads = Atomic<Int>(0)
        let readers = (0..<4).map { _ in
            Thread {
                while !stop.load(ordering: .relaxed) {
                    if container.resolve(Counter.self) == nil { missed.add(1, ordering: .relaxed) }
                    if container.resolve(Holder<Counter>.self) == nil { missed.add(1, ordering: .relaxed) }
                    reads.add(1, ordering: .relaxed)
                }
            }
        }
        readers.forEach { $0.start() }
        // Each round waits for a few reads, so that every replacement has readers around it.
        for round in 0..<1_000 {
            let before = reads.load(ordering: .relaxed)
            try #require(await eventually { reads.load(ordering: .relaxed) >= before + 4 })
            if round.isMultiple(of: 3) { await container.releaseAll() } else { await container.evict(Counter.self) }
        }
        stop.store(true, ordering: .relaxed)
        readers.forEach { $0.join() }
        await container.releaseAll()
        #expect(missed.load(ordering: .relaxed) == 0)
        let counts = built.withLock { $0.map { $0.value.load(ordering: .relaxed) } }
        #expect(counts.count > 1)
        #expect(counts.allSatisfy { $0 == 1 }, "disposals per instance: \(counts.filter { $0 != 1 })")
    }

    @Test func sessionsAndRequests_closedWhileOtherThreadsResolveInThem_disposeEveryInstanceOnce() async throws {
        let built = Locked<[DisposalCount]>([])
        let container = WeaveDI.Container()
        container.register(DisposalCounter<SessionTag>.self, scope: .session) { DisposalCounter(built) }
        container.register(DisposalCounter<RequestTag>.self, scope: .request) { DisposalCounter(built) }
        container.register(SessionCache.self, scope: .request) { SessionCache() }
        for round in 0..<40 {
            let session = container.openSession(id: "s\(round)")
            let requests = (0..<4).map { session.openRequest(id: "r\($0)") }
            let resolved = Atomic<Int>(0)
            let threads = (0..<4).map { i in
                Thread {
                    for _ in 0..<30 {
                        _ = try? session.require(DisposalCounter<SessionTag>.self)
                        _ = try? requests[i].require(DisposalCounter<RequestTag>.self)
                        _ = try? requests[i].require(DisposalCounter<SessionTag>.self)
                        // `require`, not `resolve`: once the session closes, every `resolve`
                        // would log an error line.
                        _ = try? session.withCurrent { try container.require(DisposalCounter<SessionTag>.self) }
                        let late = session.openRequest(id: "late")
                        _ = try? late.require(SessionCache.self)
                        late.closeWithoutWaiting()
                        resolved.add(1, ordering: .relaxed)
                    }
                }
            }
            threads.forEach { $0.start() }
            // The closes wait for a few resolutions in the scopes, so that they race the others.
            try #require(await eventually { resolved.load(ordering: .relaxed) >= 4 })
            if round.isMultiple(of: 2) { await requests[0].close() } else { requests[1].closeWithoutWaiting() }
            if round.isMultiple(of: 2) { await session.close() } else { session.closeWithoutWaiting() }
            threads.forEach { $0.join() }
        }
        // Closing without waiting, and an instance stored into a scope closed meanwhile, dispose
        // in tasks of their own.
        func undisposed() -> [Int] { built.withLock { $0.map { $0.value.load(ordering: .relaxed) } }.filter { $0 != 1 } }
        // Up to 6,000 polls (30 s at least), as many as the tasks may need on a busy machine;
        // polls, not a time, as the tasks and the polls wait alike for a thread of the pool.
        for _ in 0..<6_000 where !undisposed().isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        #expect(built.withLock { $0.count } > 0)
        #expect(undisposed().isEmpty, "disposals per instance not disposed once: \(undisposed())")
        #expect(container.openSessions.isEmpty)
    }
}
