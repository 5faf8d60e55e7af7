import Glibc

/// What a configuration load is doing on the file system: the step a deadline names when it
/// gives up (`StepDeadline`).
public struct LoadStep: Sendable, Equatable {
    /// `reading` or `resolving`.
    public var action: String
    /// The configuration file, or `built-in default`.
    public var file: String
    /// The field whose path this is, such as `sync.jobs[1].destination`; nil for the file itself.
    public var fieldPath: String?
    /// The path read or resolved.
    public var path: String

    public init(_ action: String, file: String, fieldPath: String?, path: String) {
        self.action = action
        self.file = file
        self.fieldPath = fieldPath
        self.path = path
    }
}

extension LoadStep: DeadlineStep {
    /// `resolving "/mnt/nfs/backup"`, or `reading the file` for the configuration file itself.
    var subject: String {
        fieldPath == nil && path == file ? "\(action) the file" : "\(action) \"\(path)\""
    }

    /// The error at the step's file and field.
    func failure(_ problem: String, errno: Int32) -> ConfigurationError {
        ConfigurationError(file: file, fieldPath: fieldPath, problem: problem, errno: errno)
    }
}
