/// A subcommand of weavedictl, in the manner of swift-argument-parser's `ParsableCommand`:
/// a static configuration, a parser for its own arguments, and `run`.
protocol CtlCommand {
    /// Name, one-line abstract, synopsis and help.
    static var configuration: CommandConfiguration { get }

    /// Parses the arguments after the subcommand's name. Options it does not define go to
    /// `reader.shared(_:inline:)`, which takes the global options and refuses the rest.
    init(parsing reader: inout ArgumentReader) throws(UsageError)

    /// Does the work; returns the exit status (0, or 1 for a finding such as "unhealthy").
    func run(in context: CtlContext) async throws(CtlError) -> Int32
}

/// The description of a subcommand, for dispatch, usage lines and `--help`.
struct CommandConfiguration: Equatable {
    /// The subcommand's name, e.g. `run-job`.
    var name: String
    /// One line for the list of subcommands.
    var abstract: String
    /// The arguments after the name, e.g. `NAME [--wait]`.
    var arguments: String = ""
    /// Options, details and examples for `--help`.
    var discussion: String = ""
    /// The varlink method called, for the help text.
    var method: String?

    /// `usage: weavedictl [global options] NAME ARGUMENTS`.
    var usage: String {
        "usage: weavedictl \(GlobalOptions.synopsis) \(name)" + (arguments.isEmpty ? "" : " " + arguments)
    }

    /// The full help text.
    var help: String {
        var text = usage + "\n\n" + abstract
        if let method { text += "\nCalls io.weavedi.Daemon.\(method)." }
        if !discussion.isEmpty { text += "\n\n" + discussion }
        return text + "\n\n" + GlobalOptions.help
    }

    /// What follows a usage error: the usage line and where to find more.
    var usageHint: String {
        usage + "\nRun `weavedictl \(name) --help` for more."
    }
}

extension CtlCommand {
    /// Parses a subcommand that takes no arguments of its own.
    static func parseNothing(_ reader: inout ArgumentReader) throws(UsageError) {
        while let token = reader.next() {
            switch token {
            case let .option(name, value): try reader.shared(name, inline: value)
            case let .argument(argument): throw reader.unexpected(argument)
            }
        }
    }
}
