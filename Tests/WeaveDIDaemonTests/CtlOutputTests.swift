import Testing
import WeaveDI
import WeaveDIControl

/// Colour: only on a terminal (here a pseudo-terminal from script(1)), never with NO_COLOR,
/// --no-color or --json.
@Suite(.enabled(if: fileExists("/usr/bin/script"), "needs script(1) from util-linux for a pseudo-terminal"))
struct CtlOutputTests {
    /// Runs weavedictl on a pseudo-terminal: `script -qec "weavedictl ARGS" /dev/null`.
    private func onTerminal(_ arguments: [String], environment: [String: String] = [:]) throws -> CtlRun {
        let command = ([CtlRun.binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return try CtlRun.execute(["/usr/bin/script", "-qec", command, "/dev/null"], environment: environment)
    }

    @Test func terminal_coloursTheStatuses() throws {
        let daemon = try readyDaemon()
        let run = try onTerminal(["--socket", daemon.defaultSocket, "check"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.contains("\u{1B}[32mhealthy\u{1B}[0m"), "green healthy on a terminal: \(run.output)")
    }

    @Test func noColorEnvironment_removesEveryEscape() throws {
        let daemon = try readyDaemon()
        let run = try onTerminal(["--socket", daemon.defaultSocket, "check"], environment: ["NO_COLOR": "1"])
        #expect(run.code == 0, "\(run.all)")
        #expect(run.output.contains("healthy"))
        #expect(!hasEscape(run.output))
    }

    @Test func noColorOption_removesEveryEscape() throws {
        let daemon = try readyDaemon()
        let run = try onTerminal(["--socket", daemon.defaultSocket, "--no-color", "check"])
        #expect(run.code == 0)
        #expect(run.output.contains("healthy") && !hasEscape(run.output))
    }

    @Test func json_isNeverColoured() throws {
        let daemon = try readyDaemon()
        let run = try onTerminal(["--socket", daemon.defaultSocket, "--json", "check"])
        #expect(run.code == 0)
        #expect(run.output.contains("\"status\":\"healthy\"") && !hasEscape(run.output))
    }

    @Test func pipe_isNeverColoured() throws {
        let daemon = try readyDaemon()
        let run = try CtlRun.run(["--socket", daemon.defaultSocket, "check"])
        #expect(run.code == 0)
        #expect(run.output.contains("healthy") && !hasEscape(run.output))
    }
}
