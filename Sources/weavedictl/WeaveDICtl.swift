import WeaveDIControl
import WeaveDIDaemon

/// The root command: global options, then one of the subcommands listed here.
enum WeaveDICtl {
    /// Every subcommand, in the order the help lists them.
    static var subcommands: [any CtlCommand.Type] {
        [
            PingCommand.self, HealthCommand.self, CheckCommand.self, FixCommand.self, FixesCommand.self,
            JobsCommand.self, RunJobCommand.self, PauseJobCommand.self, ResumeJobCommand.self,
            SessionsCommand.self, RegistrationsCommand.self, DiagnoseComponentsCommand.self, CheckCyclesCommand.self,
            LogLevelCommand.self, MetricsCommand.self, ReloadCommand.self, VersionCommand.self,
        ]
    }

    /// `weavedictl --help`.
    static var help: String {
        let width = subcommands.map { $0.configuration.name.count }.max() ?? 0
        let list = subcommands.map { command in
            let configuration = command.configuration
            return "  " + configuration.name + String(repeating: " ", count: width - configuration.name.count + 2)
                + configuration.abstract
        }
        return """
            usage: weavedictl \(GlobalOptions.synopsis) SUBCOMMAND [ARGS]

            Controls weavedid, the WeaveDI daemon, over its varlink control socket.

            Subcommands:
            \(list.joined(separator: "\n"))

            \(GlobalOptions.help)
              --version       print weavedictl's version and exit

            Exit status: 0 ok; 1 not healthy, issues or cycles found, a fix or job that failed, or
            an error from the daemon; 64 usage error; 69 daemon unreachable, without a place for
            another client, or no reply in time; 74 output not written; 75 a job paused or resumed,
            but not saved in the daemon's state file; 77 permission denied; 78 invalid
            configuration (offline diagnostics).
            """
    }

    /// Runs the command line `arguments` (without the program name); returns the exit status:
    /// 74 when standard output could not be written, whatever the command found.
    /// `environmentNotUTF8` names the variables left out of `environment` for not being UTF-8.
    static func main(
        arguments: [String], environment: [String: String], environmentNotUTF8: [String] = [], workingDirectory: String,
        isTerminal: Bool
    ) async -> Int32 {
        let status = await run(
            arguments: arguments, environment: environment, environmentNotUTF8: environmentNotUTF8,
            workingDirectory: workingDirectory, isTerminal: isTerminal)
        guard let failure = Terminal.outputFailure else { return status }
        Terminal.error("weavedictl: cannot write to standard output: \(failure)")
        return ExitStatus.output
    }

    private static func run(
        arguments: [String], environment: [String: String], environmentNotUTF8: [String], workingDirectory: String,
        isTerminal: Bool
    ) async -> Int32 {
        var reader = ArgumentReader(arguments)
        do {
            guard let command = try parseRoot(&reader) else { return ExitStatus.ok }
            // A variable that finds the socket cannot just be left out: another socket would be
            // found. Only a parsed --socket makes it unused (not "--socket" as another
            // option's value or after `--`).
            if reader.options.socket == nil, let name = environmentNotUTF8.first(where: SocketLocation.environmentNames.contains) {
                Terminal.error("weavedictl: the environment variable \(name) is not valid UTF-8, and text would turn its path into another path; give the socket with --socket PATH")
                return ExitStatus.usage
            }
            let context = CtlContext(
                options: reader.options, environment: environment, workingDirectory: workingDirectory, isTerminal: isTerminal)
            return try await command.run(in: context)
        } catch let error as UsageError {
            Terminal.error(CtlError.usage(error).message + "\n" + (error.command?.usageHint ?? rootUsageHint))
            return ExitStatus.usage
        } catch let error as CtlError {
            if case let .usage(usage) = error {
                Terminal.error(error.message + "\n" + (usage.command?.usageHint ?? rootUsageHint))
            } else {
                Terminal.error(error.message)
            }
            return error.status
        } catch {
            Terminal.error("weavedictl: \(String(describing: error).escapingControlCharacters)")
            return ExitStatus.failure
        }
    }

    /// Reads the root's options and the subcommand; nil when help or the version was printed.
    private static func parseRoot(_ reader: inout ArgumentReader) throws(UsageError) -> (any CtlCommand)? {
        while let token = reader.next() {
            switch token {
            case .option("--help", nil), .option("-h", nil):
                Terminal(colors: false).line(help)
                return nil
            case .option("--version", nil):
                Terminal(colors: false).line("weavedictl \(DaemonVersion.current)")
                return nil
            case let .option(name, value):
                try reader.shared(name, inline: value)
            case let .argument(name):
                return try parseSubcommand(name, &reader)
            }
        }
        throw UsageError(message: "missing subcommand", command: nil)
    }

    private static func parseSubcommand(_ name: String, _ reader: inout ArgumentReader) throws(UsageError) -> (any CtlCommand)? {
        if name == "help" {
            // Global options may stand here as anywhere (`help --json ping`): they are read, a
            // mistake in one said as such, and change nothing (help is text, never JSON).
            var topic: (any CtlCommand.Type)?
            while let token = reader.next() {
                switch token {
                // `help --help`: help about help is the general help; `help ping --help`
                // asks for the same help twice: it gets it once.
                case .option("--help", nil), .option("-h", nil): continue
                case let .option(option, value) where GlobalOptions.names.contains(option):
                    try reader.shared(option, inline: value)
                case let .option(text, _) where topic == nil, let .argument(text) where topic == nil:
                    guard let command = subcommand(named: text) else {
                        throw UsageError(message: "no help for '\(text)': not a subcommand", command: nil)
                    }
                    topic = command
                case let .option(text, _), let .argument(text):
                    throw UsageError(message: "help takes one subcommand name; unexpected '\(text)'", command: nil)
                }
            }
            Terminal(colors: false).line(topic?.configuration.help ?? help)
            return nil
        }
        guard let type = subcommand(named: name) else {
            throw UsageError(message: "unknown subcommand '\(name)'", command: nil)
        }
        // `--help` anywhere asks for help, except as an option's value (`--tag -h`) or after
        // `--`: the subcommand's own parse tells them apart. A command line it cannot read
        // still gets the help when it names `--help` anywhere, so the mistake is not what
        // the user sees first.
        let rest = reader.remaining
        reader.command = type.configuration
        let command: any CtlCommand
        do {
            command = try type.init(parsing: &reader)
        } catch {
            guard ArgumentReader.asksForHelp(rest) else { throw error }
            Terminal(colors: false).line(type.configuration.help)
            return nil
        }
        if reader.helpRequested {
            Terminal(colors: false).line(type.configuration.help)
            return nil
        }
        return command
    }

    private static func subcommand(named name: String) -> (any CtlCommand.Type)? {
        subcommands.first { $0.configuration.name == name }
    }

    private static var rootUsageHint: String {
        "usage: weavedictl \(GlobalOptions.synopsis) SUBCOMMAND [ARGS]\n"
            + "Subcommands: " + subcommands.map { $0.configuration.name }.joined(separator: ", ") + ".\n"
            + "Run `weavedictl --help` for more."
    }
}
