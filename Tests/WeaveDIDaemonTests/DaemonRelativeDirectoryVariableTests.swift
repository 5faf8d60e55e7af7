import Foundation
import Testing
import WeaveDIPosix

/// `RUNTIME_DIRECTORY`, `STATE_DIRECTORY` and `XDG_RUNTIME_DIR` set to a relative path are
/// ignored as if unset, and said so once, at the start and by `--check-config`, with what is used
/// in their place; the start's log line names the state directory and the control socket.
@Suite struct DaemonRelativeDirectoryVariableTests {
    static let relative = ["RUNTIME_DIRECTORY": "run", "STATE_DIRECTORY": "state:/srv/state", "XDG_RUNTIME_DIR": "xdg"]

    static func warnings(in d: String) -> [String] {
        [
            #"warning daemon: RUNTIME_DIRECTORY="run" is a relative path: ignored; using "\#(d)/.weavedi/run" for the runtime directory (the control socket's) where the configuration sets neither runtimeDirectory nor control.socket"#,
            #"warning daemon: STATE_DIRECTORY="state:/srv/state" starts with a relative path ("state"): ignored; using "\#(d)/.weavedi/state" for the state directory where the configuration sets no stateDirectory"#,
            #"warning daemon: XDG_RUNTIME_DIR="xdg" is a relative path: ignored; using "\#(d)/.weavedi/run" for the runtime directory (the control socket's) where the configuration sets neither runtimeDirectory nor control.socket"#,
        ]
    }

    /// How often `text` occurs in `log`.
    static func count(_ text: String, in log: String) -> Int { log.components(separatedBy: text).count - 1 }

    @Test func relativeDirectoryVariables_areWarnedAboutOnceAtStart_andTheStartNamesTheDirectoriesUsed() throws {
        let directory = TemporaryDirectory("wd-rel")
        let d = directory.path
        let config = directory.write("weavedid.json", "{}")
        let daemon = try DaemonProcess(["--config", config], environment: Self.relative, directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let log = daemon.log
        for warning in Self.warnings(in: d) {
            #expect(Self.count(warning, in: log) == 1, "\(warning)\n\(log)")
        }
        #expect(log.contains(#"starting (pid \#(daemon.pid), configuration: "\#(config)"); state directory "\#(d)/.weavedi/state", control socket "\#(d)/.weavedi/run/control.sock""#), "\(log)")
        #expect(fileExists("\(d)/.weavedi/run/control.sock"))
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// Without them, the start names the directories the environment put there.
    @Test func theStartNamesTheDirectoriesTheEnvironmentGives_withoutWarnings() throws {
        let directory = TemporaryDirectory("wd-rel")
        let d = directory.path
        let config = directory.write("weavedid.json", "{}")
        let daemon = try DaemonProcess(["--config", config], directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        #expect(daemon.log.contains(#"; state directory "\#(d)/state", control socket "\#(d)/run/control.sock""#), "\(daemon.log)")
        #expect(!daemon.log.contains("relative path"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// `--check-config` says them too, on standard error; its verdict is on standard output.
    @Test func checkConfig_warnsAboutRelativeDirectoryVariables_onStandardError() throws {
        let directory = TemporaryDirectory("wd-rel")
        let d = directory.path
        let config = directory.write("weavedid.json", "{}")
        let result = try Subprocess.run(
            "/bin/sh", arguments: ["-c", #"cd "$1" && exec "$2" --check-config --config "$3""#, "sh", d, DaemonProcess.binary, config],
            environment: ["PATH": "/usr/bin:/bin"].merging(Self.relative) { $1 })
        #expect(result.status == .exited(0), "\(result.standardErrorText)")
        for warning in Self.warnings(in: d) {
            #expect(Self.count(warning, in: result.standardErrorText) == 1, "\(warning)\n\(result.standardErrorText)")
        }
        #expect(result.standardOutputText == "weavedid: configuration OK (\(config))\n")
    }

    /// Only a variable the configuration would use is warned about: one that sets
    /// `stateDirectory` uses no `STATE_DIRECTORY`, one that sets `runtimeDirectory` or
    /// `control.socket` neither `RUNTIME_DIRECTORY` nor `XDG_RUNTIME_DIR`. Before, the warning
    /// said the working directory's was used where the file's was. (`DIR` stands for the test's
    /// directory: the check creates the directories, which any user may there.)
    @Test(arguments: [
        (#"{"stateDirectory": "DIR/state"}"#, [0, 2]),
        (#"{"runtimeDirectory": "DIR/run"}"#, [1]),
        (#"{"control": {"socket": "DIR/run/control.sock"}}"#, [1]),
        (#"{"stateDirectory": "DIR/state", "runtimeDirectory": "DIR/run"}"#, []),
    ])
    func aVariableTheConfigurationDoesNotUse_isNoWarning(file: String, warned: [Int]) throws {
        let directory = TemporaryDirectory("wd-rel")
        let d = directory.path
        let config = directory.write("weavedid.json", file.replacingOccurrences(of: "DIR", with: d + "/srv"))
        let result = try Subprocess.run(
            "/bin/sh", arguments: ["-c", #"cd "$1" && exec "$2" --check-config --config "$3""#, "sh", d, DaemonProcess.binary, config],
            environment: ["PATH": "/usr/bin:/bin"].merging(Self.relative) { $1 })
        #expect(result.status == .exited(0), "\(result.standardErrorText)")
        for (index, warning) in Self.warnings(in: d).enumerated() {
            #expect(Self.count(warning, in: result.standardErrorText) == (warned.contains(index) ? 1 : 0),
                    "\(warning)\n\(result.standardErrorText)")
        }
        #expect(Self.count("relative path", in: result.standardErrorText) == warned.count, "\(result.standardErrorText)")
    }

    /// The default socket below the working directory, refused inside a destination: the
    /// message says the variables are set but relative, not that they are unset.
    @Test func theDefaultSocketRefusal_saysTheVariablesAreSetButRelative() throws {
        let directory = TemporaryDirectory("wd-rel")
        let d = directory.path
        let source = TemporaryDirectory("wd-rel-source")
        let config = directory.write(
            "weavedid.json", #"{"sync": {"jobs": [{"name": "a", "source": "\#(source.path)", "destination": "\#(d)"}]}}"#)
        let cases: [([String: String], String)] = [
            (["RUNTIME_DIRECTORY": "run"], "RUNTIME_DIRECTORY is set but relative (ignored) and XDG_RUNTIME_DIR is not set"),
            (["XDG_RUNTIME_DIR": "xdg"], "RUNTIME_DIRECTORY is not set and XDG_RUNTIME_DIR is set but relative (ignored)"),
            (["RUNTIME_DIRECTORY": "run", "XDG_RUNTIME_DIR": "xdg"], "RUNTIME_DIRECTORY and XDG_RUNTIME_DIR are set but relative (ignored)"),
            ([:], "neither RUNTIME_DIRECTORY nor XDG_RUNTIME_DIR is set"),
        ]
        for (environment, said) in cases {
            let daemon = try DaemonProcess(
                ["--check-config", "--config", config], environment: ["RUNTIME_DIRECTORY": ""].merging(environment) { $1 },
                directory: directory)
            #expect(daemon.wait() == .exited(78), "\(daemon.log)")
            #expect(daemon.log.contains(
                #"contains the control socket "\#(d)/.weavedi/run/control.sock"; that is its default path, in the working directory (.weavedi/run/control.sock), "#
                    + "as no configuration file sets control.socket or runtimeDirectory and \(said): set control.socket"),
                "\(environment)\n\(daemon.log)")
        }
    }
}
