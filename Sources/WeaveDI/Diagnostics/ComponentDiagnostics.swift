/// One finding of `diagnoseComponents()`: a duplicate provider, scope drift or a scope mismatch.
public struct ComponentIssue: Sendable, Equatable {
    /// What kind of finding it is.
    public enum Kind: String, Sendable {
        /// Two or more modules register the same type; the last registration wins.
        case duplicateProvider
        /// The same type is registered with different scopes.
        case scopeDrift
        /// A registration with a lifetime of its own (singleton, session) needs a shorter-lived
        /// one (session, request), directly or through transients: its build throws
        /// `ResolutionError.scopeMismatch`. Seen in the dependency edges recorded by builds only.
        case scopeMismatch
    }

    /// The kind of finding.
    public var kind: Kind
    /// The type concerned.
    public var type: String
    /// Who provides it: module names (duplicates) or `module(scope)` (scope drift), sorted; for
    /// a scope mismatch, the `module(scope)` of the longer-lived registration (`type`).
    public var providers: [String]
    /// One line saying what is wrong and what wins.
    public var detail: String
}

/// The result of `diagnoseComponents()`, in the documented JSON shape
/// `{"issues":[{"type":…,"providers":[…],"detail":…}]}`.
public struct ComponentDiagnostics: Sendable, Equatable {
    /// The findings, sorted by type, then duplicates, drift, mismatches (these by detail).
    public var issues: [ComponentIssue]

    /// The documented JSON, with `kind` added to each issue.
    public var json: JSONValue {
        .object([("issues", .array(issues.map { issue in
            .object([
                ("type", .string(issue.type)), ("providers", .array(issue.providers.map(JSONValue.string))),
                ("detail", .string(issue.detail)), ("kind", .string(issue.kind.rawValue)),
            ])
        }))])
    }
}

/// The result of `checkCycles()`:
/// `{"componentCount":N,"edgeCount":M,"cycles":[["A","B"],…],"notBuilt":["C",…]}`.
public struct CycleReport: Sendable, Equatable {
    /// Registered types.
    public var componentCount: Int
    /// Recorded dependency edges.
    public var edgeCount: Int
    /// Elementary cycles, each rotated to start at its smallest name, sorted.
    public var cycles: [[String]]
    /// The registrations whose dependencies are unknown, sorted: those whose factory has never
    /// been run (a registration made with `register(_:instance:)` has no factory and is never
    /// listed). Their edges are missing from the graph, so `cycles` being empty says nothing
    /// of them; `validate()` builds every registration once.
    public var notBuilt: [String]

    /// The documented JSON.
    public var json: JSONValue {
        .object([
            ("componentCount", .int(componentCount)), ("edgeCount", .int(edgeCount)),
            ("cycles", .array(cycles.map { .array($0.map(JSONValue.string)) })),
            ("notBuilt", .array(notBuilt.map(JSONValue.string))),
        ])
    }
}

extension WeaveDI.Container {
    /// Duplicate providers (one type registered by two or more modules) and scope drift (one
    /// type registered with different scopes), from every registration ever made here; and scope
    /// mismatches (a singleton or session-scoped registration that needs a shorter-lived one,
    /// directly or through transients), from the dependency edges recorded so far: a
    /// registration whose factory has never run has none (`checkCycles().notBuilt`), so call
    /// `validate()` first, which builds every registration once.
    public func diagnoseComponents() -> ComponentDiagnostics {
        let history = state.withLock { $0.history }
        let names = reportNames()
        var issues: [ComponentIssue] = []
        for (slot, records) in history {
            let type = names[slot] ?? TypeSlots.shared.name(ofSlot: slot)
            let modules = Set(records.map(\.module)).sorted()
            if modules.count > 1 {
                issues.append(ComponentIssue(
                    kind: .duplicateProvider, type: type, providers: modules,
                    detail: "provided by \(modules.count) modules (\(modules.joined(separator: ", "))); "
                        + "the registration by \(records.last!.module) wins"))
            }
            let scopes = Set(records.map(\.scope))
            if scopes.count > 1 {
                let providers = Set(records.map { "\($0.module)(\($0.scope))" }).sorted()
                issues.append(ComponentIssue(
                    kind: .scopeDrift, type: type, providers: providers,
                    detail: "registered with different scopes (\(scopes.map(\.rawValue).sorted().joined(separator: ", "))); "
                        + "the last, \(records.last!.scope), is in effect"))
            }
        }
        issues += scopeMismatches(names: names)
        func rank(_ kind: ComponentIssue.Kind) -> Int {
            switch kind {
            case .duplicateProvider: 0
            case .scopeDrift: 1
            case .scopeMismatch: 2
            }
        }
        issues.sort { ($0.type, rank($0.kind), $0.detail) < ($1.type, rank($1.kind), $1.detail) }
        return ComponentDiagnostics(issues: issues)
    }

    /// The scope mismatches in the recorded edges of the current registrations: for each
    /// singleton or session-scoped one, every shorter-lived (session, request) registration it
    /// needs, directly or through transients (a transient has no lifetime of its own: a
    /// singleton may hold one, but not what the transient needs of a shorter scope), as
    /// building it would find (`ResolutionError.scopeMismatch`). Each is reached by the
    /// shortest path, edges taken in name order.
    private func scopeMismatches(names: [Int: String]) -> [ComponentIssue] {
        let entries = currentEntries()
        var bySlot: [Int: Entry] = [:]
        for entry in entries { bySlot[entry.slot] = entry }
        func name(_ slot: Int) -> String { names[slot] ?? TypeSlots.shared.name(ofSlot: slot) }
        func needs(_ slot: Int) -> [Int] {
            (bySlot[slot]?.edges ?? []).filter { bySlot[$0] != nil }.sorted { name($0) < name($1) }
        }
        var issues: [ComponentIssue] = []
        for outer in entries where outer.scope != .transient {
            // Breadth first through transients, from `outer`: the path to each slot reached.
            var paths: [Int: [Int]] = [outer.slot: []]
            var queue = [outer.slot]
            var next = 0
            while next < queue.count {
                let slot = queue[next]
                next += 1
                for dependency in needs(slot) where paths[dependency] == nil {
                    let path = paths[slot]! + [dependency]
                    paths[dependency] = path
                    let inner = bySlot[dependency]!
                    if inner.scope == .transient {
                        queue.append(dependency)
                    } else if inner.scope.lifetime < outer.scope.lifetime {
                        let through = path.dropLast().map(name)
                        let via = through.isEmpty ? "" : " through \(through.joined(separator: " -> "))"
                        issues.append(ComponentIssue(
                            kind: .scopeMismatch, type: name(outer.slot), providers: ["\(outer.module)(\(outer.scope))"],
                            detail: "\(outer.scope) \(name(outer.slot)) needs \(name(dependency)) (\(inner.scope))\(via), "
                                + "which it would keep beyond its \(inner.scope); register \(name(outer.slot)) with scope "
                                + ".\(inner.scope) or shorter, or \(name(dependency)) with a longer one"))
                    }
                }
            }
        }
        return issues
    }

    /// The cycles in the dependency graph recorded so far (edges are recorded in each
    /// registration's first builds: what its factory resolves through its resolver, and what is
    /// built of the same container while it runs; `validate()` builds everything once to record
    /// them all), and the registrations whose edges are unknown because their factory has never
    /// run (`notBuilt`): a cycle through one of them cannot be seen yet.
    public func checkCycles() -> CycleReport {
        let entries = currentEntries()
        // By type, not by name: two types of the same name are two nodes.
        var graph: [Int: Set<Int>] = [:]
        var edgeCount = 0
        var notBuilt: [Int] = []
        for entry in entries {
            let edges = entry.edges
            graph[entry.slot, default: []].formUnion(edges)
            edgeCount += edges.count
            if !entry.edgesKnown { notBuilt.append(entry.slot) }
        }
        let names = reportNames()
        func name(_ slot: Int) -> String { names[slot] ?? TypeSlots.shared.name(ofSlot: slot) }
        let cycles = CycleFinder.elementaryCycles(in: graph, name: name)
        return CycleReport(
            componentCount: entries.count, edgeCount: edgeCount, cycles: cycles, notBuilt: notBuilt.map(name).sorted())
    }

    /// The names of the types this container's reports speak of (those registered now or
    /// before, and those their factories needed), each as `TypeSlots.name(ofSlot:)` spells it,
    /// but qualified (`App.Users.Repo`, `App.Orders.Repo`) where two share a name, so that every
    /// report of the container (`registrations`, `checkCycles()`, `diagnoseComponents()`,
    /// `validate()`) names a type the same way and never two types alike.
    func reportNames() -> [Int: String] {
        let (entries, history) = state.withLock { state in (state.order.compactMap(entry(at:)), Array(state.history.keys)) }
        var slots = Set(history)
        for entry in entries {
            slots.insert(entry.slot)
            slots.formUnion(entry.edges)
        }
        return TypeSlots.shared.names(ofSlots: slots)
    }
}

/// Finds elementary cycles with Johnson's algorithm: from the smallest node that lies on a
/// cycle among the nodes from it on, the cycles through it and larger nodes only, so that every
/// cycle is found once, starting at its smallest name; then again from the next such node. A
/// search stays inside its start's strongly connected component among those nodes (every
/// cycle through the start lies in it), and a node it found no way back from stays blocked
/// until a cycle through a node it leads to is found, so each search costs O(nodes + edges)
/// per cycle found, not per path: a graph with few cycles and astronomically many paths is
/// quick. The components are found again before each search, and every search finds a cycle:
/// a long cycle whose names happen to be in order is one search, not one per node.
enum CycleFinder {
    /// At most this many cycles are listed.
    static let limit = 1_000

    static func elementaryCycles(in graph: [String: Set<String>]) -> [[String]] {
        elementaryCycles(in: graph) { $0 }
    }

    /// The cycles of a graph of nodes of any kind (types, by slot), each node listed as `name`
    /// spells it; names must tell the nodes apart.
    static func elementaryCycles<Node: Hashable>(in graph: [Node: Set<Node>], name: (Node) -> String) -> [[String]] {
        let nodes = Set(graph.keys).union(graph.values.flatMap { $0 }).map { (node: $0, name: name($0)) }
            .sorted { $0.name < $1.name }
        let names = nodes.map(\.name)
        // Nodes by index in name order; each node's edges in name order.
        var index: [Node: Int] = [:]
        for (i, node) in nodes.enumerated() { index[node.node] = i }
        let adjacency: [[Int]] = nodes.map { node in (graph[node.node] ?? []).map { index[$0]! }.sorted() }
        var cycles: [[String]] = []
        var blocked = [Bool](repeating: false, count: names.count)
        // For each blocked node, the blocked nodes that lead to it: unblocked with it.
        var blockedBy = [Set<Int>](repeating: [], count: names.count)
        var touched: [Int] = []
        var least = 0
        while least < names.count, cycles.count < limit {
            let component = components(of: adjacency, from: least)
            var size = [Int](repeating: 0, count: names.count)
            for node in least..<names.count { size[component[node]] += 1 }
            // The smallest node from `least` on that lies on a cycle among those nodes.
            guard let start = (least..<names.count).first(where: { node in
                size[component[node]] > 1 || adjacency[node].contains(node)
            }) else { break }
            least = start + 1
            // The nodes of its component (all from `start` on), their edges within it.
            func inside(_ node: Int) -> Bool { node >= start && component[node] == component[start] }
            for node in touched {
                blocked[node] = false
                blockedBy[node] = []
            }
            touched = [start]
            var path = [start]
            blocked[start] = true
            // The search, as a stack of (node, next edge to try, whether a cycle was found below).
            var frames: [(node: Int, next: Int, found: Bool)] = [(start, 0, false)]
            while let top = frames.indices.last, cycles.count < limit {
                let node = frames[top].node
                if frames[top].next < adjacency[node].count {
                    let next = adjacency[node][frames[top].next]
                    frames[top].next += 1
                    if next == start {
                        cycles.append(path.map { names[$0] })
                        frames[top].found = true
                    } else if inside(next), !blocked[next] {
                        blocked[next] = true
                        touched.append(next)
                        path.append(next)
                        frames.append((next, 0, false))
                    }
                    continue
                }
                let found = frames[top].found
                if found {
                    unblock(node, &blocked, &blockedBy)
                } else {
                    for next in adjacency[node] where inside(next) { blockedBy[next].insert(node) }
                }
                frames.removeLast()
                path.removeLast()
                if found, let parent = frames.indices.last { frames[parent].found = true }
            }
        }
        return cycles.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Unblocks `node` and, in turn, the blocked nodes that were waiting for it.
    private static func unblock(_ node: Int, _ blocked: inout [Bool], _ blockedBy: inout [Set<Int>]) {
        var work = [node]
        while let current = work.popLast() {
            guard blocked[current] else { continue }
            blocked[current] = false
            work.append(contentsOf: blockedBy[current])
            blockedBy[current] = []
        }
    }

    /// The strongly connected component of every node from `least` on, among those nodes only
    /// (Tarjan's algorithm, iterative so that long chains cannot overflow the stack); the nodes
    /// before `least` are left at -1.
    static func components(of adjacency: [[Int]], from least: Int) -> [Int] {
        let count = adjacency.count
        var index = [Int](repeating: -1, count: count), low = [Int](repeating: 0, count: count)
        var component = [Int](repeating: -1, count: count)
        var onStack = [Bool](repeating: false, count: count)
        var stack: [Int] = []
        var nextIndex = 0, components = 0
        for root in least..<count where index[root] < 0 {
            index[root] = nextIndex
            low[root] = nextIndex
            nextIndex += 1
            stack.append(root)
            onStack[root] = true
            var work: [(node: Int, position: Int)] = [(root, 0)]
            while let top = work.indices.last {
                let node = work[top].node
                if work[top].position < adjacency[node].count {
                    let next = adjacency[node][work[top].position]
                    work[top].position += 1
                    guard next >= least else { continue }
                    if index[next] < 0 {
                        index[next] = nextIndex
                        low[next] = nextIndex
                        nextIndex += 1
                        stack.append(next)
                        onStack[next] = true
                        work.append((next, 0))
                    } else if onStack[next] {
                        low[node] = min(low[node], index[next])
                    }
                } else {
                    work.removeLast()
                    if let parent = work.last?.node { low[parent] = min(low[parent], low[node]) }
                    if low[node] == index[node] {
                        while let member = stack.popLast() {
                            onStack[member] = false
                            component[member] = components
                            if member == node { break }
                        }
                        components += 1
                    }
                }
            }
        }
        return component
    }
}
