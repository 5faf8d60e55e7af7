import Glibc
import WeaveDI

/// What a configuration load is doing on the file system: the step a deadline names when it
/// gives up (`StepDeadline`); or that it is checking what it read (`checking`), which waits on
/// no file system and has no deadline.
public struct LoadStep: Sendable, Equatable {
    /// `reading` or `resolving`; `checking` for `checking(file:)`.
    public var action: String
    /// The configuration file, or `built-in default`.
    public var file: String
    /// The field whose path this is, such as `sync.jobs[1].destination`; nil for the file itself.
    public var fieldPath: String?
    /// The path read or resolved.
    public var path: String
    /// Whether the step waits on `path`; false for `checking(file:)`.
    public private(set) var waitsOnPath: Bool

    public init(_ action: String, file: String, fieldPath: String?, path: String) {
        self.action = action
        self.file = file
        self.fieldPath = fieldPath
        self.path = path
        waitsOnPath = true
    }

    /// Checking what was read (decoding the file, comparing the jobs' roots): work on what is
    /// in memory, as long as it takes, which the step limit does not count (it is for a file
    /// system that does not answer, and this waits on none): `checking the file`.
    public static func checking(file: String) -> LoadStep {
        var step = LoadStep("checking", file: file, fieldPath: nil, path: file)
        step.waitsOnPath = false
        return step
    }
}

extension LoadStep: DeadlineStep {
    /// `[path]`, or none for `checking(file:)`: no deadline.
    var paths: [String] { waitsOnPath ? [path] : [] }

    /// `resolving "/mnt/nfs/backup"`, or `reading the file` for the configuration file itself.
    var subject: String {
        fieldPath == nil && path == file ? "\(action) the file" : "\(action) \(JSONValue.quotedPathForMessage(path))"
    }

    /// The error at the step's file and field.
    func failure(_ problem: String, errno: Int32) -> ConfigurationError {
        ConfigurationError(file: file, fieldPath: fieldPath, problem: problem, errno: errno)
    }
}
