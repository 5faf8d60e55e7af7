/// The varlink interfaces weavedid serves, in varlink's interface language.
public enum DaemonInterface {
    /// `io.weavedi.Daemon`.
    public static let name = "io.weavedi.Daemon"

    /// Methods that only read: open to whoever may connect. Every other method of the interface
    /// needs uid 0, the daemon's uid, or an admin, so that a method added later is closed until
    /// it is listed here.
    public static let readingMethods: Set<String> = [
        "Ping", "GetHealth", "RunChecks", "ListFixes", "ListJobs", "ListSessions", "ListRegistrations",
        "DiagnoseComponents", "CheckCycles", "GetLogLevel", "GetMetrics",
    ]

    /// Every method's full name (`io.weavedi.Daemon.Ping`, `org.varlink.service.GetInfo`), read
    /// from the two descriptions.
    public static let methodNames: Set<String> = {
        var names: Set<String> = []
        for (interface, text) in [(name, description), ("org.varlink.service", serviceDescription)] {
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ", maxSplits: 1)
                guard words.count == 2, words[0] == "method", let open = words[1].firstIndex(of: "(") else { continue }
                names.insert(interface + "." + words[1][..<open])
            }
        }
        return names
    }()

    /// The description of `io.weavedi.Daemon`.
    public static let description = """
        # Control of weavedid, the WeaveDI daemon: health and auto-fix, sync jobs, sessions,
        # the dependency graph, logging and metrics. Methods that change something (Fix, RunJob,
        # PauseJob, ResumeJob, SetLogLevel, Reload) need uid 0, the daemon's own uid, or a
        # configured admin user or group.
        interface io.weavedi.Daemon

        # The state of one health check. Times are seconds since the Unix epoch.
        type Check (
          name: string,
          tags: []string,
          status: ?string,
          message: string,
          data: [string]string,
          duration: float,
          lastRun: ?float,
          lastSuccess: ?float,
          lastFailure: ?float,
          consecutiveFailures: int,
          fixable: bool,
          fixesTried: int,
          fixHeldBack: ?string,
          fixInProgress: ?string,
          breaker: string
        )

        # Overall health: the worst status and a score from 0 to 100.
        type Health (status: string, score: int, takenAt: float, checks: []Check)

        # One fix attempt. outcome: succeeded (the check, run again at once, passes), failed
        # (the fix threw, or the check still fails after it), timedOut, refused, inProgress (the
        # fix started a remedy, such as a job's run, that goes on while the check still fails;
        # the Check's fixInProgress says so until it ends), or notApplicable (the fix had nothing
        # to do; only by hand: an automatic one is not recorded, the Check's fixHeldBack says
        # why); a client should show any other as it is.
        type FixAttempt (
          time: float,
          check: string,
          trigger: string,
          outcome: string,
          message: string,
          error: ?string,
          duration: float
        )

        # An open WeaveDI session: one per control connection and per job run.
        type Session (
          id: string,
          kind: string,
          uid: ?int,
          gid: ?int,
          pid: ?int,
          age: float,
          instances: int,
          requests: int
        )

        # One registration of the daemon's container, with what its factory resolved.
        type Registration (type: string, scope: string, module: string, dependencies: []string, built: bool)

        # A duplicate provider, scope drift or scope mismatch (kind: duplicateProvider,
        # scopeDrift, scopeMismatch).
        type ComponentIssue (type: string, kind: string, providers: []string, detail: string)

        # One run of a sync job. A run RunJob asked for that could not start (result "skipped": a
        # run of the job already going or waiting for a slot, the daemon stopping) never was: its
        # id is null, and goingRunId names the run that kept it from starting (null if none).
        type JobRun (
          id: ?string,
          job: string,
          result: string,
          startedAt: float,
          endedAt: ?float,
          duration: ?float,
          filesCopied: int,
          filesUpdated: int,
          filesDeleted: int,
          filesSkipped: int,
          errors: int,
          bytes: int,
          message: ?string,
          failedItems: ?[]FailedItem,
          goingRunId: ?string
        )

        # An item of a run that failed, its path relative to the job's root; a run keeps its
        # first 20 (JobRun.errors counts them all).
        type FailedItem (path: string, reason: string)

        # Why a run asked for waits before it starts: the runs going (sync.maxConcurrentRuns of them,
        # or more after a reload lowered it), and the cap.
        type SlotWait (runsGoing: int, maxConcurrentRuns: int)

        # Progress of a running job. Done counts what was done (copied, checked, skipped with a
        # warning), not the items that failed: a run with errors ends short of its totals.
        # filesSkipped counts those of filesDone skipped with a warning (a file that changed while
        # being copied or vanished, a special file, a reserved temporary name): not copied, the
        # bytes of one skipped during its copy are in neither bytesDone nor bytesTotal.
        # filesFailed counts the files (not directories) that failed so far, each an error of the run.
        # Both optional, as a daemon before them sends none (this one always does).
        type Progress (filesDone: int, filesSkipped: ?int, filesFailed: ?int, filesTotal: int, bytesDone: int, bytesTotal: int)

        # A configured sync job. running is true while a run of it is going or waits for a slot;
        # queued (null otherwise) says that it waits, with the runs going and the cap now.
        # removedRunStopping is the id of a run of a job of the same name that a reload removed,
        # while it stops (null otherwise): until it ends, RunJob answers skipped, and a tick of
        # this job's timer is counted in skippedRuns, its run starting once that run has ended.
        type Job (
          name: string,
          kind: string,
          enabled: bool,
          paused: bool,
          running: bool,
          queued: ?SlotWait,
          removedRunStopping: ?string,
          interval: float,
          consecutiveFailures: int,
          skippedRuns: int,
          nextRunIn: ?float,
          lastRun: ?JobRun,
          mirror: ?MirrorSettings
        )

        # A mirror job's settings (null for a job of another kind): workers as its runs use it.
        type MirrorSettings (
          source: string,
          destination: string,
          compare: string,
          delete: bool,
          durable: bool,
          workers: int,
          destinationMountPoint: bool
        )

        # Answers at once: the daemon is alive.
        method Ping() -> (version: string, pid: int, uptime: float)

        # The last known health, without running the checks (all, or those with any of the
        # tags; a tag no check has is refused, NoSuchTag).
        method GetHealth(tags: ?[]string) -> (health: Health)

        # Runs the checks now (all, or those with any of the tags, refused as for GetHealth);
        # starts no fix.
        method RunChecks(tags: ?[]string) -> (health: Health)

        # Runs the fix of one check, or of every failing check with a fix. A fix of a check whose
        # fix is running waits for that one to end; when it healed the check, or started a remedy
        # that goes on, it is not run again.
        method Fix(check: ?string) -> (fixes: []FixAttempt)

        # Fix attempts recorded, newest last.
        method ListFixes(limit: ?int) -> (fixes: []FixAttempt)

        # The configured sync jobs.
        method ListJobs() -> (jobs: []Job)

        # Starts a run of a job and answers when it ends (within control.callTimeout). With
        # "more", a first reply names the run (runId) as soon as it is launched (with queued while
        # it waits for a slot, then a reply without queued once it has started), then progress
        # replies (each with runId) follow until the final reply (run). With detach: true, the
        # answer comes at once and the run goes on without the call: runId names it, and queued
        # (absent for a run that started) says that it waits for a slot, and why; a run that
        # cannot start (already going, the daemon stopping) is a "skipped" run, as without it.
        method RunJob(name: string, detach: ?bool) -> (run: ?JobRun, progress: ?Progress, runId: ?string, queued: ?SlotWait)

        # Stops scheduling a job (a run in progress finishes). The pause is kept in the state
        # file (jobs.json), so that it outlives a restart; when that file cannot be written,
        # notSaved says why: the pause holds until the daemon stops, and a restart resumes the job.
        # unchanged is true when the job already was paused: nothing changed (the file is written
        # all the same); absent otherwise.
        method PauseJob(name: string) -> (notSaved: ?string, unchanged: ?bool)

        # Schedules a paused job again: a job due (its last run never ended or was cancelled, or
        # its next run came while it was paused) runs at once, any other at the next run it had.
        # notSaved as for PauseJob (a restart would pause it again); unchanged is true when the job
        # was not paused.
        method ResumeJob(name: string) -> (notSaved: ?string, unchanged: ?bool)

        # The open sessions.
        method ListSessions() -> (sessions: []Session)

        # The dependency graph of the daemon's container.
        method ListRegistrations() -> (registrations: []Registration)

        # Duplicate providers, scope drift, and scope mismatches among the dependencies recorded
        # so far (the container.graph check builds every registration).
        method DiagnoseComponents() -> (issues: []ComponentIssue)

        # Dependency cycles, each from its smallest name, among the edges recorded so far;
        # notBuilt: the registrations never built, whose dependencies are unknown (a cycle
        # through one cannot be seen), sorted. The container.graph check builds every
        # registration; with the health loop on, its first round runs before READY=1.
        method CheckCycles() -> (componentCount: int, edgeCount: int, cycles: [][]string, notBuilt: []string)

        # The library log level and the daemon's log filter (WEAVEDID_LOG syntax).
        method GetLogLevel() -> (level: string, filter: string)

        # Changes the library log level and/or the daemon's log filter.
        method SetLogLevel(level: ?string, filter: ?string) -> (level: string, filter: string)

        # Metrics in the Prometheus text exposition format.
        method GetMetrics() -> (text: string)

        # Reloads the configuration file, as SIGHUP does.
        method Reload() -> (status: string)

        # The caller may not call this method.
        error PermissionDenied (method: string, uid: int)

        # No health check has this name.
        error NoSuchCheck (name: string)

        # No job has this name.
        error NoSuchJob (name: string)

        # No health check has these tags (the first 10 given so), of GetHealth's or RunChecks';
        # known: the tags the checks have.
        error NoSuchTag (tags: []string, known: []string)

        # The new configuration was refused; the previous one stays in effect.
        error ReloadRefused (reason: string)

        # The daemon has not finished starting, and the call reads what the start makes (the
        # jobs, the health checks): it was still starting at the call's time limit, its start
        # failed, or a shutdown ended it. The reason says which.
        error NotReady (reason: string)

        # The call ran longer than the configured limit.
        error CallTimedOut (method: string, seconds: float)

        # A limit was exceeded: "message size" (bytes), "clients", "clients per user", "idle"
        # (seconds).
        error LimitExceeded (limit: string, value: int)
        """

    /// The standard `org.varlink.service` description.
    public static let serviceDescription = """
        # The Varlink Service Interface is provided by every varlink service. It
        # describes the service and the interfaces it implements.
        interface org.varlink.service

        # Get a list of all the interfaces a service provides and information
        # about the implementation.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # Get the description of an interface that is implemented by this service.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # The requested interface was not found.
        error InterfaceNotFound (interface: string)

        # The requested method was not found
        error MethodNotFound (method: string)

        # The interface defines the requested method, but the service does not
        # implement it.
        error MethodNotImplemented (method: string)

        # One of the passed parameters is invalid.
        error InvalidParameter (parameter: string)

        # Client is denied access
        error PermissionDenied ()

        # Method is expected to be called with 'more' set to true, but wasn't
        error ExpectedMore ()
        """
}
