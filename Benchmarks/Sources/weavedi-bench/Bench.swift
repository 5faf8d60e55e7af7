#if canImport(Glibc)
import Glibc
#endif
import WeaveDI

/// The command line.
struct Options {
    var quick = false
    var jsonPath: String?
    var only: Set<String>?
    var daemonPath: String?
    var root: String?
    var noBuild = false

    static let groups = ["injected", "container", "session", "bootstrap", "daemon", "control", "mirror"]

    static let usage = """
        usage: weavedi-bench [--quick] [--json PATH] [--only GROUP[,GROUP…]] [--daemon PATH] [--no-build] [--root DIR]

          --quick          fewer, shorter samples (a smoke check, under a minute)
          --json PATH      also write the figures as JSON to PATH
          --only GROUPS    run only these groups: \(groups.joined(separator: ", "))
          --daemon PATH    the weavedid to measure (default: build it with
                           `swift build -c release --product weavedid` in the package root)
          --no-build       do not build the daemon; use the package root's release build
          --root DIR       the WeaveDI package root (default: the directory above Benchmarks/)

               weavedi-bench --profile NAME [ITERATIONS]
          runs one read-path loop untimed, for valgrind --tool=callgrind or perf
          (NAME: \(Profile.names.joined(separator: ", ")))

        Every figure is reported with its median and spread over repeated samples, next to a
        baseline measured in the same run, alternately with it, and the ratio to it.
        """

    static func parse(_ arguments: [String]) -> Result<Options, UsageError> {
        var options = Options()
        var rest = arguments[...]
        func value(_ flag: String) -> Result<String, UsageError> {
            guard let v = rest.popFirst() else { return .failure(UsageError("\(flag) needs a value")) }
            return .success(v)
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--quick": options.quick = true
            case "--no-build": options.noBuild = true
            case "--json", "--only", "--daemon", "--root":
                let v: String
                switch value(argument) {
                case let .success(s): v = s
                case let .failure(e): return .failure(e)
                }
                switch argument {
                case "--json": options.jsonPath = v
                case "--daemon": options.daemonPath = v
                case "--root": options.root = v
                default:
                    let names = Set(v.split(separator: ",").map { String($0) })
                    if let unknown = names.first(where: { !groups.contains($0) }) {
                        return .failure(UsageError("unknown group '\(unknown)' (groups: \(groups.joined(separator: ", ")))"))
                    }
                    options.only = names
                }
            case "-h", "--help": return .failure(UsageError(""))
            default: return .failure(UsageError("unknown argument '\(argument)'"))
            }
        }
        return .success(options)
    }

    func runs(_ group: String) -> Bool { only?.contains(group) ?? true }
}

struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

@main
struct WeaveDIBench {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--child-ready-idle" { childReadyIdle() }
        if arguments.first == "--profile" {
            let name = arguments.count > 1 ? arguments[1] : ""
            let iterations = arguments.count > 2 ? Int(arguments[2]) ?? 100_000 : 100_000
            if await !Profile.run(name, iterations: iterations) {
                System.writeError("weavedi-bench: --profile NAME [ITERATIONS], NAME one of \(Profile.names.joined(separator: ", "))\n")
                exit(64)
            }
            exit(0)
        }
        let options: Options
        switch Options.parse(arguments) {
        case let .success(parsed): options = parsed
        case let .failure(error):
            let message = error.message
            if !message.isEmpty { System.writeError("weavedi-bench: \(message)\n\n") }
            System.writeError(Options.usage + "\n")
            exit(message.isEmpty ? 0 : 64)
        }
        // What a service runs with: errors only. (The session group also shows the default.)
        UnifiedDI.setLogLevel(.errors)

        if let path = options.jsonPath, let problem = System.checkWritable(path) {
            System.writeError("weavedi-bench: cannot write \(path): \(problem)\n")
            exit(1)
        }
        let settings = options.quick ? Settings.quick : Settings.full
        let report = Report(settings: settings)
        let machine = Machine.current()
        let started = System.now()
        print("weavedi-bench, \(settings.quick ? "quick" : "full") run, on \(machine.description)")
        if settings.quick { print("(--quick: few short samples; use the full run for figures to publish)") }

        // Built first, so that no build runs while anything is measured.
        var daemon: String?
        if options.runs("daemon") || options.runs("control") || options.runs("mirror") { daemon = locateDaemon(options) }
        var run = RunInfo.collect(root: options.root ?? packageRoot())
        run.daemon = daemon
        print("package \(run.root)" + (run.gitCommit.map { " at \($0.prefix(12))" + (run.gitModified == true ? " (modified)" : "") } ?? "")
            + "; \(run.swiftVersion ?? "swift version unknown")")

        if options.runs("injected") { benchInjected(settings, report) }
        if options.runs("container") { benchContainer(settings, report) }
        if options.runs("session") { await benchSession(settings, report) }
        if options.runs("bootstrap") { await benchBootstrap(settings, report) }
        if options.runs("daemon") || options.runs("control") {
            if let daemon {
                if options.runs("daemon") { benchDaemon(settings, report, daemon: daemon) }
                if options.runs("control") { benchControl(settings, report, daemon: daemon) }
            } else {
                report.note("no weavedid to measure: daemon and control figures skipped")
            }
        }
        if options.runs("mirror") {
            if let daemon {
                benchMirror(settings, report, daemon: daemon)
            } else {
                report.note("no weavedid to measure: mirror figures skipped")
            }
        }

        let seconds = Double(System.now() - started) / 1e9
        print("")
        print(report.table())
        print("")
        print(report.summary)
        print("machine: \(machine.description); \(settings.quick ? "quick" : "full") run took \(fixed(seconds, 0)) s")
        if let path = options.jsonPath {
            let command = (["weavedi-bench"] + arguments).joined(separator: " ")
            run.seconds = seconds
            if System.writeFile(path, report.json(machine: machine, run: run, command: command)) {
                print("figures written to \(path)")
            } else {
                System.writeError("weavedi-bench: cannot write \(path)\n")
                exit(1)
            }
        }
    }
}
