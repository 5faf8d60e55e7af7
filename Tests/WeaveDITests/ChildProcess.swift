import Foundation
import Testing
@testable import WeaveDI

/// Runs a program built alongside the tests and collects what it printed.
struct ChildResult {
    var status: Int32
    var signaled: Bool
    var stdout: String
    var stderr: String
}

enum ChildProcess {
    /// The directory holding the test bundle and the package's executables.
    static var productsDirectory: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    static func run(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ChildResult {
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent(name)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for key in env.keys where key.hasPrefix("WEAVEDI") { env.removeValue(forKey: key) }
        // The children that stop on purpose are judged by their message: without the runtime's
        // backtracer, which can hang reading a process that is going away (seen when a second
        // thread was still running, and under ThreadSanitizer), keeping the pipes open for good.
        env["SWIFT_BACKTRACE"] = "enable=no"
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Both pipes are read at once: reading one to its end first, while the child fills the
        // other (a pipe holds 64 KiB) and waits for room, would wait for good.
        let errors = err.fileHandleForReading
        let stderrData = Locked(Data())
        let reader = Thread { stderrData.withLock { $0 = errors.readDataToEndOfFile() } }
        reader.start()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        reader.join()
        let stderr = stderrData.withLock { $0 }
        process.waitUntilExit()
        return ChildResult(
            status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
            stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// The line of the probe's source (Sources/WeaveDIProbe/main.swift) that is `text`, counted from 1.
func probeLine(of text: String, filePath: String = #filePath) throws -> Int {
    let root = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let source = try String(contentsOf: root.appendingPathComponent("Sources/WeaveDIProbe/main.swift"), encoding: .utf8)
    let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
    let matches = lines.indices.filter { lines[$0] == text }
    try #require(matches.count == 1, "\(matches.count) lines of the probe are \(text)")
    return matches[0] + 1
}
