import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIDaemon
import WeaveDIPosix

/// A scratch directory under /tmp (or another parent) with `src` and `dst` inside, removed on deinit, and helpers to
/// build trees in it, run the engine, and compare the results.
final class MirrorFixture: @unchecked Sendable {  // paths are immutable; files are the test's business
    let root: String
    var source: String { root + "/src" }
    var destination: String { root + "/dst" }

    /// A fixture in a new directory of `parent` (/tmp unless a test needs a given file system).
    init(under parent: String = "/tmp") throws {
        root = try FileDescriptor.makeTemporaryDirectory(template: parent + "/weavedi-mirror-test.XXXXXX")
        try FileDescriptor.currentWorkingDirectory.makeDirectory(at: root + "/src")
    }

    deinit {
        try? FileManager.default.removeItem(atPath: root)
        // A tree whose paths are longer than PATH_MAX (`MirrorEngineDeepTreeTests`), which
        // FileManager cannot remove: rm goes through descriptors. Run by a user other than
        // root, a read-only directory of the tree (a sample tree's `locked`, mode 0555) keeps
        // its entries until it is writable again.
        if FileManager.default.fileExists(atPath: root) {
            let environment = ["PATH": "/usr/bin:/bin"]
            _ = try? Subprocess.run("/bin/chmod", arguments: ["-R", "u+rwx", "--", root], environment: environment)
            _ = try? Subprocess.run("/bin/rm", arguments: ["-rf", "--", root], environment: environment)
        }
    }

    /// Writes `content` to `path` (relative to `root`), creating parent directories, with
    /// `mode` and, when given, the modification time `mtime`.
    func write(_ path: String, _ content: [UInt8], mode: UInt32 = 0o644, mtime: TimeSpec? = nil) throws {
        let full = root + "/" + path
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let file = try FileDescriptor.open(full, .writeOnly, options: [.create, .truncate, .noFollow])
        try file.descriptor.writeAll(content)
        try file.descriptor.setPermissions(FilePermissions(rawValue: mode))
        if let mtime { try file.descriptor.setTimes(access: nil, modification: mtime) }
    }

    /// Writes text content.
    func write(_ path: String, _ text: String, mode: UInt32 = 0o644, mtime: TimeSpec? = nil) throws {
        try write(path, Array(text.utf8), mode: mode, mtime: mtime)
    }

    /// Creates the directory `path` and its parents, with `mode` on the last one.
    func makeDirectory(_ path: String, mode: UInt32 = 0o755) throws {
        try FileManager.default.createDirectory(atPath: root + "/" + path, withIntermediateDirectories: true)
        try FileDescriptor.currentWorkingDirectory.setPermissions(at: root + "/" + path, FilePermissions(rawValue: mode))
    }

    /// Creates a symbolic link at `path` pointing to `target`.
    func link(_ path: String, to target: String) throws {
        try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: root + "/" + path, pointingTo: target)
    }

    /// Creates a symbolic link at `path` whose target is `target`'s bytes, valid UTF-8 or not.
    func link(_ path: String, toBytes target: [UInt8]) throws {
        let made = (target + [0]).withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { symlink($0.baseAddress!, root + "/" + path) }
        }
        if made != 0 { throw Errno.current }
    }

    /// The content of `path`, or nil when it cannot be read.
    func read(_ path: String) -> String? {
        FileManager.default.contents(atPath: root + "/" + path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `lstat` of `path`, or nil when it does not exist.
    func status(_ path: String) -> FileStatus? {
        try? FileStatus(path: root + "/" + path, followSymlinks: false)
    }

    /// Settings mirroring `src` into `dst`.
    func settings(
        compare: DaemonConfiguration.CompareMode = .sizeAndModificationTime,
        delete: Bool = false, durable: Bool = true, workers: Int = 2
    ) -> MirrorSettings {
        MirrorSettings(
            source: source, destination: destination, compare: compare, delete: delete, durable: durable,
            workers: workers)
    }

    /// Runs the engine with workers from a fresh container.
    func mirror(
        compare: DaemonConfiguration.CompareMode = .sizeAndModificationTime,
        delete: Bool = false, durable: Bool = true, workers: Int = 2
    ) async -> MirrorReport {
        await MirrorEngine(
            settings: settings(compare: compare, delete: delete, durable: durable, workers: workers),
            container: .mirrorWorkers()
        ).run()
    }

    /// Every entry below `root + "/" + path`, by relative path.
    func snapshot(_ path: String) throws -> [String: MirrorEntry] {
        var entries: [String: MirrorEntry] = [:]
        try collect(root + "/" + path, prefix: "", into: &entries)
        return entries
    }

    private func collect(_ directory: String, prefix: String, into entries: inout [String: MirrorEntry]) throws {
        for entry in try FileDescriptor.currentWorkingDirectory.directoryEntries(at: directory) {
            let full = directory + "/" + entry.name
            let relative = prefix + entry.name
            let status = try FileStatus(path: full, followSymlinks: false)
            var item = MirrorEntry(
                kind: status.kind, mode: status.mode, modificationTime: status.modificationTime, size: status.size)
            switch status.kind {
            case .regular: item.content = FileManager.default.contents(atPath: full)
            case .symbolicLink: item.linkTarget = try FileDescriptor.currentWorkingDirectory.readSymbolicLink(at: full)
            case .directory: try collect(full, prefix: relative + "/", into: &entries)
            default: break
            }
            entries[relative] = item
        }
    }

    /// Records an issue for each difference between `src` and `dst` (names, kinds, modes,
    /// mtimes to the nanosecond, sizes, contents, link targets); returns the count.
    @discardableResult
    func expectExactMirror(ignoring ignored: Set<String> = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let source = try snapshot("src").filter { !ignored.contains($0.key) }
        let destination = try snapshot("dst").filter { !ignored.contains($0.key) }
        var differences = 0
        for name in Set(source.keys).union(destination.keys).sorted() where source[name] != destination[name] {
            differences += 1
            Issue.record(
                "\(name): source \(source[name].map(String.init(describing:)) ?? "missing"), destination \(destination[name].map(String.init(describing:)) ?? "missing")",
                sourceLocation: sourceLocation)
        }
        // A mirror of the empty tree proves nothing: make sure there was something to compare.
        #expect(!source.isEmpty, sourceLocation: sourceLocation)
        return differences
    }

    /// Names below `dst` that are temporary files of a copy.
    func temporaryFiles() throws -> [String] {
        try snapshot("dst").keys.filter { $0.split(separator: "/").last?.hasPrefix(".weavedi-tmp.") == true }.sorted()
    }
}

/// What a tree comparison looks at for one entry.
struct MirrorEntry: Equatable, CustomStringConvertible {
    var kind: FileKind
    var mode: UInt32
    var modificationTime: TimeSpec
    var size: Int64
    /// The whole content of a regular file (compared directly: hashing in a debug build is slow).
    var content: Data? = nil
    var linkTarget: String? = nil

    var description: String {
        "\(kind) mode \(String(mode & 0o7777, radix: 8)) mtime \(modificationTime) size \(size)"
            + (content.map { " content \(Array($0.prefix(8)))" } ?? "") + (linkTarget.map { " -> \($0)" } ?? "")
    }
}

extension WeaveDI.Container {
    /// A container with `FileCopier` and `FileHasher` registered as transients, as the daemon's
    /// sync module does; `onCopier` runs each time a copier is made.
    static func mirrorWorkers(onCopier: @escaping @Sendable () -> Void = {}) -> WeaveDI.Container {
        let container = WeaveDI.Container()
        container.register(FileCopier.self, scope: .transient) {
            onCopier()
            return FileCopier()
        }
        container.register(FileHasher.self, scope: .transient) { FileHasher() }
        return container
    }
}

/// A fixed modification time with nanoseconds, so that comparisons catch lost precision.
func sampleTime(_ offset: Int64 = 0) -> TimeSpec {
    TimeSpec(seconds: 1_600_000_000 + offset, nanoseconds: 123_456_789)
}
