/// One finding of `diagnoseComponents()`: a duplicate provider or scope drift.
public struct ComponentIssue: Sendable, Equatable {
    /// What kind of finding it is.
    public enum Kind: String, Sendable {
        /// Two or more modules register the same type; the last registration wins.
        case duplicateProvider
        /// The same type is registered with different scopes.
        case scopeDrift
    }

    /// The kind of finding.
    public var kind: Kind
    /// The type concerned.
    public var type: String
    /// Who provides it: module names (duplicates) or `module(scope)` (scope drift), sorted.
    public var providers: [String]
    /// One line saying what is wrong and what wins.
    public var detail: String
}

/// The result of `diagnoseComponents()`, in the documented JSON shape
/// `{"issues":[{"type":…,"providers":[…],"detail":…}]}`.
public struct ComponentDiagnostics: Sendable, Equatable {
    /// The findings, sorted by type, duplicates before drift.
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

/// The result of `checkCycles()`: `{"componentCount":N,"edgeCount":M,"cycles":[["A","B"],…]}`.
public struct CycleReport: Sendable, Equatable {
    /// Registered types.
    public var componentCount: Int
    /// Recorded dependency edges.
    public var edgeCount: Int
    /// Elementary cycles, each rotated to start at its smallest name, sorted.
    public var cycles: [[String]]

    /// The documented JSON.
    public var json: JSONValue {
        .object([
            ("componentCount", .int(componentCount)), ("edgeCount", .int(edgeCount)),
            ("cycles", .array(cycles.map { .array($0.map(JSONValue.string)) })),
        ])
    }
}

extension WeaveDI.Container {
    /// Duplicate providers (one type registered by two or more modules) and scope drift (one
    /// type registered with different scopes), from every registration ever made here.
    public func diagnoseComponents() -> ComponentDiagnostics {
        let history = state.withLock { $0.history }
        var issues: [ComponentIssue] = []
        for (slot, records) in history {
            let type = TypeSlots.shared.name(ofSlot: slot)
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
        issues.sort { ($0.type, $0.kind == .duplicateProvider ? 0 : 1) < ($1.type, $1.kind == .duplicateProvider ? 0 : 1) }
        return ComponentDiagnostics(issues: issues)
    }

    /// The cycles in the dependency graph recorded so far (edges are recorded in each
    /// registration's first builds: what its factory resolves through its resolver, and what is
    /// built of the same container while it runs; `validate()` builds everything once to record
    /// them all).
    public func checkCycles() -> CycleReport {
        let registrations = registrations
        var graph: [String: Set<String>] = [:]
        var edgeCount = 0
        for registration in registrations {
            graph[registration.type, default: []].formUnion(registration.dependencies)
            edgeCount += registration.dependencies.count
        }
        return CycleReport(
            componentCount: registrations.count, edgeCount: edgeCount, cycles: CycleFinder.elementaryCycles(in: graph))
    }
}

/// Finds elementary cycles with Johnson's algorithm: from each node in name order, the cycles
/// through it and larger names only, so that every cycle is found once, starting at its
/// smallest name. A search stays inside the start's strongly connected component (every cycle
/// lies in one), and a node it found no way back from stays blocked until a cycle through a
/// node it leads to is found, so the search costs O(nodes + edges) per cycle found, not per
/// path: a graph with few cycles and astronomically many paths is quick.
enum CycleFinder {
    /// At most this many cycles are listed.
    static let limit = 1_000

    static func elementaryCycles(in graph: [String: Set<String>]) -> [[String]] {
        let names = Set(graph.keys).union(graph.values.flatMap { $0 }).sorted()
        let component = components(of: names, in: graph)
        // Nodes by index in name order; each node's edges within its component, in name order.
        var index: [String: Int] = [:]
        for (i, name) in names.enumerated() { index[name] = i }
        let edges: [[Int]] = names.map { name in
            (graph[name] ?? []).filter { component[$0] == component[name] }.map { index[$0]! }.sorted()
        }
        var cycles: [[String]] = []
        var blocked = [Bool](repeating: false, count: names.count)
        // For each blocked node, the blocked nodes that lead to it: unblocked with it.
        var blockedBy = [Set<Int>](repeating: [], count: names.count)
        var touched: [Int] = []
        for start in names.indices where cycles.count < limit {
            // Only nodes after `start`, in its component (its edges lead nowhere else).
            func follows(_ node: Int) -> Bool { node > start }
            guard edges[start].contains(where: { $0 >= start }) else { continue }
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
                if frames[top].next < edges[node].count {
                    let next = edges[node][frames[top].next]
                    frames[top].next += 1
                    if next == start {
                        cycles.append(path.map { names[$0] })
                        frames[top].found = true
                    } else if follows(next), !blocked[next] {
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
                    for next in edges[node] where follows(next) || next == start { blockedBy[next].insert(node) }
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

    /// The strongly connected component of every node (Tarjan's algorithm, iterative so that
    /// long chains cannot overflow the stack).
    static func components(of nodes: [String], in graph: [String: Set<String>]) -> [String: Int] {
        var index: [String: Int] = [:], low: [String: Int] = [:], component: [String: Int] = [:]
        var stack: [String] = [], onStack: Set<String> = []
        var nextIndex = 0, count = 0
        for root in nodes where index[root] == nil {
            index[root] = nextIndex
            low[root] = nextIndex
            nextIndex += 1
            stack.append(root)
            onStack.insert(root)
            var work: [(node: String, edges: [String], position: Int)] = [(root, Array(graph[root] ?? []), 0)]
            while let top = work.indices.last {
                let node = work[top].node
                if work[top].position < work[top].edges.count {
                    let next = work[top].edges[work[top].position]
                    work[top].position += 1
                    if index[next] == nil {
                        index[next] = nextIndex
                        low[next] = nextIndex
                        nextIndex += 1
                        stack.append(next)
                        onStack.insert(next)
                        work.append((next, Array(graph[next] ?? []), 0))
                    } else if onStack.contains(next) {
                        low[node] = min(low[node]!, index[next]!)
                    }
                } else {
                    work.removeLast()
                    if let parent = work.last?.node { low[parent] = min(low[parent]!, low[node]!) }
                    if low[node] == index[node] {
                        while let member = stack.popLast() {
                            onStack.remove(member)
                            component[member] = count
                            if member == node { break }
                        }
                        count += 1
                    }
                }
            }
        }
        return component
    }
}
