import WeaveDI
import WeaveDIControl

/// What the control protocol needs from the sync jobs.
public protocol JobControl: Sendable {
    /// The jobs, as `io.weavedi.Daemon.Job` objects.
    func jobs() async -> [JSONValue]
    /// Starts a run of `name` and waits for its end, reporting its id once it is launched
    /// (`.started`, or `.queued` while it waits for a slot, then `.started` once it has one)
    /// and `Progress` objects on the way; returns the `JobRun` object.
    func run(
        _ name: String, started: @escaping @Sendable (JobStart) -> Void, progress: @escaping @Sendable (JSONValue) -> Void
    ) async throws(VarlinkFailure) -> JSONValue
    /// Starts a run of `name` and returns at once, while the run goes on.
    func start(_ name: String) async throws(VarlinkFailure) -> JobStart
    /// Pauses or resumes `name`: what came of it.
    func setPaused(_ name: String, _ paused: Bool) async throws(VarlinkFailure) -> PauseChange
    /// Metric lines in the Prometheus text format.
    func metrics() async -> String
}

/// What a pause or a resume did: whether the job already was so (nothing changed, and nothing
/// is logged), and why the state file, written either way, could not take it (the change holds
/// until the daemon stops), nil once it did.
public struct PauseChange: Sendable, Equatable {
    public var unchanged: Bool
    public var notSaved: String?

    public init(unchanged: Bool, notSaved: String?) {
        self.unchanged = unchanged
        self.notSaved = notSaved
    }
}

/// What asking for a run without waiting for it did.
public enum JobStart: Sendable, Equatable {
    /// A run started; its id.
    case started(String)
    /// A run was launched but waits for a slot (`sync.maxConcurrentRuns` runs are going); its
    /// id, the runs going and the cap. It starts once one of them ends.
    case queued(String, runsGoing: Int, maxConcurrentRuns: Int)
    /// No run started: the `skipped` `JobRun` object says why (a run already going, the
    /// daemon stopping).
    case notStarted(JSONValue)

    /// The interface's `SlotWait` object (`RunJob`'s and `ListJobs`' `queued`): the runs going
    /// and the cap.
    static func slotWait(runsGoing: Int, maxConcurrentRuns: Int) -> JSONValue {
        .object([("runsGoing", .int(runsGoing)), ("maxConcurrentRuns", .int(maxConcurrentRuns))])
    }
}

extension VarlinkFailure {
    /// `io.weavedi.Daemon.NoSuchJob`.
    static func noSuchJob(_ name: String) -> VarlinkFailure {
        VarlinkFailure("io.weavedi.Daemon.NoSuchJob", [("name", .string(name))])
    }

    /// `io.weavedi.Daemon.NoSuchCheck`.
    static func noSuchCheck(_ name: String) -> VarlinkFailure {
        VarlinkFailure("io.weavedi.Daemon.NoSuchCheck", [("name", .string(name))])
    }

    /// `io.weavedi.Daemon.NoSuchTag`: `tags`, given, that no check has; `known`, those the
    /// checks have.
    static func noSuchTag(_ tags: [String], known: [String]) -> VarlinkFailure {
        VarlinkFailure("io.weavedi.Daemon.NoSuchTag", [
            ("tags", .array(tags.map(JSONValue.string))), ("known", .array(known.map(JSONValue.string))),
        ])
    }

    /// `io.weavedi.Daemon.NotReady`: the call reads what the daemon's start has not made yet,
    /// and `reason` says why it cannot wait for it (still starting at the call's time limit,
    /// the start failed, a shutdown ended it).
    static func notReady(_ reason: String) -> VarlinkFailure {
        VarlinkFailure("io.weavedi.Daemon.NotReady", [("reason", .string(reason))])
    }

    /// `io.weavedi.Daemon.PermissionDenied`: `method` is not for the peer's `uid`.
    static func permissionDenied(_ method: String, uid: UInt32) -> VarlinkFailure {
        VarlinkFailure("io.weavedi.Daemon.PermissionDenied", [("method", .string(method)), ("uid", .int(Int(uid)))])
    }
}
