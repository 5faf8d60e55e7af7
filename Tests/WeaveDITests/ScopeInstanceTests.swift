import Synchronization
import Testing
@testable import WeaveDI

/// What a session or request keeps: many instances, disposal decided by each instance's own type,
/// concurrent first resolves, activity, and a scope closed while it builds.
@Suite struct ScopeInstanceTests {
    @Test func existentialRegistration_disposesByEachInstancesOwnType() async throws {
        let ledger = Ledger()
        let container = WeaveDI.Container()
        let builds = Atomic<Int>(0)
        // Plain, then disposable, alternately: whether one is disposable says nothing of the next.
        container.register((any Part).self, scope: .session) {
            let n = builds.add(1, ordering: .relaxed).newValue
            return n.isMultiple(of: 2) ? TidyPart("part \(n)", ledger) : PlainPart()
        }
        for i in 1...4 {
            let session = container.openSession(id: "s\(i)")
            _ = try session.require((any Part).self)
            await session.close()
        }
        #expect(ledger.disposals == ["part 2", "part 4"])
    }

    @Test func classRegistration_disposesASubclassThatIsDisposable() async throws {
        let ledger = Ledger()
        let container = WeaveDI.Container()
        let builds = Atomic<Int>(0)
        container.register(BasePart.self, scope: .session) {
            let n = builds.add(1, ordering: .relaxed).newValue
            return n.isMultiple(of: 2) ? TidySubpart("sub \(n)", ledger) : BasePart()
        }
        for i in 1...4 {
            let session = container.openSession(id: "s\(i)")
            _ = try session.require(BasePart.self)
            await session.close()
        }
        #expect(ledger.disposals == ["sub 2", "sub 4"])
    }

    @Test func manyInstancesInOneSession_eachKeptOnce_disposedNewestFirst() async throws {
        let ledger = Ledger()
        let container = WeaveDI.Container()
        var requires: [(Session) throws -> AnyObject] = []
        registerLevels(Leaf.self, depth: 0, count: 40, in: container, ledger: ledger, requires: &requires)
        let session = container.openSession(id: "many")
        let first = try requires.map { try $0(session) }
        #expect(session.instanceCount == 40)
        // Again, in another order: the same instances.
        for i in (0..<40).reversed() { #expect(try requires[i](session) === first[i]) }
        for i in stride(from: 1, to: 40, by: 3) { #expect(try requires[i](session) === first[i]) }
        #expect(ledger.buildCount == 40)
        await session.close()
        #expect(ledger.disposals == (0..<40).reversed().map { "level \($0)" })
        #expect(session.instanceCount == 0)
    }

    /// An instance made fresh (`makeFresh`, what `@Factory` reads) is its caller's, whatever its
    /// registration's scope, as a transient is: neither the session it was built in nor
    /// `releaseAll()` disposes it (nor keeps it); the session's own instance and the built
    /// singleton are disposed as ever.
    @Test func freshInstances_areTheCallers_noScopeDisposesThem() async throws {
        let ledger = Ledger()
        let container = WeaveDI.Container()
        let builds = Atomic<Int>(0)
        container.register((any Part).self, scope: .session) {
            TidyPart("session's \(builds.add(1, ordering: .relaxed).newValue)", ledger)
        }
        container.register(Tracked.self) { Tracked("singleton \(builds.add(1, ordering: .relaxed).newValue)", ledger) }
        let session = container.openSession(id: "fresh")
        _ = try session.require((any Part).self)  // the session's: 1
        let freshPart = try session.withCurrent { try container.makeFresh((any Part).self) }  // 2
        #expect(session.instanceCount == 1)
        _ = try container.require(Tracked.self)  // the singleton: 3
        let freshTracked = try container.makeFresh(Tracked.self)  // 4
        await session.close()
        await container.releaseAll()
        #expect(ledger.disposals == ["session's 1", "singleton 3"])
        // The caller disposes what it made fresh, when it is done with it.
        await (freshPart as! any Disposable).dispose()
        await freshTracked.dispose()
        #expect(ledger.disposals == ["session's 1", "singleton 3", "session's 2", "singleton 4"])
    }

    @Test func concurrentFirstResolves_buildOneInstancePerSession() {
        let ledger = Ledger()
        let container = WeaveDI.Container()
        container.register(Tracked.self, scope: .session) { Tracked("t", ledger) }
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        for round in 0..<20 {
            let session = container.openSession(id: "r\(round)")
            let seen = Locked<[ObjectIdentifier]>([])
            onThreads(4) { i in
                let object: AnyObject =
                    i.isMultiple(of: 2)
                    ? try! session.require(Tracked.self) : try! session.require(SessionCache.self)
                seen.withLock { $0.append(ObjectIdentifier(object)) }
            }
            #expect(Set(seen.withLock { $0 }).count == 2)
            #expect(session.instanceCount == 2)
        }
        #expect(ledger.buildCount == 20)
    }

    @Test func lastActiveAt_followsResolvesAndRequests_notAfterClose() async throws {
        let container = WeaveDI.Container()
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        let session = container.openSession(id: "s")
        #expect(session.lastActiveAt == session.openedAt)
        try await Task.sleep(for: .milliseconds(2))
        _ = try session.require(SessionCache.self)
        let resolved = session.lastActiveAt
        #expect(resolved > session.openedAt)
        try await Task.sleep(for: .milliseconds(2))
        let request = session.openRequest(id: "r")
        #expect(session.lastActiveAt > resolved)
        #expect(session.openRequests.map(\.id) == ["r"])
        let opened = session.lastActiveAt
        await session.close()
        #expect(request.isClosed)
        #expect(session.openRequests.isEmpty)
        try await Task.sleep(for: .milliseconds(2))
        #expect(throws: ResolutionError.self) { try session.require(SessionCache.self) }
        #expect(session.openRequest(id: "late").isClosed)
        #expect(session.lastActiveAt == opened)
    }

    @Test func requestClosedWhileItsInstanceIsBuilt_disposesItAndThrows() async throws {
        let ledger = Ledger()
        let container = WeaveDI.Container()
        let current = Locked<Request?>(nil)
        container.register(Tracked.self, scope: .request) {
            current.withLock { $0 }?.closeWithoutWaiting()
            return Tracked("late", ledger)
        }
        let request = container.openSession(id: "s").openRequest(id: "r")
        current.withLock { $0 = request }
        #expect {
            try request.require(Tracked.self)
        } throws: { error in
            guard case let .scopeClosed(type, scope, id, _, _) = error as? ResolutionError else { return false }
            return type == "Tracked" && scope == .request && id == "r"
        }
        // Up to 6,000 polls (30 s at least): the task and the polls wait alike for a thread.
        for _ in 0..<6_000 where ledger.disposals.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        #expect(ledger.disposals == ["late"])
        #expect(request.session.openRequests.isEmpty)
    }
}

protocol Part: Sendable {}
final class PlainPart: Part {}
final class TidyPart: Part, Disposable {
    let name: String
    let ledger: Ledger
    init(_ name: String, _ ledger: Ledger) {
        self.name = name
        self.ledger = ledger
    }
    func dispose() async { ledger.disposed(name) }
}

class BasePart: @unchecked Sendable {}
final class TidySubpart: BasePart, Disposable, @unchecked Sendable {
    let name: String
    let ledger: Ledger
    init(_ name: String, _ ledger: Ledger) {
        self.name = name
        self.ledger = ledger
    }
    func dispose() async { ledger.disposed(name) }
}

enum Leaf {}

/// A distinct type per depth (`Level<Leaf>`, `Level<Level<Leaf>>`, …).
final class Level<Inner>: Disposable {
    let depth: Int
    let ledger: Ledger
    init(_ depth: Int, _ ledger: Ledger) {
        self.depth = depth
        self.ledger = ledger
        ledger.built()
    }
    func dispose() async { ledger.disposed("level \(depth)") }
}

/// Registers `count` session-scoped `Level` types from `depth` on, and a way to require each.
func registerLevels<T>(
    _: T.Type, depth: Int, count: Int, in container: WeaveDI.Container, ledger: Ledger,
    requires: inout [(Session) throws -> AnyObject]
) {
    guard count > 0 else { return }
    container.register(Level<T>.self, scope: .session) { Level<T>(depth, ledger) }
    requires.append { try $0.require(Level<T>.self) }
    registerLevels(Level<T>.self, depth: depth + 1, count: count - 1, in: container, ledger: ledger, requires: &requires)
}
