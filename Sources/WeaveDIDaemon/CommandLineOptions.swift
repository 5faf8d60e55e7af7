import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// `weavedid [--config PATH] [--check-config] [--version] [--help]`.
public struct CommandLineOptions: Sendable, Equatable {
    /// `--config PATH`.
    public var configPath: String?
    /// `--check-config`: validate and exit.
    public var checkConfig = false
    /// `--version`.
    public var version = false
    /// `--help`.
    public var help = false

    /// Options as given.
    public init(configPath: String? = nil, checkConfig: Bool = false, version: Bool = false, help: Bool = false) {
        self.configPath = configPath
        self.checkConfig = checkConfig
        self.version = version
        self.help = help
    }

    /// The one-line synopsis.
    public static let synopsis = "usage: weavedid [--config PATH] [--check-config] [--version] [--help]"

    /// What follows a usage error on standard error: the synopsis and where the help is, as
    /// weavedictl says it (the whole help would bury the error).
    public static let usageHint = synopsis + "\nRun `weavedid --help` for more."

    /// The usage text.
    public static let usage = """
        \(synopsis)

        Runs the WeaveDI daemon in the foreground (it never forks; systemd runs it as Type=notify).

          --config PATH    read the configuration from PATH (default: /etc/weavedi/weavedid.json
                           if it exists, else a built-in default that works in any directory)
          --check-config   validate the configuration, print the verdict and exit
                           (0 when valid, 78 when not, 75 when a file system it names
                           did not answer within 5 s; 74 when the verdict
                           cannot be written to standard output); warns of what runs
                           would meet (a missing source, destination root or metrics
                           directory, as the user running the check sees them)
          --version        print the version and exit
          --help           print this help and exit

        Environment: WEAVEDID_LOG (per-subsystem log filter, e.g. info,sync=debug),
        WEAVEDI_LOG_LEVEL, WEAVEDI_REGISTRY_*, WEAVEDI_INJECTED_ENV (see /etc/default/weavedid),
        XDG_RUNTIME_DIR (the default control socket is $RUNTIME_DIRECTORY/control.sock, else
        $XDG_RUNTIME_DIR/weavedi/control.sock, else ./.weavedi/run/control.sock), and systemd's
        NOTIFY_SOCKET, WATCHDOG_USEC, LISTEN_FDS, RUNTIME_DIRECTORY, STATE_DIRECTORY and
        JOURNAL_STREAM (log lines carry journald's <N> priorities when it names standard error).
        """

    /// A command-line mistake; exit status 64 (EX_USAGE).
    public struct UsageError: Error, Equatable, CustomStringConvertible {
        /// What is wrong.
        public var description: String
    }

    /// The usage error for `value`, the argument after `option`, when it starts with `--`: an
    /// option the value was forgotten before (`--config --check-config` would read a file
    /// named `--check-config`, and start the daemon rather than check), as weavedictl refuses
    /// it. Such a path is written `./--name`, or inline (`--config=--name`); nil for any other.
    static func optionTakenAsValue(of option: String, _ value: String) -> UsageError? {
        guard value.hasPrefix("--") else { return nil }
        let shown = JSONValue.quotedForMessage(value)
        let inline = JSONValue.quotedForMessage(option + "=" + value)
        return UsageError(description: "\(option) needs a path; got the option \(shown) (a path starting with -- must be written "
            + "\(JSONValue.quotedForMessage("./" + value)) or \(inline))")
    }

    /// Parses the arguments after the program name.
    public static func parse(_ arguments: [String]) -> Result<CommandLineOptions, UsageError> {
        var options = CommandLineOptions()
        var index = 0
        // A second `--config` is refused rather than taken over the first: which file the
        // daemon runs on must not depend on which of two a wrapper or a drop-in put last. Both
        // are quoted as every path from outside is, and as weavedictl says a repeated option.
        func setConfigPath(_ path: String) -> UsageError? {
            if let first = options.configPath {
                return UsageError(description: "--config given twice (\(JSONValue.quotedPathForMessage(first)), then "
                    + "\(JSONValue.quotedPathForMessage(path))); give it once")
            }
            options.configPath = path
            return nil
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--config":
                guard index + 1 < arguments.count, !arguments[index + 1].isEmpty else {
                    return .failure(UsageError(description: "--config needs a path"))
                }
                if let error = optionTakenAsValue(of: "--config", arguments[index + 1]) { return .failure(error) }
                if let error = setConfigPath(arguments[index + 1]) { return .failure(error) }
                index += 1
            case _ where argument.hasPrefix("--config="):
                let path = String(argument.dropFirst("--config=".count))
                guard !path.isEmpty else { return .failure(UsageError(description: "--config needs a path")) }
                if let error = setConfigPath(path) { return .failure(error) }
            case "--check-config": options.checkConfig = true
            case "--version": options.version = true
            case "--help", "-h": options.help = true
            default:
                // Quoted as any value from outside: escaped (an escape sequence reaches no
                // terminal) and cut, with its length, past 60 characters.
                return .failure(UsageError(description: "unknown argument \(JSONValue.quotedForMessage(argument))"))
            }
            index += 1
        }
        return .success(options)
    }
}

extension CommandLineOptions {
    /// The usage error for an argument of this process that is not valid UTF-8, or nil: such
    /// an argument cannot be held as text without turning into another path (`c\xFF.json`
    /// into `c\u{FFFD}.json`), which would then be read, checked or connected to instead.
    /// `program` leads the message (`weavedid`, `weavedictl`).
    public static func argumentNotUTF8(program: String) -> String? {
        guard let (index, repaired) = CurrentProcess.firstArgumentNotUTF8() else { return nil }
        return notUTF8(program: program, index: index, repaired: repaired) + pathNotUTF8Advice
    }

    /// `PROGRAM: argument N ("c\u{FFFD}.json" as text) is not valid UTF-8`: the argument at
    /// `index` as text (`repaired`, its bytes that are no UTF-8 each U+FFFD, shown as
    /// `\u{FFFD}`, control characters escaped; past 4,096 characters cut as a path a message
    /// shows is); what to do follows it.
    public static func notUTF8(program: String, index: Int, repaired: String) -> String {
        var shown = ""
        for scalar in JSONValue.shortenedPathForMessage(repaired).escapingControlCharacters.unicodeScalars {
            if scalar == "\u{FFFD}" { shown += "\\u{FFFD}" } else { shown.unicodeScalars.append(scalar) }
        }
        return "\(program): argument \(index) (\"\(shown)\" as text) is not valid UTF-8"
    }

    /// What to do about a path (`notUTF8`'s) that is not valid UTF-8.
    public static let pathNotUTF8Advice =
        ", and text would turn it into another path; give the path through a symbolic link, or a directory, whose name is UTF-8"
}
