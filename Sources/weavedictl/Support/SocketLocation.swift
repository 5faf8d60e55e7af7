import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Where the daemon's control socket is, and how that was decided.
///
/// The order is the daemon's own: `--socket PATH`, else `$WEAVEDI_SOCKET`, else the first of
/// these that exists: `$RUNTIME_DIRECTORY/control.sock` (its first entry, as systemd passes a
/// colon-separated list), `$XDG_RUNTIME_DIR/weavedi/control.sock`,
/// `<working directory>/.weavedi/run/control.sock`, `/run/weavedi/control.sock`. When none
/// exists the last candidate is used, so that the error names it. As in the daemon, an empty or
/// relative directory variable counts as unset.
struct SocketLocation: Equatable {
    /// How the path was chosen.
    enum Origin: Equatable {
        /// `--socket PATH`.
        case option
        /// `$WEAVEDI_SOCKET`.
        case environment
        /// The first existing candidate, or the last one.
        case discovered
    }

    /// The socket's path.
    var path: String
    /// How it was chosen.
    var origin: Origin
    /// The candidates looked at, in order (only for `.discovered`).
    var candidates: [String] = []
    /// Where each candidate comes from, in the same order (`RUNTIME_DIRECTORY`...), for a
    /// message about the path chosen.
    var sources: [String] = []

    /// Where a discovered path comes from: `$RUNTIME_DIRECTORY/control.sock`,
    /// `$XDG_RUNTIME_DIR/weavedi/control.sock`, `the working directory's
    /// .weavedi/run/control.sock` or `the system socket`; nil for another origin.
    var source: String? {
        guard origin == .discovered, let index = candidates.firstIndex(of: path), index < sources.count else { return nil }
        return sources[index]
    }

    /// The environment variables the socket is found by.
    static let environmentNames: Set<String> = ["WEAVEDI_SOCKET", "RUNTIME_DIRECTORY", "XDG_RUNTIME_DIR"]

    /// The system-wide socket, under systemd's `RuntimeDirectory=weavedi`.
    static let systemSocket = "/run/weavedi/control.sock"

    /// Locates the socket; `exists` tells whether a path exists (tests substitute it).
    static func locate(
        explicit: String?, environment: [String: String], workingDirectory: String,
        exists: (String) -> Bool = SocketLocation.exists
    ) -> SocketLocation {
        if let explicit { return SocketLocation(path: explicit, origin: .option) }
        if let path = environment["WEAVEDI_SOCKET"], !path.isEmpty { return SocketLocation(path: path, origin: .environment) }
        let found = sourcedCandidates(environment: environment, workingDirectory: workingDirectory)
        let candidates = found.map(\.path)
        let path = candidates.first(where: exists) ?? candidates[candidates.count - 1]
        return SocketLocation(path: path, origin: .discovered, candidates: candidates, sources: found.map(\.source))
    }

    /// The candidates that apply in `environment`, in the order they are tried.
    static func candidates(environment: [String: String], workingDirectory: String) -> [String] {
        sourcedCandidates(environment: environment, workingDirectory: workingDirectory).map(\.path)
    }

    /// The candidates with where each comes from.
    private static func sourcedCandidates(environment: [String: String], workingDirectory: String) -> [(path: String, source: String)] {
        var candidates: [(path: String, source: String)] = []
        if let runtime = environment["RUNTIME_DIRECTORY"],
            let first = runtime.split(separator: ":", omittingEmptySubsequences: false).first, first.hasPrefix("/")
        {
            candidates.append((join(String(first), "control.sock"), "$RUNTIME_DIRECTORY/control.sock"))
        }
        if let base = environment["XDG_RUNTIME_DIR"], base.hasPrefix("/") {
            candidates.append((join(base, "weavedi/control.sock"), "$XDG_RUNTIME_DIR/weavedi/control.sock"))
        }
        if workingDirectory.hasPrefix("/") {
            candidates.append((join(workingDirectory, ".weavedi/run/control.sock"), "./.weavedi/run/control.sock in the working directory"))
        }
        candidates.append((systemSocket, "the system socket"))
        return candidates
    }

    /// Whether something exists at `path` (a dangling symbolic link does not count).
    static func exists(_ path: String) -> Bool {
        (try? FileStatus(path: path, followSymlinks: true)) != nil
    }

    /// The path for a message: its control characters escaped (it comes from the command line
    /// or the environment), and cut past 4,096 characters as every path a message shows.
    var shownPath: String { JSONValue.shortenedPathForMessage(path).escapingControlCharacters }

    /// A line saying where else weavedictl looked, for the "cannot connect" message.
    var searchNote: String {
        switch origin {
        case .option: ""
        case .environment: "(the path comes from WEAVEDI_SOCKET)\n"
        case .discovered:
            // The candidates before the one chosen, which do not exist (the chosen one may).
            Self.missingNote(Array(candidates.prefix { $0 != path }))
        }
    }

    /// `(A does not exist)`, `(none of A, B exists)`, or nothing.
    private static func missingNote(_ missing: [String]) -> String {
        switch missing.count {
        case 0: ""
        case 1: "(\(missing[0].escapingControlCharacters) does not exist)\n"
        default: "(none of \(missing.joined(separator: ", ").escapingControlCharacters) exists)\n"
        }
    }

    /// `base` and `relative` joined by exactly one slash.
    private static func join(_ base: String, _ relative: String) -> String {
        var trimmed = Substring(base)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        return trimmed == "/" ? "/" + relative : trimmed + "/" + relative
    }
}
