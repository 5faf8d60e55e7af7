/// The options every subcommand shares, like an `@OptionGroup` of swift-argument-parser:
/// `--socket PATH`, `--json` and `--no-color`.
struct GlobalOptions: Equatable {
    /// `--socket PATH`: the control socket, overriding `WEAVEDI_SOCKET` and discovery.
    var socket: String?
    /// `--json`: compact JSON on standard output instead of tables.
    var json = false
    /// `--no-color`: never colour, even on a terminal.
    var noColor = false
    /// `--timeout SECONDS`: how long to wait for the daemon; nil when not given, `.zero` for
    /// no limit.
    var timeout: Duration?

    /// How long to wait for the daemon when `--timeout` is not given: well over the daemon's
    /// default `control.callTimeout` (10 s), after which it answers a call itself.
    static let defaultTimeout: Duration = .seconds(30)
    /// The longest `--timeout` (a day).
    static let maximumTimeout = 86_400.0

    /// The wait for each reply: `--timeout`, else `standard`; nil for no limit.
    func replyTimeout(standard: Duration? = defaultTimeout) -> Duration? {
        guard let timeout else { return standard }
        return timeout == .zero ? nil : timeout
    }

    /// The global options' names, as `ArgumentReader.shared(_:inline:)` reads them.
    static let names: Set<String> = ["--socket", "--timeout", "--json", "--no-color"]

    /// The synopsis of the global options.
    static let synopsis = "[--socket PATH] [--timeout SECONDS] [--json] [--no-color]"

    /// The help text describing the global options.
    static let help = """
        Global options (before or after the subcommand):
          --socket PATH   the daemon's control socket; default $WEAVEDI_SOCKET, else the first
                          that exists of $RUNTIME_DIRECTORY/control.sock,
                          $XDG_RUNTIME_DIR/weavedi/control.sock, ./.weavedi/run/control.sock
                          and /run/weavedi/control.sock
          --timeout SECONDS
                          how long to wait for the daemon to take the connection and for each
                          reply (default 30; 0 waits for ever; run-job --wait has no limit
                          unless given); the daemon answers a call itself, with an error,
                          after its control.callTimeout (10 s by default)
          --json          print the result as compact JSON (never coloured)
          --no-color      no colours, even on a terminal (so do NO_COLOR=1 and TERM=dumb)
          -h, --help      show help (weavedictl SUBCOMMAND --help for a subcommand)
        """

    /// Whether to colour output: only on a terminal, never for JSON, `--no-color`,
    /// a non-empty `NO_COLOR` (see no-color.org) or `TERM=dumb`.
    func usesColor(environment: [String: String], isTerminal: Bool) -> Bool {
        guard isTerminal, !json, !noColor else { return false }
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
        return environment["TERM"] != "dumb"
    }
}
