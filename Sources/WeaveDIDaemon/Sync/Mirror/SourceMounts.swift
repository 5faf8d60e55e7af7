import WeaveDI

/// The file systems mounted below a mirror's source root, as a job remembers them from run to
/// run (`jobs.json`'s `sourceMounts`): a source directory that is the root of a mount (`statx`'s
/// `STATX_ATTR_MOUNT_ROOT`; a bind mount of the same file system too; before Linux 5.8, one on
/// another device than its parent) is a mount point. A
/// remembered one that a later run finds an empty directory on its parent's file system, while
/// the destination has content there, is most likely a file system that failed to mount (after
/// a reboot): with `delete`, that run deletes nothing under it and counts it as an error.
enum SourceMounts {
    /// How many mount points a job remembers; those past it (by path) are not remembered, and
    /// not guarded.
    static let maximumCount = 64
    /// How long a remembered path may be, in bytes of UTF-8 (as a failed item's path); a longer
    /// one is not remembered, and not guarded.
    static let maximumPathBytes = 1024

    /// The error of a remembered mount point found unmounted by a deleting run.
    static let unmounted = "was a mount point at the last run and is now an empty directory on the parent's file system "
        + "(is it mounted?); nothing under it deleted"

    /// Why `path` is no path a run remembers (relative, `/`-separated names, none empty, `.` or
    /// `..`, at most `maximumPathBytes`), or nil when it is one.
    static func problem(_ path: String) -> String? {
        if path.utf8.count > maximumPathBytes { return "expected at most \(maximumPathBytes) bytes, got \(path.utf8.count)" }
        let names = path.split(separator: "/", omittingEmptySubsequences: false)
        if path.isEmpty || names.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) || path.utf8.contains(0) {
            return "expected a path relative to the source, of names that are not empty, . or .., got \(JSONValue.quotedForMessage(path))"
        }
        return nil
    }

    /// What a run remembers after it: the mount points it found, and the remembered ones it
    /// found no sign against (`forgotten`: found a plain directory that is not guarded, or gone
    /// from the source, with what was below them), sorted by path; at most `maximumCount`, each
    /// at most `maximumPathBytes`. `notKept` are the mount points left out by those limits.
    static func merge(remembered: [String], found: [String], forgotten: [String]) -> (kept: [String], notKept: [String]) {
        let gone = Set(forgotten)
        func isForgotten(_ path: String) -> Bool {
            if gone.contains(path) { return true }
            // Below a path gone from the source: gone too.
            var prefix = Substring(path)
            while let slash = prefix.lastIndex(of: "/") {
                prefix = prefix[..<slash]
                if gone.contains(String(prefix) + "/") { return true }
            }
            return false
        }
        var all = Set(found)
        for path in remembered where problem(path) == nil && !isForgotten(path) { all.insert(path) }
        let sorted = all.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var kept: [String] = []
        var notKept: [String] = []
        for path in sorted {
            if kept.count < maximumCount, path.utf8.count <= maximumPathBytes { kept.append(path) } else { notKept.append(path) }
        }
        return (kept, notKept)
    }

    /// The remembered paths as a tree of names, which the walk follows down along with the
    /// directories it opens (`MirrorDirectory.mounts`): nothing to look up per directory but
    /// one name in a small dictionary, and nothing at all off the remembered paths.
    final class Node: Sendable {
        /// The path from the source root (`""` for the root).
        let path: String
        /// Whether this path is a remembered mount point (not only above one).
        let isRemembered: Bool
        let children: [String: Node]

        private init(path: String, isRemembered: Bool, children: [String: Node]) {
            self.path = path
            self.isRemembered = isRemembered
            self.children = children
        }

        /// The tree of `paths` (those with a `problem` left out); nil for none.
        static func tree(_ paths: [String]) -> Node? {
            let valid = paths.filter { problem($0) == nil }
            guard !valid.isEmpty else { return nil }
            return build("", valid.map { $0.split(separator: "/").map(String.init) })
        }

        private static func build(_ path: String, _ paths: [[String]]) -> Node {
            var below: [String: [[String]]] = [:]
            var isRemembered = false
            for names in paths {
                guard let first = names.first else {
                    isRemembered = true
                    continue
                }
                below[first, default: []].append(Array(names.dropFirst()))
            }
            var children: [String: Node] = [:]
            for (name, rest) in below { children[name] = build(path.isEmpty ? name : path + "/" + name, rest) }
            return Node(path: path, isRemembered: isRemembered && !path.isEmpty, children: children)
        }
    }
}
