import WeaveDIPosix

/// Where an absolute path leads on this machine, whether or not all of it exists yet: the real
/// path (`realpath(3)`) of its longest prefix that resolves, with the rest appended and
/// collapsed lexically (`.`, `..`, `//`). A symbolic link whose target does not exist (yet) is
/// followed all the same, as the kernel will once the target exists: `/srv/link/x`, with
/// `/srv/link -> /backup/new` and no `/backup/new`, leads to `/backup/new/x`.
///
/// A prefix that cannot be resolved for another reason (no permission to search a directory,
/// a loop of links, a link whose target is not UTF-8) counts as not existing: the rest is then
/// taken as written, which is what the lexical checks already looked at.
///
/// This reads the file system (`realpath`, `readlink`); the configuration decoder does not use
/// it: it is for the checks of `DaemonConfiguration.checkMirrorTreesOnDisk` and of a mirror
/// run's start.
enum ResolvedPath {
    /// Links followed at most in one resolution, as the kernel does (`MAXSYMLINKS`).
    static let maximumLinks = 40

    /// Where the absolute `path` leads; a normalized absolute path.
    static func resolve(_ path: String) -> String {
        var links = 0
        return resolve(path, links: &links)
    }

    private static func resolve(_ path: String, links: inout Int) -> String {
        let components = path.split(separator: "/")
        // The longest prefix realpath accepts; "/" always resolves.
        for count in stride(from: components.count, through: 0, by: -1) {
            let prefix = "/" + components[..<count].joined(separator: "/")
            guard let real = try? FileDescriptor.realPath(prefix) else { continue }
            let rest = components[count...]
            if let next = rest.first, next != ".", next != "..", links < maximumLinks,
                let target = try? FileDescriptor.currentWorkingDirectory.readSymbolicLink(
                    at: ConfigurationDirectories.join(real, String(next)))
            {
                // A link that realpath could not follow: its target is missing (or leads
                // through something missing). A relative target starts from the link's directory.
                links += 1
                let base = target.hasPrefix("/") ? target : ConfigurationDirectories.join(real, target)
                return resolve(([Substring(base)] + rest.dropFirst()).joined(separator: "/"), links: &links)
            }
            return ConfigurationDirectories.normalized(([Substring(real)] + rest).joined(separator: "/"))
        }
        return ConfigurationDirectories.normalized(path)
    }
}
