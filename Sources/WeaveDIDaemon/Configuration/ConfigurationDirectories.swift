import WeaveDI

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

    /// The directory variables in `environment` that are set but ignored because their value (its
    /// first entry) is a relative path (`RUNTIME_DIRECTORY`, `STATE_DIRECTORY`, and
    /// `XDG_RUNTIME_DIR` when `RUNTIME_DIRECTORY` selects no directory), in that order. An empty
    /// value counts as unset and is not named.
    static func relativeVariables(environment: [String: String]) -> [String] {
        func ignored(_ name: String, splitting: Bool = true) -> Bool {
            guard let value = environment[name], !value.isEmpty else { return false }
            return firstAbsoluteEntry(value, splitting: splitting) == nil
        }
        var names: [String] = []
        if ignored("RUNTIME_DIRECTORY") { names.append("RUNTIME_DIRECTORY") }
        if ignored("STATE_DIRECTORY") { names.append("STATE_DIRECTORY") }
        if firstAbsoluteEntry(environment["RUNTIME_DIRECTORY"]) == nil, ignored("XDG_RUNTIME_DIR", splitting: false) {
            names.append("XDG_RUNTIME_DIR")
        }
        return names
    }

    /// The warnings, one per variable `relativeVariables` names, shaped as the one about a
    /// `WEAVEDID_LOG` that is no filter: the variable, its value quoted, what is wrong, what is
    /// used instead (`STATE_DIRECTORY="state" is a relative path: ignored; using
    /// "/srv/.weavedi/state" for the state directory where the configuration sets no
    /// stateDirectory`). With the `configuration` loaded, only those of the variables it would
    /// use: not `STATE_DIRECTORY` where it sets `stateDirectory`, nor the runtime directory's
    /// where it sets `runtimeDirectory` or `control.socket`.
    static func relativeVariableWarnings(
        environment: [String: String], workingDirectory: String, configuration: DaemonConfiguration? = nil
    ) -> [String] {
        relativeVariables(environment: environment).filter { name in
            guard let configuration else { return true }
            if name == "STATE_DIRECTORY" { return !configuration.stateDirectoryIsSet }
            return configuration.socketOrigin != .controlSocket && configuration.socketOrigin != .runtimeDirectory
        }.map { name in
            let value = environment[name] ?? ""
            let quoted = JSONValue.quotedPathForMessage(value)
            let first = String(value.split(separator: ":", omittingEmptySubsequences: false)[0])
            let problem = name != "XDG_RUNTIME_DIR" && first != value
                ? "\(name)=\(quoted) starts with a relative path (\(JSONValue.quotedPathForMessage(first)))"
                : "\(name)=\(quoted) is a relative path"
            let instead: String
            switch name {
            case "STATE_DIRECTORY":
                instead = "using \(JSONValue.quotedPathForMessage(state(environment: environment, workingDirectory: workingDirectory))) "
                    + "for the state directory where the configuration sets no stateDirectory"
            default:
                let runtime = runtime(environment: environment, workingDirectory: workingDirectory)
                let origin = self.runtime(environment: environment) != nil ? " (from XDG_RUNTIME_DIR)" : ""
                instead = "using \(JSONValue.quotedPathForMessage(runtime))\(origin) for the runtime directory (the control "
                    + "socket's) where the configuration sets neither runtimeDirectory nor control.socket"
            }
            return "\(problem): ignored; \(instead)"
        }
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
