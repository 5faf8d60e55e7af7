import Dispatch
import Glibc
import Synchronization
import Testing
@testable import WeaveDI

/// Builds of shared instances on several threads at once: each instance has its own gate, so
/// builds of different instances never wait for each other, and two builds that would wait for
/// each other get a cycle error instead of hanging.
@Suite struct BuildGateTests {
    /// Runs `bodies` on threads of their own; false if they have not all returned within
    /// `seconds` (they are then left running: the test has failed).
    func finishTogether(within seconds: Int = 60, _ bodies: [@Sendable () -> Void]) -> Bool {
        let finished = DispatchSemaphore(value: 0)
        for body in bodies {
            Thread.detach {
                body()
                finished.signal()
            }
        }
        return bodies.allSatisfy { _ in finished.wait(timeout: .now() + .seconds(seconds)) == .success }
    }

    @Test func aKeyDefaultThatResolves_andASingletonThatReadsAKey_onTwoThreads_bothFinish() {
        // Thread 1 computes LockOrderKey1's default, which resolves LockOrderLeaf; thread 2
        // builds LockOrderRoot, whose initializer reads LockOrderKey2. Each is inside its own
        // build when it asks for the other's kind of build.
        LockOrder.container.register(LockOrderRoot.self) { LockOrderRoot() }
        LockOrder.container.register(LockOrderLeaf.self) { LockOrderLeaf() }
        let results = Locked<(key: Int?, root: LockOrderRoot?)>((nil, nil))
        let done = finishTogether([
            { let value = InjectedValues.current[LockOrderKey1.self]; results.withLock { $0.key = value } },
            { let root = LockOrder.container.resolve(LockOrderRoot.self); results.withLock { $0.root = root } },
        ])
        #expect(done, "the two builds waited for each other")
        #expect(results.withLock { $0.key } == 1)
        #expect(results.withLock { $0.root?.key } == 2)
        #expect(LockOrder.barrier.met, "the builds did not run at the same time")
    }

    @Test func aSingletonFactoryThatWaitsForAnotherThread_resolvingAnotherSingleton_finishes() {
        let container = WeaveDI.Container()
        container.register(WaitingLeaf.self) { WaitingLeaf() }
        container.register(WaitingRoot.self) { WaitingRoot(container) }
        let root = Locked<WaitingRoot?>(nil)
        #expect(finishTogether([{ let built = container.resolve(WaitingRoot.self); root.withLock { $0 = built } }]))
        #expect(root.withLock { $0?.leafFromOtherThread } == true, "the other thread could not build its singleton")
    }

    @Test func twoSingletonsThatNeedEachOther_builtOnTwoThreadsAtOnce_bothFailWithTheCycle() throws {
        let container = WeaveDI.Container()
        let barrier = FirstCallsBarrier()
        container.register(CrossA.self) { r in
            barrier.arrive(0)
            return CrossA(try r.require(CrossB.self))
        }
        container.register(CrossB.self) { r in
            barrier.arrive(1)
            return CrossB(try r.require(CrossA.self))
        }
        let errors = Locked<[ResolutionError?]>([nil, nil])
        let done = finishTogether([
            { do throws(ResolutionError) { _ = try container.require(CrossA.self) } catch { errors.withLock { $0[0] = error } } },
            { do throws(ResolutionError) { _ = try container.require(CrossB.self) } catch { errors.withLock { $0[1] = error } } },
        ])
        #expect(done, "the builds waited for each other for good")
        #expect(barrier.met, "the two builds did not run at the same time")
        for (index, error) in errors.withLock({ $0 }).enumerated() {
            guard case let .cycle(path) = error else {
                Issue.record("thread \(index + 1): \(String(describing: error)), not a cycle")
                continue
            }
            #expect(Set(path) == ["CrossA", "CrossB"] && path.first == path.last && path.count == 3, "\(path)")
        }
    }

    /// Runs `bodies` on threads of their own, each a resolution, and returns the path of the
    /// cycle each one got (nil: another error, or none).
    func cyclePaths(_ bodies: [@Sendable () throws(ResolutionError) -> Void]) -> [[String]?] {
        let errors = Locked<[ResolutionError?]>(Array(repeating: nil, count: bodies.count))
        let done = finishTogether(bodies.enumerated().map { index, body in
            { do throws(ResolutionError) { try body() } catch { errors.withLock { $0[index] = error } } }
        })
        #expect(done, "the builds waited for each other for good")
        return errors.withLock { $0 }.enumerated().map { index, error in
            guard case let .cycle(path) = error else {
                Issue.record("thread \(index + 1): \(String(describing: error)), not a cycle")
                return nil
            }
            return path
        }
    }

    @Test func aCycleThroughTransients_closedAcrossTwoThreads_isReportedOnEachThreadWithItsRealPath() {
        // Thread 1 builds PathCA and, through the transient PathX1, needs PathCB; thread 2 builds
        // PathCB and, through PathY1, needs PathCA. Both singletons are under way before either
        // asks for the other: the second to ask closes the cycle across the threads, the first
        // then builds the other singleton itself and closes it on its own thread. Each path is
        // the factories' real requests, from the singleton the thread was asked for.
        let container = WeaveDI.Container()
        let meeting = FirstCallsMeeting(parties: 2)
        container.register(PathCA.self) { r in
            meeting.arrive(0)
            _ = try r.require(PathX1.self)
            return PathCA()
        }
        container.register(PathX1.self, scope: .transient) { r in _ = try r.require(PathCB.self); return PathX1() }
        container.register(PathCB.self) { r in
            meeting.arrive(1)
            _ = try r.require(PathY1.self)
            return PathCB()
        }
        container.register(PathY1.self, scope: .transient) { r in _ = try r.require(PathCA.self); return PathY1() }
        let paths = cyclePaths([
            { () throws(ResolutionError) in _ = try container.require(PathCA.self) },
            { () throws(ResolutionError) in _ = try container.require(PathCB.self) },
        ])
        #expect(meeting.met, "the two builds did not run at the same time")
        #expect(paths[0] == ["PathCA", "PathX1", "PathCB", "PathY1", "PathCA"], "thread 1: \(String(describing: paths[0]))")
        #expect(paths[1] == ["PathCB", "PathY1", "PathCA", "PathX1", "PathCB"], "thread 2: \(String(describing: paths[1]))")
    }

    @Test func aCycleOfThreeSingletons_closedAcrossThreeThreads_isReportedOnEachThreadWithItsRealPath() {
        // PathL1 -> PathL2 -> PathL3 -> PathL1, each built on a thread of its own at once: every
        // thread's path follows the real requests, from the singleton it was asked for.
        let container = WeaveDI.Container()
        let meeting = FirstCallsMeeting(parties: 3)
        container.register(PathL1.self) { r in meeting.arrive(0); _ = try r.require(PathL2.self); return PathL1() }
        container.register(PathL2.self) { r in meeting.arrive(1); _ = try r.require(PathL3.self); return PathL2() }
        container.register(PathL3.self) { r in meeting.arrive(2); _ = try r.require(PathL1.self); return PathL3() }
        let paths = cyclePaths([
            { () throws(ResolutionError) in _ = try container.require(PathL1.self) },
            { () throws(ResolutionError) in _ = try container.require(PathL2.self) },
            { () throws(ResolutionError) in _ = try container.require(PathL3.self) },
        ])
        #expect(meeting.met, "the three builds did not run at the same time")
        #expect(paths[0] == ["PathL1", "PathL2", "PathL3", "PathL1"], "thread 1: \(String(describing: paths[0]))")
        #expect(paths[1] == ["PathL2", "PathL3", "PathL1", "PathL2"], "thread 2: \(String(describing: paths[1]))")
        #expect(paths[2] == ["PathL3", "PathL1", "PathL2", "PathL3"], "thread 3: \(String(describing: paths[2]))")
    }

    @Test func aCycleThroughOneTypeInTwoContainers_closedAcrossTwoThreads_namesBothBuildsOfTheType() {
        // Thread 1 builds first's PathTwice, whose factory needs second's PathTwice, whose
        // factory needs PathP (second's); thread 2 builds PathP, whose factory needs first's
        // PathTwice. Both builds of PathTwice are open on thread 1: the path goes from the one
        // that holds the gate thread 2 waits for, through the other.
        let first = WeaveDI.Container(), second = WeaveDI.Container()
        let meeting = FirstCallsMeeting(parties: 2)
        first.register(PathTwice.self) { _ in _ = try second.require(PathTwice.self); return PathTwice() }
        second.register(PathTwice.self) { r in
            meeting.arrive(0)
            _ = try r.require(PathP.self)
            return PathTwice()
        }
        second.register(PathP.self) { _ in
            meeting.arrive(1)
            _ = try first.require(PathTwice.self)
            return PathP()
        }
        let paths = cyclePaths([
            { () throws(ResolutionError) in _ = try first.require(PathTwice.self) },
            { () throws(ResolutionError) in _ = try second.require(PathP.self) },
        ])
        #expect(meeting.met, "the two builds did not run at the same time")
        #expect(paths[0] == ["PathTwice", "PathTwice", "PathP", "PathTwice"], "thread 1: \(String(describing: paths[0]))")
        #expect(paths[1] == ["PathP", "PathTwice", "PathTwice", "PathP"], "thread 2: \(String(describing: paths[1]))")
    }

    @Test func aCycleOfSessionInstancesThroughTransients_closedAcrossTwoThreads_isReportedWithItsRealPath() async {
        // As the singletons' case, with a session's instances: their gates are the session's.
        let container = WeaveDI.Container()
        let meeting = FirstCallsMeeting(parties: 2)
        container.register(PathSessionA.self, scope: .session) { r in
            meeting.arrive(0)
            _ = try r.require(PathX1.self)
            return PathSessionA()
        }
        container.register(PathX1.self, scope: .transient) { r in _ = try r.require(PathSessionB.self); return PathX1() }
        container.register(PathSessionB.self, scope: .session) { r in
            meeting.arrive(1)
            _ = try r.require(PathY1.self)
            return PathSessionB()
        }
        container.register(PathY1.self, scope: .transient) { r in _ = try r.require(PathSessionA.self); return PathY1() }
        let session = container.openSession(id: "paths")
        let paths = cyclePaths([
            { () throws(ResolutionError) in _ = try session.require(PathSessionA.self) },
            { () throws(ResolutionError) in _ = try session.require(PathSessionB.self) },
        ])
        #expect(meeting.met, "the two builds did not run at the same time")
        #expect(paths[0] == ["PathSessionA", "PathX1", "PathSessionB", "PathY1", "PathSessionA"],
                "thread 1: \(String(describing: paths[0]))")
        #expect(paths[1] == ["PathSessionB", "PathY1", "PathSessionA", "PathX1", "PathSessionB"],
                "thread 2: \(String(describing: paths[1]))")
        await session.close()
    }

    @Test func sessionInstances_builtByManyThreadsAtOnce_areBuiltOnce() async throws {
        let container = WeaveDI.Container()
        let built = Atomic(0)
        container.register(SessionCounter.self, scope: .session) {
            built.add(1, ordering: .relaxed)
            usleep(20_000)
            return SessionCounter()
        }
        let session = container.openSession(id: "gates")
        let seen = Locked<Set<ObjectIdentifier>>([])
        let resolve: @Sendable () -> Void = {
            if let counter = session.resolve(SessionCounter.self) { seen.withLock { _ = $0.insert(ObjectIdentifier(counter)) } }
        }
        #expect(finishTogether(Array(repeating: resolve, count: 6)))
        #expect(built.load(ordering: .relaxed) == 1)
        #expect(seen.withLock { $0.count } == 1)
        await session.close()
    }

    @Test func buildsThatEndOutOfOrder_eachStayGated_untilTheirOwnEnd() async throws {
        // Four sessions' instances built at once, the first begun ending first (10 ms, the last
        // 40 ms), and more readers of each arriving at 15-18 ms: the gates' table loses none of
        // the builds still running when another ends, so every instance is built once, whoever
        // asks while it is being built.
        let container = WeaveDI.Container()
        let built = Atomic(0)
        container.register(SessionCounter.self, scope: .session) {
            let order = built.add(1, ordering: .relaxed).newValue
            usleep(UInt32(10_000 * min(order, 4)))
            return SessionCounter()
        }
        let sessions = (1...4).map { container.openSession(id: "\($0)") }
        let seen = Locked<[String: Set<ObjectIdentifier>]>([:])
        var readers: [@Sendable () -> Void] = []
        for (index, session) in sessions.enumerated() {
            for reader in 0..<3 {
                readers.append {
                    if reader > 0 { usleep(UInt32(15_000 + 1_000 * index)) }
                    if let counter = session.resolve(SessionCounter.self) {
                        seen.withLock { _ = $0[session.id, default: []].insert(ObjectIdentifier(counter)) }
                    }
                }
            }
        }
        #expect(finishTogether(readers))
        #expect(built.load(ordering: .relaxed) == 4)
        #expect(seen.withLock { $0.mapValues(\.count) } == ["1": 1, "2": 1, "3": 1, "4": 1])
        for session in sessions { await session.close() }
    }

    @Test func aSessionFactory_thatReadsItsTypeFromASessionWhereItIsBuilt_getsThatInstance() async throws {
        let container = WeaveDI.Container()
        let first = container.openSession(id: "first")
        let builds = Atomic(0)
        container.register(Chained.self, scope: .session) { _ in
            guard builds.add(1, ordering: .relaxed).newValue > 1 else { return Chained(previous: nil) }
            return Chained(previous: try first.require(Chained.self))  // built there already: no cycle
        }
        let built = try first.require(Chained.self)
        let second = container.openSession(id: "second")
        #expect(try second.require(Chained.self).previous === built)
        await second.close()
        await first.close()
    }

    @Test func aWaitThatLasts_isReported_untilTheBuildEnds() {
        let reports = Locked<[String]>([])
        let gates = BuildGates(patience: .milliseconds(50)) { message in reports.withLock { $0.append(message) } }
        let key = BuildGates.Key(object: ObjectIdentifier(SessionCounter.self), cell: 0)
        let slot = TypeSlots.shared.slot(for: SlowlyBuilt.self)
        let published = Atomic(false)
        #expect(gates.enter(key, slot: slot, done: { published.load(ordering: .relaxed) }, deadlock: { _ in fatalError() }))
        let waiterResult = Locked<Bool?>(nil)
        let waiter = Thread {
            let mine = gates.enter(key, slot: slot, done: { published.load(ordering: .relaxed) }, deadlock: { _ in fatalError() })
            waiterResult.withLock { $0 = mine }
        }
        waiter.start()
        // Two reports' worth of waiting (0.05 s, then 0.1 s more): until they are in, however
        // long a busy machine takes to run the waiter.
        let deadline = ContinuousClock.now + .seconds(30)
        while reports.withLock({ $0.count }) < 2, ContinuousClock.now < deadline { usleep(10_000) }
        #expect(waiterResult.withLock { $0 } == nil, "the waiter did not wait for the build")
        published.store(true, ordering: .relaxed)
        gates.leave(key)
        waiter.join()
        #expect(waiterResult.withLock { $0 } == false, "the waiter did not find the published instance")
        let seen = reports.withLock { $0 }
        #expect(seen.count >= 2)
        #expect(seen.first?.hasPrefix("still waiting after 0.05 seconds for SlowlyBuilt, which another thread is building") == true,
                "\(seen)")
        #expect(seen.count < 2 || seen[1].hasPrefix("still waiting after 0.1 seconds"), "\(seen)")
    }

    /// Defaults that read one another without end stop at the depth limit, with its message,
    /// instead of overflowing the stack.
    @Test func keyDefaultsNestedPastTheDepthLimit_stopTheProcess_sayingSo() throws {
        let result = try ChildProcess.run("weavedi-probe", ["key-too-deep"])
        #expect(result.signaled || result.status != 0)
        #expect(!result.stdout.contains("unreachable"))
        #expect(result.stderr.contains("resolution deeper than 200 levels (ProbeEndlessKey<"), "\(result.stderr.prefix(2_000))")
        #expect(result.stderr.contains("an InjectedKey default cannot throw"), "\(result.stderr.prefix(2_000))")
    }

    @Test func keyDefaultsThatNeedEachOther_onTwoThreadsAtOnce_stopTheProcess_namingTheCycle() throws {
        let result = try ChildProcess.run("weavedi-probe", ["key-cycle-threads"])
        #expect(result.signaled || result.status != 0)
        #expect(!result.stdout.contains("unreachable"))
        #expect(result.stderr.contains("two threads were building them at once"), "\(result.stderr)")
        #expect(result.stderr.contains("ProbeCycleKeyA -> ProbeCycleKeyB -> ProbeCycleKeyA")
            || result.stderr.contains("ProbeCycleKeyB -> ProbeCycleKeyA -> ProbeCycleKeyB"), "\(result.stderr)")
    }

    @Test func keyDefaultsThatNeedEachOtherThroughAService_onTwoThreadsAtOnce_stopTheProcess_namingTheRealPath() throws {
        // A's default resolves ProbeViaService, whose factory reads B, whose default reads A:
        // whichever thread closes the cycle, the path has the service between A and B.
        let result = try ChildProcess.run("weavedi-probe", ["key-cycle-threads-via-service"])
        #expect(result.signaled || result.status != 0)
        #expect(!result.stdout.contains("unreachable"))
        #expect(result.stderr.contains("two threads were building them at once"), "\(result.stderr)")
        #expect(result.stderr.contains("ProbeViaKeyA -> ProbeViaService -> ProbeViaKeyB -> ProbeViaKeyA;")
            || result.stderr.contains("ProbeViaKeyB -> ProbeViaKeyA -> ProbeViaService -> ProbeViaKeyB;"), "\(result.stderr)")
    }
}

/// Two first calls that each wait (up to 30 s) until the other has arrived, so that two builds
/// are under way at once; later calls go straight through.
final class FirstCallsBarrier: Sendable {
    private let arrived = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
    private let callsOf0 = Atomic(0), callsOf1 = Atomic(0)
    private let metCount = Atomic(0)

    func arrive(_ side: Int) {
        let calls = side == 0 ? callsOf0.add(1, ordering: .relaxed).newValue : callsOf1.add(1, ordering: .relaxed).newValue
        guard calls == 1 else { return }
        arrived[side].signal()
        if arrived[1 - side].wait(timeout: .now() + .seconds(30)) == .success { metCount.add(1, ordering: .relaxed) }
    }

    /// Whether both first calls found the other under way.
    var met: Bool { metCount.load(ordering: .relaxed) == 2 }
}

/// First calls on `parties` sides that each wait (up to 30 s) until all have arrived, so that
/// that many builds are under way at once; later calls go straight through.
final class FirstCallsMeeting: Sendable {
    private let parties: Int
    private let calls: Locked<(perSide: [Int], arrived: Int)>
    private let allArrived = DispatchSemaphore(value: 0)
    private let metCount = Atomic(0)

    init(parties: Int) {
        self.parties = parties
        calls = Locked((Array(repeating: 0, count: parties), 0))
    }

    func arrive(_ side: Int) {
        let (first, last) = calls.withLock { calls -> (Bool, Bool) in
            calls.perSide[side] += 1
            guard calls.perSide[side] == 1 else { return (false, false) }
            calls.arrived += 1
            return (true, calls.arrived == parties)
        }
        guard first else { return }
        if last { for _ in 0..<parties { allArrived.signal() } }
        if allArrived.wait(timeout: .now() + .seconds(30)) == .success { metCount.add(1, ordering: .relaxed) }
    }

    /// Whether every side's first call found all the others under way.
    var met: Bool { metCount.load(ordering: .relaxed) == parties }
}

final class PathCA: Sendable {}
final class PathX1: Sendable {}
final class PathCB: Sendable {}
final class PathY1: Sendable {}
final class PathL1: Sendable {}
final class PathL2: Sendable {}
final class PathL3: Sendable {}
final class PathTwice: Sendable {}
final class PathP: Sendable {}
final class PathSessionA: Sendable {}
final class PathSessionB: Sendable {}

enum LockOrder {
    static let container = WeaveDI.Container()
    static let barrier = FirstCallsBarrier()
}

struct LockOrderKey1: InjectedKey {
    static var liveValue: Int {
        LockOrder.barrier.arrive(0)
        _ = LockOrder.container.resolve(LockOrderLeaf.self)
        return 1
    }
}

struct LockOrderKey2: InjectedKey {
    static var liveValue: Int { 2 }
}

final class LockOrderLeaf: Sendable {}

final class LockOrderRoot: Sendable {
    let key: Int
    init() {
        LockOrder.barrier.arrive(1)
        key = InjectedValues.current[LockOrderKey2.self]
    }
}

final class WaitingLeaf: Sendable {}

/// Builds `WaitingLeaf` on another thread and waits (up to 30 s) for it. (Not joined: if that
/// thread cannot build, it stays blocked until this build ends.)
final class WaitingRoot: Sendable {
    let leafFromOtherThread: Bool
    init(_ container: WeaveDI.Container) {
        let finished = DispatchSemaphore(value: 0)
        Thread.detach {
            _ = container.resolve(WaitingLeaf.self)
            finished.signal()
        }
        leafFromOtherThread = finished.wait(timeout: .now() + .seconds(30)) == .success
    }
}

final class CrossA: Sendable { init(_ b: CrossB) {} }
final class CrossB: Sendable { init(_ a: CrossA) {} }
final class SessionCounter: Sendable {}
final class Chained: Sendable {
    let previous: Chained?
    init(previous: Chained?) { self.previous = previous }
}
final class SlowlyBuilt: Sendable {}
