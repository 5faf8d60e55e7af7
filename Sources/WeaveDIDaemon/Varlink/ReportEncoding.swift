import WeaveDI

/// The library's reports as the JSON shapes of `io.weavedi.Daemon`.
enum ReportEncoding {
    static func optional(_ value: Double?) -> JSONValue { value.map(JSONValue.double) ?? .null }
    static func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    static func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }

    static func health(_ report: HealthReport) -> JSONValue {
        .object([
            ("status", .string(report.status.rawValue)), ("score", .int(report.score)),
            ("takenAt", .double(report.takenAt)), ("checks", .array(report.checks.map(check))),
        ])
    }

    static func check(_ check: CheckReport) -> JSONValue {
        .object([
            ("name", .string(check.name)), ("tags", strings(check.tags)),
            ("status", optional(check.status?.rawValue)), ("message", .string(check.message)),
            ("data", .object(check.data.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            ("duration", .double(check.duration)), ("lastRun", optional(check.lastRun)),
            ("lastSuccess", optional(check.lastSuccess)), ("lastFailure", optional(check.lastFailure)),
            ("consecutiveFailures", .int(check.consecutiveFailures)), ("fixable", .bool(check.fixable)),
            ("fixesTried", .int(check.fixesTried)), ("fixHeldBack", optional(check.fixHeldBack)),
            ("fixInProgress", optional(check.fixInProgress)),
            ("breaker", .string(breaker(check.breaker))),
        ])
    }

    static func breaker(_ state: BreakerState) -> String {
        switch state {
        case .closed: "closed"
        case .open: "open"
        case .halfOpen: "half-open"
        }
    }

    static func fix(_ record: FixRecord) -> JSONValue {
        .object([
            ("time", .double(record.time)), ("check", .string(record.check)), ("trigger", .string(record.trigger.rawValue)),
            ("outcome", .string(record.outcome.rawValue)), ("message", .string(record.message)),
            ("error", optional(record.error)), ("duration", .double(record.duration)),
        ])
    }

    static func session(_ session: Session) -> JSONValue {
        func id(_ key: String) -> JSONValue { session.attributes[key].flatMap { Int($0) }.map(JSONValue.int) ?? .null }
        let age = ContinuousClock.now - session.openedAt
        return .object([
            ("id", .string(session.id)), ("kind", .string(session.attributes["kind"] ?? "other")),
            ("uid", id("uid")), ("gid", id("gid")), ("pid", id("pid")),
            ("age", .double(seconds(age))),
            ("instances", .int(session.instanceCount)), ("requests", .int(session.openRequests.count)),
        ])
    }

    static func registration(_ registration: WeaveDI.Registration) -> JSONValue {
        .object([
            ("type", .string(registration.type)), ("scope", .string(registration.scope.rawValue)),
            ("module", .string(registration.module)), ("dependencies", strings(registration.dependencies)),
            ("built", .bool(registration.isBuilt)),
        ])
    }

    static func issue(_ issue: ComponentIssue) -> JSONValue {
        .object([
            ("type", .string(issue.type)), ("kind", .string(issue.kind.rawValue)),
            ("providers", strings(issue.providers)), ("detail", .string(issue.detail)),
        ])
    }
}
