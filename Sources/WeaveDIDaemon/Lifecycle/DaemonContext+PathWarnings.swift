import WeaveDI
import WeaveDIPosix

extension DaemonContext {
    /// Whether the daemon runs as a systemd service, the process its unit started: the unit's
    /// sandbox (`ProtectSystem=strict`, `ProtectHome=yes`, `PrivateTmp=yes`) then shapes what
    /// its paths are, and messages about them say so (`SandboxAdvice`). `INVOCATION_ID` alone
    /// does not tell: every process a unit starts inherits it (a terminal run as a user
    /// service, tmux, a CI runner, `systemd-run`), so a `--check-config` run by hand from one
    /// would speak of a sandbox it is not in. `SYSTEMD_EXEC_PID` (systemd 248 and later; the
    /// unit wants 252) names the process systemd started, which `exec` keeps: it must be this
    /// one.
    var runsUnderSystemd: Bool {
        guard let invocation = environment["INVOCATION_ID"], !invocation.isEmpty,
            let exec = environment["SYSTEMD_EXEC_PID"], let pid = Int32(exec, radix: 10)
        else { return false }
        return pid == CurrentProcess.id
    }

    /// The path warnings of `configuration` (`DaemonConfiguration.fileSystemWarnings`, what
    /// `--check-config` prints), looked at as the daemon sees its paths, within the step limit
    /// (`StepDeadline`): the error when a path did not answer in time. `atReload`: worded for a
    /// reload in effect.
    func pathWarnings(of configuration: DaemonConfiguration, atReload: Bool = false) async -> Result<[String], ConfigurationError> {
        let underSystemd = runsUnderSystemd
        do {
            return .success(
                try await StepDeadline.run(
                    limit: StepDeadline.stepLimit, first: LoadStep.checking(file: configuration.sourceName),
                    for: "a check of the configuration's paths"
                ) { note throws(ConfigurationError) in
                    try configuration.fileSystemWarnings(underSystemd: underSystemd, atReload: atReload, noting: note)
                })
        } catch {
            return .failure(error)
        }
    }

    /// Logs `warnings` (`pathWarnings(of:)`) as warnings of subsystem `config`, each led by the
    /// configuration's file as `--check-config` leads them, the first
    /// `DaemonConfiguration.pathWarningsShown` and then one line counting the others; a check
    /// that did not finish is one warning saying so. Returns how many warnings there are.
    @discardableResult
    func logPathWarnings(_ warnings: Result<[String], ConfigurationError>, of configuration: DaemonConfiguration) -> Int {
        let source = configuration.sourceName
        switch warnings {
        case let .success(warnings):
            for warning in DaemonConfiguration.shownPathWarnings(warnings) { log.warning("config", "\(source): \(warning)") }
            return warnings.count
        case let .failure(error):
            log.warning("config", "\(source): the configuration's paths could not all be looked at: \(error); they are not warned about")
            return 0
        }
    }
}
