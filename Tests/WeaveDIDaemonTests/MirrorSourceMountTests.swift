import Foundation
import Testing
import WeaveDI
import WeaveDIDaemon
import WeaveDIPosix

/// The engine's side of the mount points below the source a job remembers
/// (`MirrorSettings.sourceMounts`): one that is now an empty directory on its parent's file
/// system, the destination having content there, is a file system that did not mount; a
/// deleting run deletes nothing under it and counts it an error. Here the memory is given as
/// a job's would be (the daemon's tests mount real file systems).
@Suite struct MirrorSourceMountTests {
    static let unmounted = "was a mount point at the last run and is now an empty directory on the parent's file system "
        + "(is it mounted?); nothing under it deleted"

    /// A fixture whose source has `keep.txt` and an empty `photos`, and whose destination
    /// holds the copy of three photos and of `keep.txt`.
    func fixture() throws -> MirrorFixture {
        let fixture = try MirrorFixture()
        try fixture.write("src/keep.txt", "k")
        try fixture.makeDirectory("src/photos")
        try fixture.write("dst/keep.txt", "k")
        for name in ["a", "b", "c"] { try fixture.write("dst/photos/\(name).jpg", name) }
        return fixture
    }

    func run(_ fixture: MirrorFixture, remembering paths: [String], delete: Bool = true) async -> MirrorReport {
        var settings = fixture.settings(delete: delete)
        settings.sourceMounts = paths
        return await MirrorEngine(settings: settings, container: .mirrorWorkers()).run()
    }

    @Test func aRememberedMountPointFoundEmpty_isNotDeletedUnder_andIsAnErrorNamingIt() async throws {
        let fixture = try fixture()
        let before = try fixture.snapshot("dst/photos")
        let report = await run(fixture, remembering: ["photos"])
        #expect(report.result == .partial, "\(report)")
        #expect(report.errors == [MirrorIssue(path: "photos", reason: Self.unmounted)], "\(report.errors)")
        #expect(report.deleted == 0)
        #expect(try fixture.snapshot("dst/photos") == before)
        // Remembered still, until it is mounted again or gone from the source.
        #expect(report.sourceMounts == ["photos"])
    }

    /// Without `delete` nothing goes anyway: no error, and it stays remembered.
    @Test func withoutDelete_itIsNoError_andStaysRemembered() async throws {
        let fixture = try fixture()
        let report = await run(fixture, remembering: ["photos"], delete: false)
        #expect(report.result == .success, "\(report.errors)")
        #expect(fixture.read("dst/photos/a.jpg") == "a")
        #expect(report.sourceMounts == ["photos"])
    }

    /// Gone from the source (the operator removed the directory of a file system unmounted for
    /// good): its part of the backup goes, and it is forgotten, with what was below it.
    @Test func aRememberedMountPointGoneFromTheSource_isDeleted_andForgotten() async throws {
        let fixture = try fixture()
        try FileManager.default.removeItem(atPath: fixture.source + "/photos")
        let report = await run(fixture, remembering: ["photos", "photos/2023"])
        #expect(report.result == .success, "\(report.errors)")
        #expect(report.deleted == 4)
        #expect(fixture.status("dst/photos") == nil)
        #expect(report.sourceMounts == [])
    }

    /// A directory with content (the files put there by hand) is no file system that failed
    /// to mount: mirrored as usual, and forgotten. So is one whose destination is empty.
    @Test func aRememberedPathThatIsAPlainDirectory_isMirrored_andForgotten() async throws {
        let fixture = try fixture()
        try fixture.write("src/photos/a.jpg", "a")
        let report = await run(fixture, remembering: ["photos"])
        #expect(report.result == .success, "\(report.errors)")
        #expect(report.deleted == 2)
        try fixture.expectExactMirror()
        #expect(report.sourceMounts == [])
    }

    /// Paths a run never writes (absolute, `..`, empty names) are ignored: nothing is guarded
    /// through them, and they are not remembered.
    @Test func pathsNoRunWrites_areIgnored() async throws {
        let fixture = try fixture()
        let report = await run(fixture, remembering: ["/photos", "../photos", "photos/", "", "./photos"])
        #expect(report.result == .success, "\(report.errors)")
        #expect(report.deleted == 3)
        #expect(report.sourceMounts == [])
    }
}
