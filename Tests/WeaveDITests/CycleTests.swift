import Synchronization
import Testing
@testable import WeaveDI

@Suite struct CycleTests {
    @Test(.timeLimit(.minutes(1))) func cycleFinder_onALargeGraphWithOneCycle_findsItsCycles() {
        // 2,000 nodes, each depending on the one before and on the one at half its index:
        // astronomically many paths, no cycle but the one added. The search used to walk every
        // path (and never ended).
        var graph: [String: Set<String>] = [:]
        func name(_ i: Int) -> String { "N\(i)" }
        for i in 1..<2_000 { graph[name(i)] = [name(i - 1), name(i / 2)] }
        graph[name(1_500), default: []].insert(name(1_999))  // and one cycle among them
        // Every edge goes down, and the halves of 1,501 to 1,999 are below 1,500: the only way
        // back from N1999 to N1500 is the chain N1999, N1998, …, N1501. One cycle, of 500 nodes,
        // told from its least name (N1500), then along its edges.
        let cycles = CycleFinder.elementaryCycles(in: graph)
        #expect(cycles == [[name(1_500)] + (1_501...1_999).reversed().map(name)])
        #expect(CycleFinder.elementaryCycles(in: graph.mapValues { $0.subtracting([name(1_999)]) }).isEmpty)
    }

    /// A chain of 40 diamonds, each one's end depending back on its start, and a node in a cycle
    /// with the chain's start: 2^40 paths from that node, every one a dead end but the first,
    /// and 81 cycles. Walking every path (as the search did) never ends; Johnson's algorithm
    /// blocks the nodes it found no way back from.
    @Test(.timeLimit(.minutes(1))) func cycleFinder_onALayeredGraphWithFewCycles_findsThemAll() {
        var graph: [String: Set<String>] = [:]
        func v(_ i: Int) -> String { "V" + (i < 10 ? "0" : "") + "\(i)" }
        func x(_ i: Int) -> String { "X" + (i < 10 ? "0" : "") + "\(i)" }
        func y(_ i: Int) -> String { "Y" + (i < 10 ? "0" : "") + "\(i)" }
        graph["A"] = [v(1)]
        graph[v(1)] = ["A"]
        for i in 1...40 {
            graph[v(i), default: []].formUnion([x(i), y(i)])
            graph[x(i)] = [v(i + 1)]
            graph[y(i)] = [v(i + 1)]
            graph[v(i + 1), default: []].insert(v(i))
        }
        let cycles = CycleFinder.elementaryCycles(in: graph)
        var expected = [["A", v(1)]]
        for i in 1...40 { expected += [[v(i), x(i), v(i + 1)], [v(i), y(i), v(i + 1)]] }
        #expect(cycles.count == 81)
        #expect(cycles == expected.sorted { $0.lexicographicallyPrecedes($1) })
    }

    /// One cycle through 20,000 services whose names sort in the cycle's order (`Step00001` needs
    /// `Step00002`, ...): one search, not one walk down the rest of the ring per node, which
    /// took minutes.
    @Test(.timeLimit(.minutes(1))) func cycleFinder_onALongCycleInNameOrder_findsItInOneSearch() {
        let count = 20_000
        func name(_ i: Int) -> String { "Step" + String(repeating: "0", count: 5 - String(i).count) + "\(i)" }
        var graph: [String: Set<String>] = [:]
        for i in 0..<count { graph[name(i)] = [name((i + 1) % count)] }
        let cycles = CycleFinder.elementaryCycles(in: graph)
        #expect(cycles == [(0..<count).map(name)])
        graph[name(count - 1)] = []  // now a chain
        #expect(CycleFinder.elementaryCycles(in: graph).isEmpty)
    }

    /// The complete graph on 5 nodes has C(5,k)·(k-1)! cycles of each length k: 10 + 20 + 30 + 24.
    @Test func cycleFinder_countsTheCyclesOfACompleteGraph() {
        let nodes = ["A", "B", "C", "D", "E"]
        let graph = Dictionary(uniqueKeysWithValues: nodes.map { n in (n, Set(nodes).subtracting([n])) })
        let cycles = CycleFinder.elementaryCycles(in: graph)
        #expect(cycles.count == 84)
        #expect(Set(cycles.map { $0 }).count == 84)
        #expect(cycles.allSatisfy { $0.first == $0.min() && Set($0).count == $0.count })
    }

    /// On small random graphs (self-loops included), the same cycles as walking every path.
    @Test func cycleFinder_agreesWithWalkingEveryPath_onRandomGraphs() {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            seed &+= 0x9E37_79B9_7F4A_7C15
            var z = seed
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        for round in 0..<200 {
            let count = 2 + Int(next() % 7)
            let nodes = (0..<count).map { "N\($0)" }
            var graph: [String: Set<String>] = [:]
            for a in nodes {
                for b in nodes where next() % 100 < UInt64(15 + round % 50) { graph[a, default: []].insert(b) }
            }
            #expect(CycleFinder.elementaryCycles(in: graph) == everyPathCycles(graph), "\(graph)")
        }
    }

    /// Elementary cycles by walking every simple path from each node through larger ones.
    func everyPathCycles(_ graph: [String: Set<String>]) -> [[String]] {
        var cycles: [[String]] = []
        let nodes = Set(graph.keys).union(graph.values.flatMap { $0 }).sorted()
        for start in nodes {
            var path = [start]
            func visit(_ node: String) {
                for next in (graph[node] ?? []).sorted() {
                    if next == start {
                        cycles.append(path)
                    } else if next > start, !path.contains(next) {
                        path.append(next)
                        visit(next)
                        path.removeLast()
                    }
                }
            }
            visit(start)
        }
        return cycles.sorted { $0.lexicographicallyPrecedes($1) }
    }

    @Test func twoNodeCycle_throwsCycleWithPath_andResolveReturnsNil() {
        let container = WeaveDI.Container()
        container.register(CycleA.self) { r in CycleA(b: try r.require(CycleB.self)) }
        container.register(CycleB.self) { r in CycleB(a: try r.require(CycleA.self)) }
        #expect {
            try container.require(CycleA.self)
        } throws: { error in
            guard case let .cycle(path) = error as? ResolutionError else { return false }
            return path == ["CycleA", "CycleB", "CycleA"]
                && (error as! ResolutionError).description.contains("CycleA -> CycleB -> CycleA")
        }
        #expect(container.resolve(CycleB.self) == nil)
    }

    @Test func threeNodeTransientCycle_isDetected_notAStackOverflow() {
        let container = WeaveDI.Container()
        container.register(CycleA.self, scope: .transient) { r in CycleA(b: try r.require(CycleB.self)) }
        container.register(CycleB.self, scope: .transient) { r in CycleB(a: try r.require(CycleC.self).a) }
        container.register(CycleC.self, scope: .transient) { r in CycleC(a: try r.require(CycleA.self)) }
        #expect {
            try container.require(CycleB.self)
        } throws: { error in
            guard case let .cycle(path) = error as? ResolutionError else { return false }
            return path == ["CycleB", "CycleC", "CycleA", "CycleB"]
        }
    }

    @Test func cycleThroughDirectContainerCalls_isDetected() {
        // Factories that ignore their resolver and call the container directly are tracked too.
        let container = WeaveDI.Container()
        container.register(CycleA.self) { CycleA(b: container.resolve(CycleB.self)) }
        container.register(CycleB.self) { CycleB(a: container.resolve(CycleA.self)) }
        let a = container.resolve(CycleA.self)
        #expect(a != nil)
        #expect(a?.b?.a == nil)  // the inner resolve of CycleA was refused, not recursed into
    }

    @Test func concurrentResolutions_neverReportFalseCycles() {
        let container = WeaveDI.Container()
        container.register(CycleC.self, scope: .transient) { CycleC(a: nil) }
        container.register(CycleB.self, scope: .transient) { r in
            _ = try r.require(CycleC.self)
            return CycleB(a: nil)
        }
        container.register(CycleA.self, scope: .transient) { r in CycleA(b: try r.require(CycleB.self)) }
        let failures = Atomic<Int>(0)
        onThreads(8) { _ in
            for _ in 0..<2_000 where (try? container.require(CycleA.self)) == nil {
                failures.add(1, ordering: .relaxed)
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }

    @Test func crossThreadSingletonBuilds_doNotDeadlock() {
        // A's factory needs B and B's needs C; threads start from either end at once.
        let container = WeaveDI.Container()
        container.register(CycleC.self) { CycleC(a: nil) }
        container.register(CycleB.self) { r in
            _ = try r.require(CycleC.self)
            return CycleB(a: nil)
        }
        container.register(CycleA.self) { r in CycleA(b: try r.require(CycleB.self)) }
        onThreads(8) { i in
            if i % 2 == 0 { _ = container.resolve(CycleA.self) } else { _ = container.resolve(CycleB.self) }
        }
        #expect(container.resolve(CycleA.self)?.b === container.resolve(CycleB.self))
    }

    @Test func deepChain_isCutOff_withTooDeep() {
        struct L<T> {}
        let container = WeaveDI.Container()
        // A chain through the same generic shape, 300 types deep, built by one recursive factory.
        func register<T>(_ type: T.Type, depth: Int) {
            container.register(L<T>.self, scope: .transient) { r in
                if depth < 300 { _ = try r.require(L<L<T>>.self) }
                return L<T>()
            }
            if depth < 300 { register(L<T>.self, depth: depth + 1) }
        }
        register(Int.self, depth: 0)
        #expect {
            try container.require(L<Int>.self)
        } throws: { error in
            guard case let .tooDeep(path) = error as? ResolutionError else { return false }
            return path.count == ResolutionError.maximumDepth + 1
        }
    }
}
