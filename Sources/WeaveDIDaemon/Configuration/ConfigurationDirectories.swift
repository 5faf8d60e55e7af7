/// The directory rules for defaults, and the lexical path operations the validator needs.
///
/// Runtime directory: the first entry of `$RUNTIME_DIRECTORY` (systemd passes a
/// colon-separated list), else `$XDG_RUNTIME_DIR/weavedi`, else
/// `<workingDirectory>/.weavedi/run`. State directory: the first entry of `$STATE_DIRECTORY`,
/// else `<workingDirectory>/.weavedi/state`. An empty or relative value counts as unset.
enum ConfigurationDirectories {
    /// The runtime directory the environment selects.
    static func runtime(environment: [String: String], workingDirectory: String) -> String {
        runtime(environment: environment) ?? join(workingDirectory, ".weavedi/run")
    }

    /// The runtime directory `RUNTIME_DIRECTORY` or `XDG_RUNTIME_DIR` selects; nil when neither
    /// does, and the working directory's is used.
    static func runtime(environment: [String: String]) -> String? {
        if let directory = firstAbsoluteEntry(environment["RUNTIME_DIRECTORY"]) { return directory }
        return firstAbsoluteEntry(environment["XDG_RUNTIME_DIR"], splitting: false).map { join($0, "weavedi") }
    }

    /// The state directory the environment selects.
    static func state(environment: [String: String], workingDirectory: String) -> String {
        firstAbsoluteEntry(environment["STATE_DIRECTORY"]) ?? join(workingDirectory, ".weavedi/state")
    }

    /// The first colon-separated entry of `value` (or all of it), if it is a non-empty absolute path.
    static func firstAbsoluteEntry(_ value: String?, splitting: Bool = true) -> String? {
        guard let value else { return nil }
        let entry = splitting ? String(value.split(separator: ":", omittingEmptySubsequences: false)[0]) : value
        return entry.hasPrefix("/") ? entry : nil
    }

    /// `base` and `relative` joined by exactly one slash.
    static func join(_ base: String, _ relative: String) -> String {
        var trimmed = Substring(base)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        return trimmed == "/" ? "/" + relative : trimmed + "/" + relative
    }

    /// The components of the absolute `path` after collapsing `//`, `.`, `..` and trailing
    /// slashes, without looking at the file system (`..` at the root stays at the root).
    static func normalizedComponents(_ path: String) -> [Substring] {
        var components: [Substring] = []
        for component in path.split(separator: "/") {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        return components
    }

    /// Whether the absolute paths `a` and `b` name the same place spelled differently only by
    /// doubled slashes, `.` components and a trailing slash (`/srv/state/`, `/srv//./state`);
    /// a `..` is compared as it is written, as it may go up from a symbolic link.
    static func sameSpelling(_ a: String, _ b: String) -> Bool {
        func components(_ path: String) -> [Substring] { path.split(separator: "/").filter { $0 != "." } }
        return components(a).elementsEqual(components(b)) { $0.utf8.elementsEqual($1.utf8) }
    }

    /// The lexically normalized form of the absolute `path`, such as `/a/c` for `/a//b/../c/`.
    static func normalized(_ path: String) -> String {
        "/" + normalizedComponents(path).joined(separator: "/")
    }

    /// Whether `inner` is `outer` itself (`.same`), strictly below it (`.inside`), or neither,
    /// comparing normalized components byte for byte.
    static func relation(of inner: String, to outer: String) -> PathRelation {
        relation(of: normalizedComponents(inner), to: normalizedComponents(outer))
    }

    /// `relation(of:to:)` for paths already split into their normalized components
    /// (`normalizedComponents`), for a path compared with many others.
    static func relation(of inner: [Substring], to outer: [Substring]) -> PathRelation {
        guard inner.count >= outer.count else { return .unrelated }
        for (a, b) in zip(inner, outer) where !a.utf8.elementsEqual(b.utf8) {
            return .unrelated
        }
        return inner.count == outer.count ? .same : .inside
    }

    /// How two paths relate lexically.
    enum PathRelation: Equatable {
        case same
        case inside
        case unrelated
    }
}
