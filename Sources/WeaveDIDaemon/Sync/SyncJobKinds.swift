import WeaveDI

/// Makes a job from its configuration.
public typealias SyncJobMaker = @Sendable (_ job: DaemonConfiguration.Job, _ container: WeaveDI.Container) throws -> any SyncJob

/// The job kinds the daemon knows, by name. `mirror` is built in; a daemon built on
/// `WeaveDIDaemon` can add more before it starts.
public enum SyncJobKinds {
    private static let makers = Locked<[String: SyncJobMaker]>([:])

    /// Adds (or replaces) the kind `name`.
    public static func register(_ name: String, maker: @escaping SyncJobMaker) {
        makers.withLock { $0[name] = maker }
    }

    /// The kinds added with `register`, besides the built-in `mirror`.
    static var registeredNames: [String] {
        makers.withLock { Array($0.keys) }.filter { $0 != "mirror" }
    }

    /// The maker of kind `name`.
    static func maker(for name: String) -> SyncJobMaker? {
        makers.withLock { $0[name] }
    }
}

/// A job that could not be made: every run fails with the reason.
struct UnavailableJob: SyncJob {
    let reason: String

    func run(_ context: SyncRunContext) async -> SyncOutcome {
        SyncOutcome(result: .failed, message: reason)
    }
}
