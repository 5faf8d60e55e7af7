import WeaveDI
import WeaveDIPosix

/// Where a path leads on this machine by identity (device and inode), for the overlaps that
/// paths cannot show: a bind mount (`mount --bind /data/src /mnt/alias`), or one file system
/// mounted twice, makes two real paths name one directory, so `/mnt/alias/x` lies inside
/// `/data/src` though neither path is a prefix of the other.
///
/// A location is taken of a path already resolved through links (`ResolvedPath`): its
/// *anchor* is the longest prefix that exists, the rest is *missing*, and its *holders* are
/// the objects that hold the anchor, each with its identity: the anchor itself, each directory
/// above it up to `/`, and, for each of these that is also seen at another path through a
/// mount (`MountTable`, confirmed by device and inode), that path and the directories above
/// it, and so on. So the holders of `/data/src/x`, with `/mnt/alias` showing `/data/src`,
/// are `/data/src/x`, `/data/src`, `/data`, `/`, `/mnt/alias` and `/mnt`: everything a
/// mirror walking down from one of them could reach it from.
///
/// This reads the file system (`stat`) and mountinfo; it is for the checks of
/// `DaemonConfiguration.checkMirrorTreesOnDisk` and of a mirror run's start, after the
/// checks by path.
struct MountedLocation {
    /// The path located.
    let path: String
    /// The longest prefix of `path` that exists (`stat` succeeds): `/` at worst.
    let anchor: String
    /// The components of `path` below `anchor`.
    let missing: [Substring]
    /// What the anchor is, as the `stat` that found it said; nil for `/`, which is not read.
    let anchorKind: FileKind?
    /// What holds the anchor, the anchor first; empty when not even `/` could be read.
    let holders: [Holder]

    /// An object that holds the anchor (or is it), at one of its paths.
    struct Holder {
        let identity: FileIdentity
        let path: String
        /// The pairs of paths of one directory (through a mount) crossed to reach `path` from
        /// the anchor; none for the anchor and the directories above it.
        let crossings: [SameDirectory]
    }

    /// Two paths of one directory.
    struct SameDirectory: Equatable {
        let path: String
        let otherPath: String
    }

    /// Holders collected at most for one location: a bound against pathological mount tables
    /// (each bind mount of a directory above adds its own directories above).
    static let maximumHolders = 4096

    /// The identity of the anchor, when it could be read.
    var identity: FileIdentity? { holders.first?.identity }

    /// Each of `roots`, as configured, resolved through symbolic links (`ResolvedPath`) and
    /// located among `mounts`, the source first. `before` hears of each root (`source` or
    /// `destination`, and its path) before it is touched, and may stop there by throwing (a
    /// `StepDeadline` step's note).
    static func resolveAndLocate<Failure: Error>(
        _ roots: MirrorTreeOverlap.Roots<String>, mounts: MountTable,
        before: (_ field: String, _ path: String) throws(Failure) -> Void
    ) throws(Failure) -> (resolved: MirrorTreeOverlap.Roots<String>, located: MirrorTreeOverlap.Roots<MountedLocation>) {
        try before("source", roots.source)
        let source = ResolvedPath.resolve(roots.source)
        let locatedSource = locate(source, mounts: mounts)
        try before("destination", roots.destination)
        let destination = ResolvedPath.resolve(roots.destination)
        return (
            MirrorTreeOverlap.Roots(source: source, destination: destination),
            MirrorTreeOverlap.Roots(source: locatedSource, destination: locate(destination, mounts: mounts))
        )
    }

    /// The first overlap by identity of `roots` with `otherRoots`, in the order of
    /// `MirrorTreeOverlap.checkedPairs`, or nil.
    static func first(
        _ roots: MirrorTreeOverlap.Roots<MountedLocation>, _ otherRoots: MirrorTreeOverlap.Roots<MountedLocation>
    ) -> (field: String, otherField: String, found: MountOverlap)? {
        MirrorTreeOverlap.first(roots, otherRoots, by: { $0.relation(to: $1) })
    }

    /// Locates the absolute, resolved `path` among `mounts`.
    static func locate(_ path: String, mounts: MountTable) -> MountedLocation {
        let components = ConfigurationDirectories.normalizedComponents(path)
        var count = components.count
        var anchorKind: FileKind?
        while count > 0 {
            if let status = try? FileStatus(path: "/" + components[..<count].joined(separator: "/")) {
                anchorKind = status.kind
                break
            }
            count -= 1
        }
        let anchor = "/" + components[..<count].joined(separator: "/")
        return MountedLocation(
            path: path, anchor: anchor, missing: Array(components[count...]), anchorKind: anchorKind,
            holders: holders(of: anchor, mounts: mounts))
    }

    private static func identity(of path: String) -> FileIdentity? {
        (try? FileStatus(path: path)).map(FileIdentity.init)
    }

    /// The holders of the existing `anchor`, breadth first: its own directories above it, then
    /// those of the other paths it (or a directory above it) is seen at.
    private static func holders(of anchor: String, mounts: MountTable) -> [Holder] {
        var holders: [Holder] = []
        var seen: Set<String> = []
        var starts: [(path: String, crossings: [SameDirectory])] = [(anchor, [])]
        var next = 0
        while next < starts.count, holders.count < maximumHolders {
            let (start, crossings) = starts[next]
            next += 1
            var components = ConfigurationDirectories.normalizedComponents(start)
            while true {
                let current = "/" + components.joined(separator: "/")
                // Seen already: so were the directories above it.
                guard seen.insert(current).inserted else { break }
                if let identity = identity(of: current) {
                    holders.append(Holder(identity: identity, path: current, crossings: crossings))
                    for other in mounts.otherPaths(of: current) where !seen.contains(other) {
                        if Self.identity(of: other) == identity {
                            starts.append((other, crossings + [SameDirectory(path: current, otherPath: other)]))
                        }
                    }
                }
                if components.isEmpty { break }
                components.removeLast()
            }
        }
        return holders
    }

    /// How `self` stands to `other` by identity, and through which directories; nil when their
    /// identities show no overlap (the checks by path have their own say).
    ///
    /// The same anchor: the missing parts decide, compared as written. The other's anchor
    /// among this one's holders: this lies inside it, unless the other has a missing part (a
    /// name that does not exist in a directory this path goes through by another, existing
    /// name). And the other way round.
    func relation(to other: MountedLocation) -> MountOverlap? {
        guard let identity, let otherIdentity = other.identity else { return nil }
        if identity == otherIdentity {
            // Both already normalized components (`locate`): compared as they are.
            let relation = MirrorTreeOverlap.relation(of: missing, to: other.missing)
            return relation.map { MountOverlap(relation: $0, directories: [SameDirectory(path: anchor, otherPath: other.anchor)]) }
        }
        if other.missing.isEmpty, let holder = holders.first(where: { $0.identity == otherIdentity }) {
            return MountOverlap(
                relation: .inside, directories: holder.crossings + [SameDirectory(path: holder.path, otherPath: other.anchor)])
        }
        if missing.isEmpty, let holder = other.holders.first(where: { $0.identity == identity }) {
            return MountOverlap(
                relation: .contains,
                directories: [SameDirectory(path: anchor, otherPath: holder.path)] + holder.crossings.reversed())
        }
        return nil
    }
}

/// Two locations that overlap by identity: how the first stands to the other, and the paths
/// that are one directory through a mount and make it so.
struct MountOverlap: Equatable {
    let relation: MirrorTreeOverlap.Relation
    /// The pairs, in the order they lead from the first location to the other. A pair of one
    /// path twice says nothing and is left out.
    let directories: [MountedLocation.SameDirectory]

    init(relation: MirrorTreeOverlap.Relation, directories: [MountedLocation.SameDirectory]) {
        self.relation = relation
        self.directories = directories.filter { !$0.path.utf8.elementsEqual($0.otherPath.utf8) }
    }

    /// `"/mnt/alias" and "/data/src" are the same directory (same device and inode)`, and with
    /// more pairs `…, and so are "/x" and "/y" (same device and inode)`; the paths quoted as
    /// every message quotes a path from outside (`JSONValue.quotedPathForMessage`).
    var explanation: String {
        let show = JSONValue.quotedPathForMessage
        guard let first = directories.first else { return "the same directory (same device and inode)" }
        var text = "\(show(first.path)) and \(show(first.otherPath)) are the same directory"
        for pair in directories.dropFirst() {
            text += ", and so are \(show(pair.path)) and \(show(pair.otherPath))"
        }
        return text + " (same device and inode)"
    }
}
