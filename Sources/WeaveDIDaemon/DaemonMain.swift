import Glibc
import WeaveDI
import WeaveDIPosix
import WeaveDIControl

/// The daemon's entry point; `weavedid`'s `main` is `DaemonMain.prepareProcess()` then
/// `exit(DaemonMain.run(arguments:))`.
public enum DaemonMain {
    /// Exit status for a bad configuration (sysexits' EX_CONFIG); systemd's unit does not
    /// restart on it.
    public static let exitConfigurationError: Int32 = 78
    /// Exit status for a configuration that could not be loaded because a file system did not
    /// answer (sysexits' EX_TEMPFAIL): not the file's fault, so systemd restarts the daemon.
    public static let exitTemporaryFailure: Int32 = 75
    /// The start's (and `--check-config`'s) exit status when the configuration cannot be loaded:
    /// 75 when a file system did not answer in time (`ETIMEDOUT`, see `StepDeadline`), else 78.
    public static func exitStatus(for error: ConfigurationError) -> Int32 {
        error.errno == ETIMEDOUT ? exitTemporaryFailure : exitConfigurationError
    }

    /// Exit status for a command-line mistake (EX_USAGE).
    public static let exitUsage: Int32 = 64
    /// Exit status when what was asked for could not be written to standard output (EX_IOERR).
    public static let exitOutputError: Int32 = 74

    /// The signals the main loop handles; blocked in every thread. SIGUSR1 and SIGUSR2 are
    /// read only to be ignored, said in the log: their default action ends the process, and a
    /// stray `kill -USR1` (meant for another program, or for log rotation) must not.
    static let handledSignals: SignalSet = [.terminate, .interrupt, .hangup, .user1, .user2]

    /// Blocks the handled signals and ignores SIGPIPE. Call first thing in `main`, before any
    /// thread exists, so that every thread inherits the mask and a signal can only arrive
    /// through the main loop's signalfd: a SIGTERM right after start never kills the process.
    /// Descriptors 0 to 2 found closed are opened on `/dev/null` first: a socket or a file the
    /// daemon opens later must never take one of their numbers and receive its log lines.
    public static func prepareProcess() {
        CurrentProcess.openClosedStandardDescriptors()
        _ = try? handledSignals.blockInCurrentThread()
        try? Signal.ignoreBrokenPipe()
    }

    /// Runs the daemon; returns the exit status.
    public static func run(arguments: [String]) -> Int32 {
        let options: CommandLineOptions
        switch CommandLineOptions.parse(Array(arguments.dropFirst())) {
        case let .success(parsed): options = parsed
        case let .failure(error):
            printError("weavedid: \(error)\n\(CommandLineOptions.usageHint)")
            return exitUsage
        }
        // Only the daemon's main loop reads the blocked signals (its signalfd): a check, the
        // help and the version have none, and would run on past a Ctrl-C or a SIGTERM (a check
        // of many jobs for seconds), then exit 0. They end by the signal instead, as any
        // command does, and a signal that came while the signals were blocked ends them now.
        if options.help || options.version || options.checkConfig {
            restoreDefaultSignalActions()
        }
        if options.help {
            return printOutput(CommandLineOptions.usage)
        }
        if options.version {
            return printOutput("weavedid \(DaemonVersion.current)")
        }
        // Before anything opens descriptors: a deep mirror tree needs more than the usual 1024.
        let descriptorLimit = DescriptorLimit.raiseSoftLimit()
        let environment = CurrentProcess.environment()
        // Before the process opens a descriptor of its own (the notify socket, the wake pipe):
        // one at a number LISTEN_FDS counts would pass for a passed socket.
        let activationResult = Result { () throws(SocketActivation.Problem) in
            try SocketActivation.take(environment: environment, pid: CurrentProcess.id)
        }
        let log = DaemonLog(filter: logFilter(environment), journald: DaemonLog.journaldIsReading(environment: environment))
        // The library's lines go to the daemon's log first, so that what the environment flags
        // say of themselves (a value not understood) is a line of it, with its timestamp or
        // journald priority. The health service starts the loop, at the configured interval,
        // once its checks are in.
        log.adoptLibraryLogging()
        WeaveDIConfiguration.applyFromEnvironment(healthLoopInterval: nil)
        // Threads left stuck on a file system that does not answer, and their return, if ever.
        StuckThreads.shared.report { event in
            switch event {
            case let .stuck(message): log.warning("daemon", message)
            case let .returned(message): log.notice("daemon", message)
            }
        }
        // The library's variables are its to report (it did, above, with what it accepts).
        for name in CurrentProcess.environmentNotUTF8() where isRead(name) && !WeaveDIConfiguration.variableNames.contains(name) {
            let why = pathVariables.contains(name) ? " (as text, a path in it would name another path)" : ""
            log.warning("daemon", "environment variable \(name.escapingControlCharacters) is not valid UTF-8: ignored\(why)")
        }
        if CurrentProcess.workingDirectory() == nil {
            log.notice("daemon", "the working directory cannot be read as UTF-8 text: the default paths under it are relative (./.weavedi/...)")
        }
        if let problem = logFilterProblem(environment) { log.warning("daemon", problem) }
        let notifier = SystemdNotifier(environment: environment, log: log)
        if let problem = notifier.problem { log.warning("daemon", problem) }
        if let problem = WatchdogSettings.problem(environment: environment, pid: CurrentProcess.id) { log.warning("daemon", problem) }
        let waker: Waker
        do { waker = try Waker() } catch {
            log.error("daemon", "cannot create the wake pipe: \(error)")
            return 1
        }
        let activation: SocketActivation?
        do {
            activation = try activationResult.get()
        } catch {
            log.error("daemon", "socket activation: \(error)")
            notifier.notify("STATUS=socket activation: \(error)")
            return 1
        }
        if let warning = activation?.unservedWarning(serving: "control") { log.warning("daemon", warning) }
        let context = DaemonContext(
            environment: environment, workingDirectory: currentDirectory(), configPath: options.configPath,
            log: log, notifier: notifier, activation: activation, waker: waker)
        let configuration: DaemonConfiguration
        // A relative directory variable is ignored as if unset: said, with what is used instead,
        // where the configuration would use it (one that sets the directory uses none).
        func warnAboutRelativeVariables(_ configuration: DaemonConfiguration?) {
            for warning in ConfigurationDirectories.relativeVariableWarnings(
                environment: environment, workingDirectory: currentDirectory(), configuration: configuration)
            {
                log.warning("daemon", warning)
            }
        }
        do {
            configuration = try context.loadConfiguration()
            warnAboutRelativeVariables(configuration)
        } catch {
            // Which the file would have used is not known: all of them, before the error.
            warnAboutRelativeVariables(nil)
            if options.checkConfig {
                // Said once, as the check's answer (as for every other finding of the check).
                printError("weavedid: \("\(error)".escapingControlCharacters)")
            } else {
                log.error("config", "\(error)")
                notifier.notify("STATUS=configuration error: \(error)", "ERRNO=\(error.errno)")
            }
            return exitStatus(for: error)
        }
        if options.checkConfig {
            // The path as given (and what it quotes) may hold control characters: escaped.
            let source = configuration.sourceName.escapingControlCharacters
            // What the file cannot say by itself: whether its group exists on this machine (the
            // start stops without it), and its administrators (the start warns and goes on).
            if let group = configuration.control.socketGroup {
                do { _ = try ControlSocketBinder.groupID(group, file: configuration.sourceName) } catch {
                    // The refusal names the file first, as the start's and a reload's do.
                    printError("weavedid: \(error.description.escapingControlCharacters)")
                    return exitConfigurationError
                }
            }
            // Paths the daemon starts without, but whose absence fails runs or writes until they
            // are there: warnings, looked at within the step limit, as the load's paths.
            let onDisk: [String]
            do {
                onDisk = try StepDeadline.run(
                    limit: StepDeadline.stepLimit, first: LoadStep.checking(file: configuration.sourceName),
                    for: "a check of the configuration's paths"
                ) { note throws(ConfigurationError) in
                    // The start fails where it cannot make or write in its own directories: an
                    // error (78), as the start's (`StateDirectoryLock`, `ControlSocketBinder`).
                    try configuration.checkStartDirectories(noting: note)
                    return try configuration.fileSystemWarnings(underSystemd: context.runsUnderSystemd, noting: note)
                }
            } catch {
                printError("weavedid: \("\(error)".escapingControlCharacters)")
                return exitStatus(for: error)
            }
            // Past the first few path warnings, one line counts the others; the verdict, all.
            let accounts = AdminAccounts(configuration.control).warnings
            for warning in accounts + DaemonConfiguration.shownPathWarnings(onDisk) {
                printError("weavedid: warning: \(source): \(warning.escapingControlCharacters)")
            }
            let count = accounts.count + onDisk.count
            let noted = count == 0 ? "" : count == 1 ? ", with 1 warning" : ", with \(count) warnings"
            return printOutput("weavedid: configuration OK\(noted) (\(source))")
        }
        let signals: SignalReader
        do {
            signals = try SignalReader(signals: handledSignals)
        } catch {
            log.error("daemon", "cannot create the signalfd: \(error)")
            return 1
        }
        // The directories it uses, wherever they came from (the file, the environment, the
        // working directory), and the socket it serves: the one systemd passed, if any.
        let socket = context.passedControlSocketPath.map { "\(JSONValue.quotedPathForMessage($0)) (passed by systemd)" }
            ?? JSONValue.quotedPathForMessage(configuration.control.socket)
        log.info("daemon", "weavedid \(DaemonVersion.current) starting (pid \(CurrentProcess.id), configuration: \(configuration.filePath.map { JSONValue.quotedPathForMessage($0) } ?? DaemonConfiguration.builtInDefaultName)); "
            + "state directory \(JSONValue.quotedPathForMessage(configuration.stateDirectory)), control socket \(socket)")
        // Before anything touches the state directory (or binds the socket): a second daemon on
        // it would run the same jobs and remove the first one's writes in progress. Held until
        // the process exits; `--check-config` never comes here.
        // A socket another daemon listens on refuses the start (`ControlSocketBinder`); asked
        // first, so that such a start makes no state directory nor lock file. It only
        // connects: the socket is still bound after the lock, and refused there too.
        if activation == nil, let refusal = ControlSocketBinder.liveSocketRefusal(configuration.control.socket) {
            log.error("daemon", "control: \(refusal)")
            notifier.notify("STATUS=failed: control: \(refusal)", "ERRNO=\(EADDRINUSE)")
            return 1
        }
        let stateLock: StateDirectoryLock
        do {
            stateLock = try StateDirectoryLock.acquire(directory: configuration.stateDirectory)
        } catch {
            log.error("daemon", "\(error)")
            notifier.notify("STATUS=failed: \(error)", "ERRNO=\(error.errno)")
            return error.exitStatus
        }
        DescriptorLimit.log(descriptorLimit, to: log)
        let supervisor = Supervisor(context: context, configuration: configuration, stateLock: stateLock)
        let loop = MainLoop(
            signals: signals, context: context, supervisor: supervisor,
            watchdog: WatchdogSettings(environment: environment, pid: CurrentProcess.id))
        return loop.run()
    }

    /// Gives the handled signals their default action (SIGPIPE stays ignored) and unblocks
    /// them in the calling thread: a pending one ends the process here. For the modes that do
    /// not run the main loop (`--check-config`, `--help`, `--version`).
    static func restoreDefaultSignalActions() {
        for signal in handledSignals.signals { try? signal.restoreDefaultAction() }
        _ = try? handledSignals.unblockInCurrentThread()
    }

    /// The warning about a `WEAVEDID_LOG` that is no filter, shaped as the library's about a
    /// `WEAVEDI_*` value: the variable, its value quoted, what is wrong, what is used instead
    /// (`WEAVEDID_LOG="info,sync=loud" is not valid ("sync=loud": unknown level "loud"); using
    /// info everywhere`); nil when it is unset, empty (which counts as unset, as an empty
    /// `WEAVEDI_*` or directory variable does: `Environment=WEAVEDID_LOG=` unsets it) or a filter.
    static func logFilterProblem(_ environment: [String: String]) -> String? {
        guard let text = environment["WEAVEDID_LOG"], !text.isEmpty, case let .failure(error) = LogFilter.parse(text) else { return nil }
        // A value of one entry is not quoted twice.
        let problem = error.part == text ? error.problem : error.description
        return "WEAVEDID_LOG=\(JSONValue.quotedForMessage(text)) is not valid (\(problem)); using info everywhere"
    }

    static func logFilter(_ environment: [String: String]) -> LogFilter {
        guard let text = environment["WEAVEDID_LOG"], !text.isEmpty else { return .standard }
        return (try? LogFilter.parse(text).get()) ?? .standard
    }

    /// Writes `text` and a newline to standard output; 0, or `exitOutputError` (said on
    /// standard error) when standard output did not take it all (`--version > /dev/full`): a
    /// script that reads the answer must not take a status 0 for one.
    static func printOutput(_ text: String) -> Int32 {
        do {
            try FileDescriptor.standardOutput.writeAll((text + "\n").utf8)
            return 0
        } catch {
            printError("weavedid: cannot write to standard output: \(error)")
            return exitOutputError
        }
    }

    /// Writes `text` and a newline to standard error.
    public static func printError(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { _ = try? FileDescriptor.standardError.writeAll(UnsafeRawBufferPointer($0)) }
    }

    /// The variables weavedid reads that hold a path.
    static let pathVariables: Set<String> = ["NOTIFY_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "XDG_RUNTIME_DIR"]

    /// Whether weavedid (or the library) reads the environment variable `name`.
    static func isRead(_ name: String) -> Bool {
        name.hasPrefix("WEAVEDI") || name.hasPrefix("LISTEN_") || name.hasPrefix("WATCHDOG_")
            || name == "JOURNAL_STREAM" || pathVariables.contains(name)
    }

    static func currentDirectory() -> String {
        CurrentProcess.workingDirectory() ?? "."
    }
}
