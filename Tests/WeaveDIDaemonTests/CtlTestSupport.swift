import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// Runs the built `weavedictl` binary (next to `weavedid`) with a controlled environment and
/// captures its exit status, output and pid.
struct CtlRun {
    /// How it ended: `.exited(code)`, or `.signaled` (also when killed after the time limit).
    var status: TerminationStatus
    /// Standard output.
    var output: String
    /// Standard error.
    var error: String
    /// Its process id (for `sessions`).
    var pid: Int32

    /// The exit code, or -1 when it did not exit normally.
    var code: Int32 {
        if case let .exited(code) = status { return code }
        return -1
    }

    /// Standard output and error together.
    var all: String { output + error }

    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("weavedictl").path
    }

    /// Runs `weavedictl arguments…` in `directory` with `environment` added to a minimal one
    /// (PATH, and the sanitizers' settings of the test process: `SanitizerOptions`), behind `wrapper` (e.g. `setpriv …`), killed after `timeout`.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], in directory: TemporaryDirectory = TemporaryDirectory("weavedictl"),
        wrapper: [String] = [], timeout: Duration = .seconds(30)
    ) throws -> CtlRun {
        try execute(wrapper + [binary] + arguments, environment: environment, in: directory, timeout: timeout)
    }

    /// Runs the command line `argv` (its first element is the program) the same way.
    static func execute(
        _ argv: [String], environment: [String: String] = [:], in directory: TemporaryDirectory = TemporaryDirectory("weavedictl"),
        timeout: Duration = .seconds(30)
    ) throws -> CtlRun {
        let capture = TemporaryDirectory("weavedictl-output")
        var env = ["PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"]
        env.merge(SanitizerOptions.passed()) { $1 }
        for (key, value) in environment { env[key] = value }
        let child = try Subprocess.spawn(
            argv[0], arguments: Array(argv.dropFirst()), environment: env,
            standardOutput: .file(capture.path + "/out"), standardError: .file(capture.path + "/err"),
            workingDirectory: directory.path)
        let deadline = ContinuousClock.now + timeout
        var status = try child.waitIfExited()
        while status == nil, ContinuousClock.now < deadline {
            usleep(5_000)
            status = try child.waitIfExited()
        }
        if status == nil {
            try? child.kill(.kill)
            status = try child.wait()
        }
        return CtlRun(status: status!, output: capture.read("out") ?? "", error: capture.read("err") ?? "", pid: child.pid)
    }

    /// Standard output parsed as one JSON value.
    func json() throws -> JSONValue {
        try JSONValue.parse(output.trimmingCharacters(in: .newlines))
    }
}

/// Starts `weavedid` with the built-in default configuration (health loop off) and waits until
/// it is ready.
func readyDaemon(_ arguments: [String] = [], directory: TemporaryDirectory = TemporaryDirectory()) throws -> DaemonProcess {
    let daemon = try DaemonProcess(arguments, directory: directory)
    try #require(daemon.waitForLog("ready;"), "weavedid did not start: \(daemon.log)")
    return daemon
}

/// Whether `text` contains an escape byte (the start of every ANSI colour sequence).
func hasEscape(_ text: String) -> Bool {
    text.utf8.contains(0x1B)
}

/// Names of the members of a JSON object, in order.
func memberNames(_ value: JSONValue?) -> [String] {
    value?.objectMembers?.map(\.0) ?? []
}

/// Every subcommand weavedictl must offer.
let ctlSubcommands = [
    "ping", "health", "check", "fix", "fixes", "jobs", "run-job", "pause-job", "resume-job", "sessions",
    "registrations", "diagnose-components", "check-cycles", "log-level", "metrics", "reload", "version",
]
