/// Where the trees of two mirror jobs meet.
///
/// A job's destination may not be, contain or lie inside another mirror job's source or
/// destination, and its source may not be, contain or lie inside the other's destination: one
/// job would write into, or delete from, the tree the other owns (two deleting jobs into one
/// tree delete each other's files). Two sources may overlap: both are only read.
///
/// The rule compares the paths it is given, lexically (`ConfigurationDirectories.relation`):
/// the configuration's paths as written when a file is read, the paths they resolve to on this
/// machine (`ResolvedPath`) for the checks that follow symbolic links. `MountedLocation` applies
/// the same rule by device and inode, for directories a mount shows at two real paths.
struct MirrorTreeOverlap: Equatable {
    /// How a root of the first job stands to a root of the other.
    enum Relation: Equatable {
        /// The same directory.
        case same
        /// Strictly below the other's root.
        case inside
        /// The other's root is strictly below it.
        case contains

        /// `is`, `is inside`, `contains`.
        var verb: String {
            switch self {
            case .same: "is"
            case .inside: "is inside"
            case .contains: "contains"
            }
        }

        /// `is the`, `is inside the`, `contains the`: followed by the other root's field name.
        var phrase: String { verb + " the" }
    }

    /// The first job's root: `"source"` or `"destination"`.
    let field: String
    /// The other job's root: `"source"` or `"destination"`.
    let otherField: String
    /// How the first stands to the other.
    let relation: Relation

    /// A mirror job's two roots, as a rule compares them: paths (as written, or resolved
    /// through links), or their locations by identity (`MountedLocation`).
    struct Roots<Root: Sendable>: Sendable {
        var source: Root
        var destination: Root

        init(source: Root, destination: Root) {
            self.source = source
            self.destination = destination
        }

        /// Both roots, each transformed by `transform`.
        func map<Other>(_ transform: (Root) -> Other) -> Roots<Other> {
            Roots<Other>(source: transform(source), destination: transform(destination))
        }

        /// The root named by a field name, `"source"` or `"destination"`.
        subscript(field: String) -> Root { field == "source" ? source : destination }
    }

    /// The pairs of roots that may not overlap, in the order they are checked.
    static let checkedPairs = [("destination", "destination"), ("destination", "source"), ("source", "destination")]

    /// The first of `checkedPairs` for which `relate` finds an overlap of a root of `roots`
    /// with a root of `otherRoots`, with what it found; nil when the trees are apart.
    static func first<Root, Found>(
        _ roots: Roots<Root>, _ otherRoots: Roots<Root>, by relate: (Root, Root) -> Found?
    ) -> (field: String, otherField: String, found: Found)? {
        for (field, otherField) in checkedPairs {
            if let found = relate(roots[field], otherRoots[otherField]) { return (field, otherField, found) }
        }
        return nil
    }

    /// The first overlap of the paths `roots` with the paths `otherRoots`, compared lexically,
    /// or nil when the trees are apart.
    static func first(_ roots: Roots<String>, _ otherRoots: Roots<String>) -> MirrorTreeOverlap? {
        first(roots, otherRoots, by: { relation(of: $0, to: $1) }).map {
            MirrorTreeOverlap(field: $0.field, otherField: $0.otherField, relation: $0.found)
        }
    }

    /// `first(_:_:)` for paths already split into their normalized components
    /// (`ConfigurationDirectories.normalizedComponents`).
    static func first(_ roots: Roots<[Substring]>, _ otherRoots: Roots<[Substring]>) -> MirrorTreeOverlap? {
        first(roots, otherRoots, by: { relation(of: $0, to: $1) }).map {
            MirrorTreeOverlap(field: $0.field, otherField: $0.otherField, relation: $0.found)
        }
    }

    /// How `path` stands to `other`, or nil when neither is, nor lies inside, the other.
    static func relation(of path: String, to other: String) -> Relation? {
        relation(of: ConfigurationDirectories.normalizedComponents(path), to: ConfigurationDirectories.normalizedComponents(other))
    }

    /// `relation(of:to:)` for paths already split into their normalized components
    /// (`ConfigurationDirectories.normalizedComponents`).
    static func relation(of path: [Substring], to other: [Substring]) -> Relation? {
        switch (ConfigurationDirectories.relation(of: path, to: other), ConfigurationDirectories.relation(of: other, to: path)) {
        case (.same, _): .same
        case (.inside, _): .inside
        case (_, .inside): .contains
        default: nil
        }
    }
}

extension MirrorTreeOverlap.Roots<String> {
    /// A configured mirror's roots, as written.
    init(_ mirror: DaemonConfiguration.Mirror) {
        self.init(source: mirror.source, destination: mirror.destination)
    }
}
