import Glibc
import WeaveDI

/// Why a configuration file was rejected: which file, which field, what is wrong, and an
/// `errno` value the daemon can pass to systemd as `ERRNO=`.
///
/// `description` reads like `/etc/weavedi/weavedid.json: control.maxClients: expected an
/// integer from 1 to 4096, got -3`; without a field path (a syntax or read error) it is
/// `/etc/x.json: line 3, column 14: expected ',' or '}' after an object member` or
/// `/etc/x.json: cannot read: No such file or directory (ENOENT)`.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The configuration file's path, as given to the loader.
    public let file: String
    /// The field at fault, such as `sync.jobs[1].interval`; nil for read and syntax errors.
    public let fieldPath: String?
    /// What is wrong, without the file and field prefix.
    public let problem: String
    /// `ENOENT`, `EACCES`, ... when the file cannot be read; `EINVAL` for content problems;
    /// `EFBIG` for a file over the size limit.
    public let errno: Int32

    init(file: String, fieldPath: String?, problem: String, errno: Int32) {
        self.file = file
        self.fieldPath = fieldPath
        self.problem = problem
        self.errno = errno
    }

    /// A content problem (`EINVAL`) in the field at `fieldPath`.
    init(file: String, fieldPath: String, problem: String) {
        self.init(file: file, fieldPath: fieldPath, problem: problem, errno: EINVAL)
    }

    /// `file: fieldPath: problem`, or `file: problem` without a field path; a file's path past
    /// 4,096 characters cut (`JSONValue.shortenedPathForMessage`), as any path a message shows.
    public var description: String {
        let file = JSONValue.shortenedPathForMessage(file)
        if let fieldPath { return "\(file): \(fieldPath): \(problem)" }
        return "\(file): \(problem)"
    }
}
