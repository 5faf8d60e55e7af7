import Foundation
import Glibc
import Testing
import WeaveDI
import WeaveDIDaemon
import WeaveDIPosix

/// Where the child process of the deep removal test finds its fixture.
private let deepRemovalChildRootVariable = "WEAVEDI_MIRROR_TEST_DEEP_REMOVAL_ROOT"

/// Trees thousands of levels deep, whose paths are far longer than `PATH_MAX`: made level by
/// level through descriptors.
@Suite struct MirrorEngineDeepTreeTests {
    /// Makes a chain of `depth` directories named `name` below the directory `path`, a file
    /// `bottom.txt` in the last; returns the last, open.
    @discardableResult
    static func makeChain(below path: String, depth: Int, name: String) throws -> OwnedDescriptor {
        var level = try FileDescriptor.currentWorkingDirectory.openDirectory(at: path)
        for _ in 0..<depth {
            try level.descriptor.makeDirectory(at: name)
            level = try level.descriptor.openDirectory(at: name, noFollow: true)
        }
        let file = try level.descriptor.open(at: "bottom.txt", .writeOnly, options: [.create, .exclusiveCreate])
        try file.descriptor.writeAll(Array("at the bottom".utf8))
        return level
    }

    /// Opens the directory `depth` levels of `name` below `path`.
    static func openBottom(of path: String, depth: Int, name: String) throws -> OwnedDescriptor {
        var level = try FileDescriptor.currentWorkingDirectory.openDirectory(at: path)
        for _ in 0..<depth { level = try level.descriptor.openDirectory(at: name, noFollow: true) }
        return level
    }

    /// Reports name entries deep down by their whole path, built from each directory's name up
    /// its chain of parents (a directory keeps its own name only, not its path, whose memory
    /// grew with the square of the depth): warnings and errors of the scan, of a file's way
    /// cleared, and of a deletion, at the bottom of a chain 300 levels deep (paths longer than
    /// `PATH_MAX`), and at the roots.
    @Test func reportsNameEntriesDeepDown_byTheirWholePath() async throws {
        let fixture = try MirrorFixture()
        let name = String(repeating: "n", count: 20)
        let depth = 300
        let bottom = try Self.makeChain(below: fixture.source, depth: depth, name: name)
        let prefix = Array(repeating: name, count: depth).joined(separator: "/")
        #expect(mkfifo(fixture.source + "/pipe", 0o644) == 0)
        #expect(mkfifoat(bottom.descriptor.rawValue, "pipe", 0o644) == 0)
        let badTarget: [CChar] = [0x74, -1, 0]  // "t" and a byte that is not UTF-8
        #expect(symlinkat(badTarget, bottom.descriptor.rawValue, "bad-link") == 0)
        try bottom.descriptor.open(at: ".weavedi-tmp.x.aaaaaaaaaaaa", .writeOnly, options: [.create]).close()
        try bottom.descriptor.open(at: "blocked", .writeOnly, options: [.create]).close()

        let first = await fixture.mirror()
        #expect(first.result == .partial)
        #expect(first.warnings.map(\.path).sorted() == [
            "pipe", prefix + "/.weavedi-tmp.x.aaaaaaaaaaaa", prefix + "/pipe",
        ].sorted())
        #expect(first.errors.map(\.description) == [prefix + "/bad-link: the link's target is not valid UTF-8; left alone"])

        // In the destination, a directory with content where the file goes, and a name that
        // is not UTF-8, which the source does not have.
        let copy = try Self.openBottom(of: fixture.destination, depth: depth, name: name)
        #expect(unlinkat(copy.descriptor.rawValue, "blocked", 0) == 0)
        try copy.descriptor.makeDirectory(at: "blocked")
        try copy.descriptor.open(at: "blocked/kept", .writeOnly, options: [.create]).close()
        let badName: [CChar] = [0x78, -1, 0]
        let made = openat(copy.descriptor.rawValue, badName, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        #expect(made >= 0)
        close(made)

        let second = await fixture.mirror()
        #expect(second.errors.map(\.description).filter { $0.contains("blocked") }
            == [prefix + "/blocked: a directory is in the way and delete is off"])
        #expect(fixture.status("dst/pipe") == nil)
        let deleting = await fixture.mirror(delete: true)
        #expect(deleting.errors.map(\.description).sorted() == [
            prefix + "/bad-link: the link's target is not valid UTF-8; left alone",
            prefix + #"/x\xFF: the name is not valid UTF-8; left alone"#,
        ])
        #expect(deleting.deleted == 2)  // blocked/ and blocked/kept
    }

    /// A destination tree 3,000 levels deep that the source no longer has goes whole, every
    /// level counted, on worker threads with small stacks and under a low descriptor limit:
    /// the removal walks it with a stack of its own and keeps at most
    /// `DestinationRemover.openLevels` of its directories open. (It recursed once per level,
    /// holding a descriptor per level: a tree 5,000 levels deep overflowed a worker thread's
    /// stack and crashed the daemon.) The run is a child process of this test binary, whose
    /// threads and limits are its own.
    @Test func aVeryDeepTreeTheSourceNoLongerHas_isRemovedWhole() throws {
        let fixture = try MirrorFixture()
        try fixture.write("src/keep.txt", "kept")
        try fixture.makeDirectory("dst")
        try fixture.makeDirectory("out")
        try Self.makeChain(below: fixture.destination, depth: 3000, name: "d")

        let child = try Subprocess.run(
            CommandLine.arguments[0],
            arguments: ["--testing-library", "swift-testing", "--filter",
                        "MirrorEngineDeepTreeTests/childRemoval_withSmallStacksAndFewDescriptors"],
            environment: ["PATH": "/usr/bin:/bin", deepRemovalChildRootVariable: fixture.root])
        #expect(child.status == .exited(0), "\(child.standardOutputText.suffix(2000))\(child.standardErrorText.suffix(2000))")
        #expect(fixture.read("out/report.txt") == "success deleted 3001 errors []",
                "\(child.standardOutputText.suffix(2000))\(child.standardErrorText.suffix(2000))")
        #expect(fixture.status("dst/d") == nil)
        #expect(fixture.read("dst/keep.txt") == "kept")
    }

    /// The child's half: new threads get 512 KiB stacks (the daemon's have 8 MiB, where 4,000
    /// levels were enough), the process 256 descriptors; then a run with `delete`.
    @Test(.enabled(if: CurrentProcess.environmentValue(deepRemovalChildRootVariable) != nil))
    func childRemoval_withSmallStacksAndFewDescriptors() async throws {
        let root = try #require(CurrentProcess.environmentValue(deepRemovalChildRootVariable))
        typealias SetDefault = @convention(c) (UnsafePointer<pthread_attr_t>) -> Int32
        let symbol = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_setattr_default_np"))
        var attributes = pthread_attr_t()
        #expect(pthread_attr_init(&attributes) == 0)
        #expect(pthread_attr_setstacksize(&attributes, 512 << 10) == 0)
        #expect(unsafeBitCast(symbol, to: SetDefault.self)(&attributes) == 0)
        let limit = try ResourceLimit.openFiles()
        try ResourceLimit.setOpenFiles(ResourceLimit(soft: 256, hard: limit.hard))

        let report = await MirrorEngine(
            settings: MirrorSettings(source: root + "/src", destination: root + "/dst", delete: true),
            container: .mirrorWorkers()
        ).run()
        let line = "\(report.result) deleted \(report.deleted) errors \(report.errors.prefix(3).map(\.description))"
        #expect(FileManager.default.createFile(atPath: root + "/out/report.txt", contents: Data(line.utf8)))
    }
}
