import Glibc

/// One name in a directory listing, with the type hint from `d_type`.
public struct DirectoryEntry: Hashable, Sendable, CustomStringConvertible {
    /// The entry's name within its directory (never `.` or `..`).
    public var name: String
    /// The kind reported by `d_type`; `.unknown` when the file system does not say,
    /// in which case callers should fall back to `status(at:followSymlinks: false)`.
    public var kind: FileKind
    /// The inode number (`d_ino`).
    public var inode: UInt64
    /// False when the name on disk is not valid UTF-8: `name` then holds a repaired copy (with
    /// U+FFFD), which names a different file or none, and must not be used to open or remove it.
    public var nameIsExact: Bool

    /// Creates an entry from its parts.
    public init(name: String, kind: FileKind, inode: UInt64, nameIsExact: Bool = true) {
        self.name = name
        self.kind = kind
        self.inode = inode
        self.nameIsExact = nameIsExact
    }

    /// A textual form such as `config.json (regular)`.
    public var description: String {
        "\(name) (\(kind))"
    }
}

extension FileDescriptor {
    /// Lists the entries of this open directory, excluding `.` and `..`, in file system order.
    ///
    /// Works on a duplicate of the descriptor through `fdopendir(3)`, so this
    /// descriptor stays open and owned by the caller. The duplicate shares the
    /// file offset, so the listing always starts with `rewinddir(3)`. `progress` hears how many
    /// entries were read, every 1,024 (for a watchdog over a long listing).
    public func directoryEntries(progress: (Int) -> Void = { _ in }) throws(Errno) -> [DirectoryEntry] {
        let duplicate = try duplicate(closeOnExec: true).release()
        guard let stream = fdopendir(duplicate.rawValue) else {
            let error = Errno.current
            _ = Glibc.close(duplicate.rawValue)
            throw error
        }
        defer { closedir(stream) }
        rewinddir(stream)
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        var entries: [DirectoryEntry] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                let error = errno
                if error == 0 { return entries }
                if error == EINTR { continue }
                throw Errno(rawValue: error)
            }
            let namePointer = UnsafeRawPointer(entry).advanced(by: nameOffset)
                .assumingMemoryBound(to: CChar.self)
            let exact = String(validatingCString: namePointer)
            let name = exact ?? String(cString: namePointer)
            if name == "." || name == ".." { continue }
            if entries.count & 1023 == 1023 { progress(entries.count + 1) }
            entries.append(DirectoryEntry(
                name: name,
                kind: FileKind(directoryEntryType: entry.pointee.d_type),
                inode: UInt64(entry.pointee.d_ino),
                nameIsExact: exact != nil))
        }
    }

    /// Lists the directory at `path` relative to this directory, excluding `.` and `..`.
    public func directoryEntries(at path: String) throws(Errno) -> [DirectoryEntry] {
        let directory = try openDirectory(at: path)
        return try directory.descriptor.directoryEntries()
    }
}
