import Glibc

/// Replaces a file's content all at once: readers see the old content or the new, never a
/// torn one, even across a crash.
public enum AtomicFile {
    /// Writes `bytes` to a temporary file beside `path`, flushes it, renames it over `path`
    /// and flushes the directory. On failure the temporary file is removed and `path` is
    /// left as it was. `beforeRename` is asked just before the rename: false gives the write up
    /// (`ECANCELED`), as a failure (for a write nobody waits for any more, whose older content
    /// must not replace a newer one). `marker` is the middle of the temporary file's name
    /// (`temporaryName`).
    public static func write(
        _ bytes: some Collection<UInt8>, to path: String, permissions: FilePermissions = 0o644, durable: Bool = true,
        marker: String = "tmp", beforeRename: () -> Bool = { true }
    ) throws(Errno) {
        let slash = path.lastIndex(of: "/")
        let directoryPath = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let directory = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directoryPath)
        let temporary = temporaryName(for: name, number: UInt32.random(in: 0...UInt32.max), marker: marker)
        do throws(Errno) {
            let file = try directory.descriptor.open(
                at: temporary, .writeOnly, options: [.create, .exclusiveCreate, .noFollow], permissions: permissions)
            try file.descriptor.writeAll(Array(bytes))
            try file.descriptor.setPermissions(permissions)
            if durable { try file.descriptor.fsync() }
            try file.close()
            guard beforeRename() else { throw Errno(rawValue: ECANCELED) }
            try directory.descriptor.rename(at: temporary, to: name)
            if durable { try directory.descriptor.fsync() }
        } catch {
            try? directory.descriptor.unlink(at: temporary)
            throw error
        }
    }

    /// The temporary file `write` makes beside the file named `name`: `.name.marker.N` (by
    /// default `.name.tmp.N`), N the number it drew, in decimal. It ends in the number, never
    /// in the name's own suffix: a program that reads every `*.prom` file of a directory never
    /// reads one half written.
    public static func temporaryName(for name: String, number: UInt32, marker: String = "tmp") -> String {
        ".\(name).\(marker).\(number)"
    }

    /// Whether `entry` (a name in a directory) is a temporary file `write` makes beside the
    /// file named `name` there with `marker`, and nothing else: `.name.marker.` then a number
    /// from 0 to 4294967295 written as `write` writes it (no sign, no leading zero). Such a
    /// file left behind (the process died during the write) is no one's: `write` never reuses
    /// one.
    public static func isTemporaryFile(_ entry: String, of name: String, marker: String = "tmp") -> Bool {
        let prefix = ".\(name).\(marker)."
        guard entry.hasPrefix(prefix), let number = UInt32(entry.dropFirst(prefix.count)) else { return false }
        return entry == temporaryName(for: name, number: number, marker: marker)
    }
}
