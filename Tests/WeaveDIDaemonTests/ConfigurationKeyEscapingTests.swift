import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// A key of the configuration file may hold anything JSON can: a NUL, an escape sequence, a
/// newline, a bidirectional control. A field error names it in its path escaped where the
/// path is made, as messages quote a value from outside, so that every output of the error
/// shows the same text: none shows the key raw, none escapes it a second time in a style of
/// its own (`\u{1B}` beside the problem's `\u001b`).
@Suite struct ConfigurationKeyEscapingTests {
    /// Files with a hostile key (as JSON writes it), and the error as every output shows it
    /// after the file's path.
    static let cases: [(json: String, shown: String)] = [
        (#"{"control": {"jobs\u001b[31m": 1}}"#,
         #"control."jobs\u001b[31m": unknown field "jobs\u001b[31m" (accepted: socket, socketMode, socketGroup, adminUsers, "#
            + "adminGroups, maxMessageBytes, maxClients, maxClientsPerUser, idleTimeout, callTimeout)"),
        (#"{"sync": {"a\u0000b\nc": 1}}"#,
         #"sync."a\u0000b\nc": unknown field "a\u0000b\nc" (accepted: maxConcurrentRuns, metricsFile, jobs)"#),
        (#"{"x\u202eb\u0085\u2028": 1}"#,
         #""x\u202eb\u0085\u2028": unknown field "x\u202eb\u0085\u2028" (accepted: runtimeDirectory, stateDirectory, "#
            + "shutdownTimeout, control, health, sync)"),
    ]

    /// `weavedid --check-config` writes the error, byte for byte, with the key escaped once.
    @Test func checkConfig_showsAHostileKeyEscapedOnce() throws {
        let directory = TemporaryDirectory("weavedi-key")
        for (json, shown) in Self.cases {
            let config = directory.write("weavedid.json", json)
            let checked = try Subprocess.run(DaemonProcess.binary, arguments: ["--check-config", "--config", config], environment: [:])
            #expect(checked.status == .exited(78))
            #expect(checked.standardOutput.isEmpty)
            #expect(checked.standardError == Array("weavedid: \(config): \(shown)\n".utf8), "\(checked.standardErrorText)")
        }
    }

    /// `weavedictl diagnose-components --offline` reads the file as the daemon does, and shows
    /// its error the same.
    @Test func offlineDiagnostics_showAHostileKeyEscapedOnce() throws {
        let directory = TemporaryDirectory("weavedi-key")
        for (json, shown) in Self.cases {
            let config = directory.write("weavedid.json", json)
            let run = try CtlRun.run(["diagnose-components", "--offline", "--config", config])
            #expect(run.code != 0 && run.output.isEmpty)
            #expect(run.error == "weavedictl: \(config): \(shown)\n")
        }
    }

    /// A reload of such a file is refused with the same text in the reply's reason (which a
    /// client of its own, such as varlinkctl, prints as it comes) and in the log.
    @Test func aRefusedReload_showsAHostileKeyEscapedOnce_inItsReplyAndTheLog() throws {
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", "{}")
        let daemon = try readyDaemon(["--config", config], directory: directory)
        for (json, shown) in Self.cases {
            directory.write("weavedid.json", json)
            let refusal = try reloadFailure(daemon.defaultSocket)
            #expect(refusal?.name == "io.weavedi.Daemon.ReloadRefused", "\(daemon.log)")
            #expect(refusal?.reply.parameter("reason")?.stringValue
                == "\(config): \(shown)", "\(daemon.log)")
            #expect(daemon.waitForLog("reload refused: \(config): \(shown); keeping the previous configuration"), "\(daemon.log)")
        }
        #expect(!daemon.log.utf8.contains(0x1B) && !daemon.log.utf8.contains(0))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A key that is no plain name (letters, digits, `_` and `-`, 60 at most) is quoted in the
    /// path, so that a dot or a bracket in it reads as part of the key, and a long one is cut.
    @Test func aKeyThatIsNoPlainName_isQuotedInThePath() {
        #expect(errorText(#"{"health": {"inter-val_2": 1}}"#)?.hasPrefix(#"health.inter-val_2: unknown field "inter-val_2""#) == true)
        #expect(errorText(#"{"health": {"a.b[0]": 1}}"#)?.hasPrefix(#"health."a.b[0]": unknown field "a.b[0]""#) == true)
        #expect(errorText(#"{"health": {"": 1}}"#)?.hasPrefix(#"health."": unknown field """#) == true)
        let long = String(repeating: "k", count: 100_000)
        let quoted = "\"" + String(repeating: "k", count: 57) + "...\" (100000 characters)"
        #expect(errorText("{\"health\": {\"\(long)\": 1}}")
            == "health.\(quoted): unknown field \(quoted) (accepted: interval, sessionIdleLimit)")
    }
}
