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
    /// `bottom.txt` in the last.
    static func makeChain(below path: String, depth: Int, name: String) throws {
        var level = try FileDescriptor.currentWorkingDirectory.openDirectory(at: path)
        for _ in 0..<depth {
            try level.descriptor.makeDirectory(at: name)
            level = try level.descriptor.openDirectory(at: name, noFollow: true)
        }
        let file = try level.descriptor.open(at: "bottom.txt", .writeOnly, options: [.create, .exclusiveCreate])
        try file.descriptor.writeAll(Array("at the bottom".utf8))
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
