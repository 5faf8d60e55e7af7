/// The roots of the mirror jobs checked so far, indexed so that the first of them whose trees
/// meet a new job's (`MirrorTreeOverlap`) is found without comparing the new job with each: a
/// configuration's jobs are then checked in time that grows with their number, not with its
/// square (comparing each pair took seconds from a few hundred jobs on).
///
/// Each job is added with its position (`add`, in increasing order), and `firstOverlap` gives
/// the smallest position among those whose roots meet the new job's in one of
/// `MirrorTreeOverlap.checkedPairs`: the job that comparing the new one with each in turn finds
/// first. The caller then compares the two jobs as before, which says how they meet. `Index` is
/// how each root is indexed: by its path's components (`PathIndex`), or by identity
/// (`LocationIndex`).
struct MirrorTreeIndex<Index: RootIndex> {
    private var indices = MirrorTreeOverlap.Roots(source: Index(), destination: Index())

    /// The smallest position among the jobs added whose roots meet `roots` in one of the pairs
    /// that may not overlap; nil when none does.
    func firstOverlap(with roots: MirrorTreeOverlap.Roots<Index.Root>) -> Int? {
        MirrorTreeOverlap.checkedPairs.compactMap { field, otherField in indices[otherField].first(meeting: roots[field]) }.min()
    }

    /// Adds the roots of the job at `position`, after those of every job before it.
    mutating func add(_ roots: MirrorTreeOverlap.Roots<Index.Root>, at position: Int) {
        indices.source.add(roots.source, at: position)
        indices.destination.add(roots.destination, at: position)
    }
}

/// One kind of root of the jobs added (all sources, or all destinations), indexed by what
/// decides whether another root meets one of them.
protocol RootIndex: Sendable {
    associatedtype Root: Sendable
    init()
    /// Adds `root`, of the job at `position`, after those of every job before it.
    mutating func add(_ root: Root, at position: Int)
    /// The smallest position of a root added that `root` meets (is, lies inside, or contains);
    /// nil when it meets none.
    func first(meeting root: Root) -> Int?
}

/// Paths, by their normalized components (`ConfigurationDirectories.normalizedComponents`),
/// compared byte for byte as `MirrorTreeOverlap.relation` compares them: a path meets another
/// when one's components begin with all of the other's.
///
/// Each path added is recorded at itself (the first position there), and at each directory
/// above it (the first position below it); a path then meets the first recorded at itself or
/// at a directory above it, and the first recorded below it. The keys are the components' bytes,
/// each after a `/` (the empty key is `/`): not `String`s, whose equality would take two
/// different byte sequences for one path.
struct PathIndex: RootIndex {
    /// The first position whose path is the key.
    private var at: [[UInt8]: Int] = [:]
    /// The first position whose path lies strictly below the key.
    private var below: [[UInt8]: Int] = [:]

    init() {}

    mutating func add(_ components: [Substring], at position: Int) {
        var key: [UInt8] = []
        for component in components {
            if below[key] == nil { below[key] = position }
            Self.append(component, to: &key)
        }
        if at[key] == nil { at[key] = position }
    }

    func first(meeting components: [Substring]) -> Int? {
        var key: [UInt8] = []
        var first = at[key]
        for component in components {
            Self.append(component, to: &key)
            first = earliest(first, at[key])
        }
        return earliest(first, below[key])
    }

    /// The first position whose path is exactly `components`.
    func first(at components: [Substring]) -> Int? {
        var key: [UInt8] = []
        for component in components { Self.append(component, to: &key) }
        return at[key]
    }

    private static func append(_ component: Substring, to key: inout [UInt8]) {
        key.append(UInt8(ascii: "/"))
        key.append(contentsOf: component.utf8)
    }
}

/// The smaller of two positions, either of which may be missing.
private func earliest(_ a: Int?, _ b: Int?) -> Int? {
    guard let a else { return b }
    guard let b else { return a }
    return min(a, b)
}

/// Locations by identity (`MountedLocation`), for the overlaps that `MountedLocation.relation`
/// finds: a location meets another with the same anchor when their missing parts meet as paths;
/// one with nothing missing whose anchor is among its holders; and, when nothing of it is
/// missing, one that has its anchor among its own holders. A location without an identity
/// (not even `/` could be read) meets none.
struct LocationIndex: RootIndex {
    /// By the identity of their anchor: the parts missing below it.
    private var byAnchor: [FileIdentity: PathIndex] = [:]
    /// By the identity of each of their holders: the first position.
    private var byHolder: [FileIdentity: Int] = [:]

    init() {}

    mutating func add(_ location: MountedLocation, at position: Int) {
        guard let identity = location.identity else { return }
        byAnchor[identity, default: PathIndex()].add(location.missing, at: position)
        for holder in location.holders where byHolder[holder.identity] == nil {
            byHolder[holder.identity] = position
        }
    }

    func first(meeting location: MountedLocation) -> Int? {
        guard let identity = location.identity else { return nil }
        // The same anchor: the missing parts decide.
        var first = byAnchor[identity]?.first(meeting: location.missing)
        // A location with nothing missing whose anchor holds this one: this lies inside it.
        for holder in location.holders {
            first = earliest(first, byAnchor[holder.identity]?.first(at: []))
        }
        // A location that this one holds, when nothing of this one is missing: this contains it.
        if location.missing.isEmpty { first = earliest(first, byHolder[identity]) }
        return first
    }
}
