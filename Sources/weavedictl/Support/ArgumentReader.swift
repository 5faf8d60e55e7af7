import WeaveDI
import WeaveDIDaemon

/// Reads a command line token by token, in the manner of swift-argument-parser but by hand:
/// `--name VALUE`, `--name=VALUE`, flags, positional arguments and `--` (everything after it
/// is positional). Global options (`--socket`, `--json`, `--no-color`) are accepted before
/// and after the subcommand's name and collected in `options`.
struct ArgumentReader {
    /// One piece of the command line.
    enum Token: Equatable {
        /// `--name` or `-x`, with the value after `=` if one was given inline.
        case option(String, value: String?)
        /// A positional argument.
        case argument(String)
    }

    private let arguments: [String]
    private var position = 0
    private var onlyArguments = false
    /// The global options seen so far.
    var options = GlobalOptions()
    /// The subcommand being parsed, for error messages; nil while reading the root's options.
    var command: CommandConfiguration?
    /// Whether `--help` or `-h` was read as an option (not as an option's value, nor after
    /// `--`). `next()` skips it, so a subcommand's parser never sees it.
    private(set) var helpRequested = false
    /// The values of the options that may be given once, by option, as first given.
    private var given: [String: String] = [:]

    /// A reader over `arguments` (without the program name).
    init(_ arguments: [String]) {
        self.arguments = arguments
    }

    /// The arguments not read yet (led by `--` if one was read).
    var remaining: [String] {
        let rest = Array(arguments[position...])
        return onlyArguments ? ["--"] + rest : rest
    }

    /// The next token, or nil at the end.
    mutating func next() -> Token? {
        guard position < arguments.count else { return nil }
        let argument = arguments[position]
        position += 1
        if onlyArguments { return .argument(argument) }
        if argument == "--" {
            onlyArguments = true
            return next()
        }
        if command != nil, argument == "--help" || argument == "-h" {
            helpRequested = true
            return next()
        }
        if argument.hasPrefix("--"), argument.count > 2 {
            if let equals = argument.firstIndex(of: "=") {
                return .option(String(argument[..<equals]), value: String(argument[argument.index(after: equals)...]))
            }
            return .option(argument, value: nil)
        }
        if argument.hasPrefix("-"), argument.count > 1 { return .option(argument, value: nil) }
        return .argument(argument)
    }

    /// The value of `option`: the inline one, else the next argument. A next argument that
    /// starts with `--` is an option the user forgot the value before (`--tag --json`), not the
    /// value: such a value is given inline (`--tag=--json`).
    mutating func value(of option: String, inline: String?) throws(UsageError) -> String {
        let value: String
        if let inline {
            value = inline
        } else {
            guard position < arguments.count else { throw error("\(option) needs a value") }
            let next = arguments[position]
            guard !next.hasPrefix("--") else {
                throw error("\(option) needs a value, but '\(next)' follows it; "
                    + "a value that starts with -- is given as \(option)=VALUE")
            }
            value = next
            position += 1
        }
        guard !value.isEmpty else { throw error("\(option) needs a non-empty value") }
        return value
    }

    /// The value of `option`, an option that may be given once (`--socket`, `--timeout`,
    /// `--limit`...): a second one is refused rather than taken over the first, as which socket
    /// or limit a command uses must not depend on which of two a script or an alias put last.
    /// (A repeatable option, such as `--tag`, reads `value(of:inline:)`; a flag given twice
    /// says the same thing twice, and is taken.)
    mutating func onceValue(of option: String, inline: String?) throws(UsageError) -> String {
        let value = try value(of: option, inline: inline)
        if let first = given[option] {
            // Shortened only as paths are: two long socket paths may differ in their last part.
            throw error("\(option) given twice (\(JSONValue.quotedPathForMessage(first)), then \(JSONValue.quotedPathForMessage(value))); "
                + "give it once")
        }
        given[option] = value
        return value
    }

    /// Checks that the flag `option` was not given a value (`--wait=yes`).
    func flag(_ option: String, inline: String?) throws(UsageError) {
        if inline != nil { throw error("\(option) takes no value") }
    }

    /// Handles an option the subcommand does not define itself: a global option, or an error.
    /// A mistake in a global option is weavedictl's, not the subcommand's: it is said under
    /// `weavedictl:` with the root's usage wherever the option stands, before or after the
    /// subcommand, so that one mistake gets one message.
    mutating func shared(_ option: String, inline: String?) throws(UsageError) {
        if GlobalOptions.names.contains(option) {
            do { try global(option, inline: inline) } catch { throw UsageError(message: error.message, command: nil) }
            return
        }
        switch option {
        // Known, but not here: said so, rather than "unknown" for an option the help names.
        // `--version` is weavedictl's alone (each subcommand has its `--help`): a mistake in it
        // is said as one before the subcommand is, as a global option's.
        case "--help" where inline != nil:
            throw error("\(option) takes no value")
        case "--version" where inline != nil:
            throw UsageError(message: "--version takes no value", command: nil)
        case "--version":
            throw UsageError(message: "--version is weavedictl's own option: give it before any subcommand (weavedictl --version)", command: nil)
        default:
            throw error("unknown option '\(option)'")
        }
    }

    /// Reads the global option `option` (one of `GlobalOptions.names`).
    private mutating func global(_ option: String, inline: String?) throws(UsageError) {
        switch option {
        case "--socket": options.socket = try onceValue(of: option, inline: inline)
        case "--timeout":
            let text = try onceValue(of: option, inline: inline)
            guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= GlobalOptions.maximumTimeout,
                text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") })
            else {
                // Digits and a point only: `1e-10` lies in the range, but its exponent is refused.
                throw error("--timeout needs a number of seconds in decimal digits, such as 30 or 2.5 (no sign, no exponent), "
                    + "from 0 (no limit) to \(Int(GlobalOptions.maximumTimeout)); got '\(text.escapingControlCharacters)'")
            }
            // A wait too short to count in nanoseconds is the shortest one, not zero (no limit).
            let nanoseconds = Int64((seconds * 1e9).rounded())
            options.timeout = .nanoseconds(seconds > 0 ? max(1, nanoseconds) : 0)
        case "--json":
            try flag(option, inline: inline)
            options.json = true
        case "--no-color":
            try flag(option, inline: inline)
            options.noColor = true
        default:
            throw error("unknown option '\(option)'")
        }
    }

    /// A positional argument the subcommand has no place for.
    func unexpected(_ argument: String) -> UsageError {
        error("unexpected argument '\(argument)'")
    }

    /// A usage error about the subcommand being parsed.
    func error(_ message: String) -> UsageError {
        UsageError(message: message, command: command)
    }

    /// Whether `--help` or `-h` appears before a `--` among `arguments`, wherever it stands:
    /// for a command line that could not be read, where a help option may be an option's
    /// value or may come after the mistake.
    static func asksForHelp(_ arguments: some Sequence<String>) -> Bool {
        for argument in arguments {
            if argument == "--" { return false }
            if argument == "--help" || argument == "-h" { return true }
        }
        return false
    }
}

extension ArgumentReader {
    /// The options whose value is a path: an argument that is not valid UTF-8 there cannot be
    /// held as text without naming another file.
    static let pathOptions: Set<String> = ["--socket", "--config"]

    /// Whether the argument at `index` of `arguments` (without the program name) is the value of
    /// a path option (`--socket PATH`, `--socket=PATH`, `--config PATH`), not a name or another
    /// value (a job's or check's name, a tag, a level); after `--` every argument is a name.
    static func isPath(at index: Int, of arguments: [String]) -> Bool {
        guard !arguments[..<index].contains("--") else { return false }
        let argument = arguments[index]
        if pathOptions.contains(where: { argument.hasPrefix($0 + "=") }) { return true }
        return index > 0 && pathOptions.contains(arguments[index - 1])
    }

    /// The message for the argument at `index` that is not valid UTF-8 (`repaired`, as text),
    /// given the arguments after the program's path: a path (the program's own, index 0, or an
    /// option's value) is given through a link whose name is UTF-8; a name is no name the
    /// daemon knows, its names being UTF-8 text.
    static func notUTF8Message(index: Int, repaired: String, arguments: [String]) -> String {
        let head = CommandLineOptions.notUTF8(program: "weavedictl", index: index, repaired: repaired)
        if index == 0 || isPath(at: index - 1, of: arguments) {
            return head + CommandLineOptions.pathNotUTF8Advice
        }
        return head + "; it is a name or a value (of a job, a check, a tag, a level), not a path, and those the daemon "
            + "knows are UTF-8 text, as its configuration is: give the name as `weavedictl jobs` or `weavedictl health` shows it"
    }
}
