import Glibc

/// One name in a directory listing, with the type hint from `d_type`.
public struct DirectoryEntry: Hashable, Sendable, CustomStringConvertible {
    // The two one-byte fields last: 32 bytes an entry, not 40 (a listing of a million names
    // holds a million of them).
    /// The entry's name within its directory (never `.` or `..`).
    public var name: String
    /// The inode number (`d_ino`).
    public var inode: UInt64
    /// The kind reported by `d_type`; `.unknown` when the file system does not say,
    /// in which case callers should fall back to `status(at:followSymlinks: false)`.
    public var kind: FileKind
    /// False when the name on disk is not valid UTF-8: `name` then holds its display
    /// (`NameDisplay`, `bad\xFFname`), which names a different file or none, and must not be
    /// used to open or remove it; it is what messages show.
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
    /// file offset, so the listing always starts with `rewinddir(3)`.
    public func directoryEntries() throws(Errno) -> [DirectoryEntry] {
        // `goingOn` never stops it: the listing is whole.
        try directoryEntries(every: .max) { _ in true } ?? []
    }

    /// Lists the entries of this open directory as `directoryEntries()` does, asking `goingOn`
    /// every `interval` entries read (with how many were read) whether to go on: a listing of
    /// a huge directory (a `getdents64` of 32 KiB holds some hundreds of names) can so be
    /// watched, and stopped before its next read; nil when `goingOn` stopped it.
    public func directoryEntries(every interval: Int, while goingOn: (Int) -> Bool) throws(Errno) -> [DirectoryEntry]? {
        precondition(interval > 0, "a listing's interval must be positive")
        var entries: [DirectoryEntry] = []
        let whole = try readEntries { entry in
            entries.append(entry)
            return entries.count % interval != 0 || goingOn(entries.count)
        }
        return whole ? entries : nil
    }

    /// Whether this directory has an entry (besides `.` and `..`) that `matches`: the listing
    /// stops at the first one, and holds no names (a huge directory costs one `getdents64`).
    public func hasEntry(where matches: (DirectoryEntry) -> Bool = { _ in true }) throws(Errno) -> Bool {
        try !readEntries { !matches($0) }
    }

    /// Reads the entries, excluding `.` and `..`, handing each to `body` until it returns false;
    /// whether all were read.
    private func readEntries(_ body: (DirectoryEntry) -> Bool) throws(Errno) -> Bool {
        let duplicate = try duplicate(closeOnExec: true).release()
        guard let stream = fdopendir(duplicate.rawValue) else {
            let error = Errno.current
            _ = Glibc.close(duplicate.rawValue)
            throw error
        }
        defer { closedir(stream) }
        rewinddir(stream)
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                let error = errno
                if error == 0 { return true }
                if error == EINTR { continue }
                throw Errno(rawValue: error)
            }
            let namePointer = UnsafeRawPointer(entry).advanced(by: nameOffset)
                .assumingMemoryBound(to: CChar.self)
            let exact = String(validatingCString: namePointer)
            let name = exact ?? NameDisplay.escaping(UnsafeRawBufferPointer(start: namePointer, count: strlen(namePointer)))
            if name == "." || name == ".." { continue }
            let listed = DirectoryEntry(
                name: name,
                kind: FileKind(directoryEntryType: entry.pointee.d_type),
                inode: UInt64(entry.pointee.d_ino),
                nameIsExact: exact != nil)
            if !body(listed) { return false }
        }
    }

    /// Lists the directory at `path` relative to this directory, excluding `.` and `..`.
    public func directoryEntries(at path: String) throws(Errno) -> [DirectoryEntry] {
        let directory = try openDirectory(at: path)
        return try directory.descriptor.directoryEntries()
    }
}
