import Glibc
import WeaveDI
import WeaveDIPosix

/// One directory of the source and its counterpart in the destination, both open, while the
/// run works on it.
///
/// Every entry inside is reached with `*at` calls on these descriptors and a single name from
/// `readdir`, never a concatenated path, and each subdirectory is opened with `O_NOFOLLOW`: a
/// symbolic link planted in the destination cannot send a write outside it. The descriptors
/// close when the last work item that needs the directory lets go of it.
final class MirrorDirectory: Sendable {
    /// The path relative to the roots, for reports: `""` for the roots themselves.
    let path: String
    /// The source directory, opened read-only.
    let source: OwnedDescriptor
    /// The destination directory.
    let destination: OwnedDescriptor
    /// The directory this one is in; nil for the roots. Kept open until this one is finished.
    let parent: MirrorDirectory?

    init(path: String, source: consuming OwnedDescriptor, destination: consuming OwnedDescriptor, parent: MirrorDirectory?) {
        self.path = path
        self.source = source
        self.destination = destination
        self.parent = parent
    }

    /// The report path of `name` inside this directory.
    func path(of name: String) -> String {
        path.isEmpty ? name : path + "/" + name
    }

    /// Gives the destination directory the source directory's mode and mtime once its content
    /// is done, then flushes it when `durable` and anything in it changed (one fsync per
    /// directory, after all of its renames). Returns whether the metadata had to change.
    func finish(modified: Bool, durable: Bool) throws(MirrorFailure) -> Bool {
        let wanted = try MirrorFailure.attempt("fstat") { try source.descriptor.status() }
        let current = try MirrorFailure.attempt("fstat") { try destination.descriptor.status() }
        var changed = false
        if current.permissions != wanted.permissions {
            try MirrorFailure.attempt("fchmod") { try destination.descriptor.setPermissions(wanted.permissions) }
            changed = true
        }
        if current.modificationTime != wanted.modificationTime {
            try MirrorFailure.attempt("futimens") {
                try destination.descriptor.setTimes(access: nil, modification: wanted.modificationTime)
            }
            changed = true
        }
        if durable && (modified || changed) {
            try MirrorFailure.attempt("fsync") { try destination.descriptor.fsync() }
        }
        return changed
    }
}

/// What every work item of a run shares: the settings, the container workers come from, and
/// the identities of both roots.
struct MirrorContext: Sendable {
    let settings: MirrorSettings
    let container: WeaveDI.Container
    let sourceRoot: FileIdentity
    let destinationRoot: FileIdentity
    /// Whether the engine runs as root, which may open any file with `O_NOATIME` and write in
    /// directories whose mode denies it.
    let isPrivileged: Bool

    init(settings: MirrorSettings, container: WeaveDI.Container, roots: borrowing MirrorRoots) {
        self.settings = settings
        self.container = container
        sourceRoot = roots.sourceIdentity
        destinationRoot = roots.destinationIdentity
        isPrivileged = geteuid() == 0
    }

    /// Whether reading a file with this owner may use `O_NOATIME` (owner or privileged).
    func mayAvoidAccessTime(owner: UInt32) -> Bool {
        isPrivileged || owner == geteuid()
    }
}
