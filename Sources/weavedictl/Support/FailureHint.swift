import WeaveDI
import WeaveDIControl

/// A sentence for people after a varlink error reply: what the error means and what to do.
/// What it quotes from the reply (a name weavedictl was given, a reason) has its control
/// characters escaped, so that it can neither start a line of its own nor reach the terminal.
enum FailureHint {
    /// The hint for `failure`, a reply to `method`, if there is one.
    static func hint(for failure: VarlinkFailure, method: String) -> String? {
        let short = failure.name.split(separator: ".").last.map(String.init) ?? failure.name
        switch short {
        case "NoSuchCheck":
            return "No health check is named \(quotedName(of: failure)); `weavedictl health` lists them."
        case "NoSuchJob":
            return "No job is named \(quotedName(of: failure)); `weavedictl jobs` lists them."
        case "NoSuchTag":
            let tags = quotedList("tags", of: failure)
            let known = quotedList("known", of: failure)
            return "No health check has the tag\(tags.count == 1 ? "" : "s") \(tags.joined(separator: ", ")); the daemon's "
                + "checks have the tags \(known.isEmpty ? "(none)" : known.joined(separator: ", "))."
        case "InvalidParameter":
            return invalidParameter(parameter("parameter", of: failure), reason: optionalParameter("reason", of: failure), method: method)
        case "ReloadRefused":
            return "The daemon refused the new configuration and keeps the previous one: \(refusal(parameter("reason", of: failure)))"
        case "NotReady":
            return "The daemon is not ready: \(parameter("reason", of: failure)); `weavedictl ping` answers while it starts."
        case "CallTimedOut":
            let advice = method.hasSuffix(".RunJob") ? " Use `weavedictl run-job NAME --wait` for long runs." : ""
            return "The call took longer than the daemon's control.callTimeout.\(advice)"
        case "LimitExceeded":
            return limitExceeded(failure)
        case "MethodNotFound", "MethodNotImplemented", "InterfaceNotFound":
            return "The daemon does not offer this; is it an older version than weavedictl?"
        default:
            return nil
        }
    }

    /// Whether `failure` is the daemon refusing the connection for want of a place
    /// (`LimitExceeded` for `clients` or `clients per user`): the daemon cannot be used now,
    /// as when it is not reachable (exit 69), which says nothing of what was asked.
    static func refusesConnection(_ failure: VarlinkFailure) -> Bool {
        guard failure.name.split(separator: ".").last == "LimitExceeded" else { return false }
        let limit = optionalParameter("limit", of: failure)
        return limit == "clients" || limit == "clients per user"
    }

    /// What the limit is, and what to do: for the connection places, wait until some close.
    private static func limitExceeded(_ failure: VarlinkFailure) -> String {
        let limit = optionalParameter("limit", of: failure)
        let value = failure.parameters.first { $0.0 == "value" }?.1.intValue.map { ": \($0)" } ?? ""
        switch limit {
        case "clients":
            return "The daemon refused the connection: it has as many clients connected as it takes "
                + "(control.maxClients\(value); one place in eight, if any, is kept for administrators). Try again once some have closed."
        case "clients per user":
            return "The daemon refused the connection: your user has as many connections open as one user who is no "
                + "administrator may have (control.maxClientsPerUser\(value)). Try again once some have closed."
        default:
            return "The daemon refused the connection: its '\(parameter("limit", of: failure))' limit was exceeded."
        }
    }

    /// The daemon's `reason`, when it gives one, says what is allowed (`expected an integer from
    /// 1 to 500, got 1000000`).
    private static func invalidParameter(_ name: String, reason: String?, method: String) -> String {
        switch name {
        case "level":
            return "The daemon does not know that log level; levels: "
                + LogLevel.allCases.map(\.rawValue).joined(separator: ", ") + " (the WeaveDI library's). "
                + "The daemon's own lines (trace, debug, info, notice, warning, error) follow its filter: "
                + "weavedictl log-level --filter debug, or --filter info,sync=debug for one subsystem."
        case "filter":
            return "The daemon could not parse that filter; it looks like WEAVEDID_LOG: "
                + "a level, then subsystem=level pairs (info,sync=debug)."
        default:
            return "The daemon refused the parameter '\(name)' of \(method)" + (reason.map { ": " + $0 } ?? "") + "."
        }
    }

    /// The reason of a `ReloadRefused`: the daemon sends it bare; an older one wrapped it in the
    /// words it logs (`reload refused: …; keeping the previous configuration`), which the hint
    /// already says, and which are taken off.
    static func refusal(_ reason: String) -> String {
        var text = Substring(reason)
        let prefix = "reload refused: ", suffix = "; keeping the previous configuration"
        if text.hasPrefix(prefix) { text = text.dropFirst(prefix.count) }
        if text.hasSuffix(suffix) { text = text.dropLast(suffix.count) }
        return String(text)
    }

    /// `failure` for a message, `name {parameters}`: its string parameters quoted and, past 60
    /// characters, shortened with their length, as the name weavedictl was given comes back in
    /// them (a job name of 100 KB makes no message of 100 KB), but for `reason` and `message`,
    /// the daemon's explanation, which is shown whole. Control characters are escaped.
    static func shown(_ failure: VarlinkFailure) -> String {
        guard !failure.parameters.isEmpty else { return failure.name.escapingControlCharacters }
        let members = failure.parameters.map { name, value in
            let shown = switch (name, value) {
            case ("reason", _), ("message", _): value.serialized
            case let (_, .string(text)): JSONValue.quotedForMessage(text)
            case let (_, .array(items)) where items.allSatisfy({ $0.stringValue != nil }):
                // The tags weavedictl was given come back in `NoSuchTag`: shortened likewise.
                "[" + items.compactMap(\.stringValue).map(JSONValue.quotedForMessage).joined(separator: ",") + "]"
            default: value.serialized
            }
            return JSONValue.string(name).serialized + ":" + shown
        }
        return (failure.name + " {" + members.joined(separator: ",") + "}").escapingControlCharacters
    }

    /// The `name` parameter of a `NoSuchJob` or `NoSuchCheck`: the name weavedictl was given,
    /// quoted, shortened past 60 characters with its length, its control characters escaped.
    private static func quotedName(of failure: VarlinkFailure) -> String {
        guard let value = failure.parameters.first(where: { $0.0 == "name" })?.1 else { return "?" }
        return (value.stringValue.map(JSONValue.quotedForMessage) ?? value.serialized).escapingControlCharacters
    }

    /// The strings of the array parameter `name` of `failure`, each quoted and shortened as
    /// `quotedName` does; what is no string is shown as JSON.
    private static func quotedList(_ name: String, of failure: VarlinkFailure) -> [String] {
        let items = failure.parameters.first(where: { $0.0 == name })?.1.arrayValue ?? []
        return items.map { ($0.stringValue.map(JSONValue.quotedForMessage) ?? $0.serialized).escapingControlCharacters }
    }

    /// The string parameter `name` of `failure`, or its JSON text, or "?", with its control
    /// characters escaped.
    private static func parameter(_ name: String, of failure: VarlinkFailure) -> String {
        optionalParameter(name, of: failure) ?? "?"
    }

    /// The string parameter `name` of `failure`, or its JSON text, or nil, with its control
    /// characters escaped.
    private static func optionalParameter(_ name: String, of failure: VarlinkFailure) -> String? {
        guard let value = failure.parameters.first(where: { $0.0 == name })?.1 else { return nil }
        return (value.stringValue ?? value.serialized).escapingControlCharacters
    }
}
