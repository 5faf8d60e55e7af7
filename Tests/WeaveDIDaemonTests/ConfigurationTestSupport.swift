import Foundation
import Testing
import WeaveDIDaemon
import WeaveDIPosix

/// A fresh directory under /tmp for configuration files, removed with its content on deinit.
final class ConfigurationDirectory: Sendable {
    let path: String

    init() throws {
        path = try FileDescriptor.makeTemporaryDirectory(template: "/tmp/weavedi-config-test.XXXXXX")
    }

    /// Writes `text` to `name` in the directory with `mode`, returning the file's path.
    @discardableResult
    func write(_ text: String, to name: String = "weavedid.json", mode: Int = 0o644) throws -> String {
        let file = path + "/" + name
        guard FileManager.default.createFile(
            atPath: file, contents: Data(text.utf8), attributes: [.posixPermissions: mode])
        else { throw Errno.current }
        return file
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The environment most tests use: what systemd passes to weavedid.service.
let systemdEnvironment = ["RUNTIME_DIRECTORY": "/run/weavedi", "STATE_DIRECTORY": "/var/lib/weavedi"]
/// The working directory most tests pretend to run in.
let testWorkingDirectory = "/home/dev/project"

/// Loads `text` as a configuration file.
func loadConfiguration(
    _ text: String,
    environment: [String: String] = systemdEnvironment,
    workingDirectory: String = testWorkingDirectory
) throws -> DaemonConfiguration {
    let directory = try ConfigurationDirectory()
    let file = try directory.write(text)
    return try DaemonConfiguration.load(path: file, environment: environment, workingDirectory: workingDirectory)
}

/// The error loading `text` produces, or nil (recording an issue) if it loads.
func configurationError(
    _ text: String,
    environment: [String: String] = systemdEnvironment,
    sourceLocation: SourceLocation = #_sourceLocation
) -> ConfigurationError? {
    do {
        let configuration = try loadConfiguration(text, environment: environment)
        Issue.record("expected an error, loaded \(configuration)", sourceLocation: sourceLocation)
    } catch let error as ConfigurationError {
        return error
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The error's text after the file name: `fieldPath: problem` or just `problem`.
func errorText(_ text: String, environment: [String: String] = systemdEnvironment) -> String? {
    guard let error = configurationError(text, environment: environment) else { return nil }
    let prefix = error.file + ": "
    #expect(error.description.hasPrefix(prefix))
    return String(error.description.dropFirst(prefix.count))
}

/// A configuration with one job made of `fields` (JSON members without braces).
func jobDocument(_ fields: String) -> String {
    #"{"sync": {"jobs": [{"name": "docs", "source": "/srv/docs", "destination": "/var/lib/weavedi/mirror/docs", "# + fields + "}]}}"
}
