import Foundation
import Testing
@testable import WeaveDIDaemon
import WeaveDIPosix

/// The parts of the check by device and inode that need no mounts: reading mountinfo, the
/// other paths a mount table gives, and how two locations stand, with symbolic links standing
/// in for mounts (a link, like a bind mount, gives one directory a second path; the daemon's
/// tests make real mounts, `DaemonMountOverlapTests`).
@Suite struct MountedLocationTests {
    @Test func mountinfo_isRead_withItsEscapes() {
        let text = """
            27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
            43 27 254:0 /srv/my\\040data /mnt/with\\040space\\011tab rw shared:1 - ext4 /dev/vda rw
            44 27 0:45 / /back\\134slash rw - tmpfs tmpfs rw
            45 27 0:46 relative /mnt/x rw - tmpfs tmpfs rw
            46 27 0:47
            47 27 0:48 / /odd\\999 rw - tmpfs tmpfs rw

            """
        let table = MountTable.parse(Array(text.utf8))
        #expect(table.mounts == [
            MountTable.Mount(device: "254:0", root: "/", mountPoint: "/"),
            MountTable.Mount(device: "254:0", root: "/srv/my data", mountPoint: "/mnt/with space\ttab"),
            MountTable.Mount(device: "0:45", root: "/", mountPoint: "/back\\slash"),
            // Not an escape: kept as written.
            MountTable.Mount(device: "0:48", root: "/", mountPoint: "/odd\\999"),
        ])
    }

    @Test func theMountPointHoldingAPath_isTheLongestAboveIt_byComponents() {
        let table = MountTable([
            MountTable.Mount(device: "254:0", root: "/", mountPoint: "/"),
            MountTable.Mount(device: "0:50", root: "/", mountPoint: "/mnt/nfs"),
            MountTable.Mount(device: "0:51", root: "/", mountPoint: "/mnt/nfs/deep"),
        ])
        #expect(table.mountPoint(containing: "/mnt/nfs/backup") == "/mnt/nfs")
        #expect(table.mountPoint(containing: "/mnt/nfs") == "/mnt/nfs")
        #expect(table.mountPoint(containing: "/mnt/nfs/deep/x/") == "/mnt/nfs/deep")
        #expect(table.mountPoint(containing: "/mnt/nfs/./deep/../mail") == "/mnt/nfs")
        #expect(table.mountPoint(containing: "/mnt/nfsother/x") == nil)  // a component, not a prefix of bytes
        #expect(table.mountPoint(containing: "/srv/data") == nil)  // only `/`
    }

    @Test func otherPaths_areThoseOfEveryMountOfTheSameFileSystemThatShowsThePath() {
        let table = MountTable([
            .init(device: "8:1", root: "/", mountPoint: "/"),
            .init(device: "8:1", root: "/data/src", mountPoint: "/mnt/alias"),
            .init(device: "8:2", root: "/", mountPoint: "/mnt/disk"),
            .init(device: "8:2", root: "/sub", mountPoint: "/srv/sub-alias"),
            .init(device: "8:2", root: "/sub/deeper", mountPoint: "/srv/deeper-alias"),
        ])
        #expect(table.otherPaths(of: "/data/src/x") == ["/mnt/alias/x"])
        #expect(table.otherPaths(of: "/data/src") == ["/mnt/alias"])
        #expect(table.otherPaths(of: "/mnt/alias/x") == ["/data/src/x"])
        #expect(table.otherPaths(of: "/data").isEmpty)
        #expect(table.otherPaths(of: "/data/srcs").isEmpty)
        #expect(table.otherPaths(of: "/mnt/disk/sub/deeper/y") == ["/srv/sub-alias/deeper/y", "/srv/deeper-alias/y"])
        #expect(table.otherPaths(of: "/srv/sub-alias") == ["/mnt/disk/sub"])
        // /mnt itself is on the root file system, shown nowhere else.
        #expect(table.otherPaths(of: "/mnt").isEmpty)
        #expect(MountTable([]).otherPaths(of: "/data/src").isEmpty)
    }

    @Test func theMountsOfThisProcess_areRead() {
        let table = MountTable.current()
        #expect(table.mounts.contains { $0.mountPoint == "/" }, "\(table.mounts)")
    }

    /// A tree with `data/src` and `mnt/alias`, a link to `data/src` standing in for a bind
    /// mount, which `table` lists as one.
    final class Tree {
        let directory = TemporaryDirectory("weavedi-located")
        var t: String { directory.path }
        let table: MountTable

        init() throws {
            try FileManager.default.createDirectory(atPath: directory.path + "/data/src", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: directory.path + "/mnt", withIntermediateDirectories: true)
            try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: directory.path + "/mnt/alias", pointingTo: "../data/src")
            table = MountTable([
                .init(device: "d", root: "/", mountPoint: "/"),
                .init(device: "d", root: directory.path + "/data/src", mountPoint: directory.path + "/mnt/alias"),
            ])
        }

        func locate(_ path: String, mounts: MountTable? = nil) -> MountedLocation {
            MountedLocation.locate(t + "/" + path, mounts: mounts ?? table)
        }
    }

    @Test func aLocation_isItsLongestExistingPrefix_andTheRest() throws {
        let tree = try Tree()
        let located = tree.locate("data/src/new/deeper")
        #expect(located.anchor == tree.t + "/data/src")
        #expect(located.missing == ["new", "deeper"])
        #expect(located.holders.first?.path == tree.t + "/data/src")
        #expect(located.holders.map(\.path).contains("/"))
        // Through the mount the table lists, the directories above the mount point hold it too.
        #expect(located.holders.contains { $0.path == tree.t + "/mnt" })
        #expect(!tree.locate("data/src", mounts: MountTable([])).holders.contains { $0.path == tree.t + "/mnt" })
    }

    @Test func oneDirectory_atTwoPaths_orBelowThem() throws {
        let tree = try Tree()
        let t = tree.t
        #expect(tree.locate("mnt/alias").relation(to: tree.locate("data/src"))
            == MountOverlap(relation: .same, directories: [.init(path: t + "/mnt/alias", otherPath: t + "/data/src")]))
        // Missing parts below one directory are compared as written.
        #expect(tree.locate("mnt/alias/new/x").relation(to: tree.locate("data/src/new"))?.relation == .inside)
        #expect(tree.locate("mnt/alias/new").relation(to: tree.locate("data/src/new/x"))?.relation == .contains)
        #expect(tree.locate("mnt/alias/new").relation(to: tree.locate("data/src/other")) == nil)
        // A path below one that does not exist lies in another directory than any that does.
        #expect(tree.locate("mnt/alias").relation(to: tree.locate("data/missing")) == nil)
        #expect(tree.locate("data/missing").relation(to: tree.locate("mnt/alias")) == nil)
    }

    @Test func aDirectoryAboveTheMountedOne_holdsWhatIsBelowTheMountPoint() throws {
        let tree = try Tree()
        let t = tree.t
        // data holds data/src, which is mnt/alias.
        let inside = tree.locate("mnt/alias").relation(to: tree.locate("data"))
        #expect(inside == MountOverlap(relation: .inside, directories: [.init(path: t + "/mnt/alias", otherPath: t + "/data/src")]))
        #expect(inside?.explanation
            == #""\#(t)/mnt/alias" and "\#(t)/data/src" are the same directory (same device and inode)"#)
        #expect(tree.locate("data").relation(to: tree.locate("mnt/alias"))?.relation == .contains)
        // mnt holds mnt/alias, which is data/src.
        let mounted = tree.locate("data/src/x").relation(to: tree.locate("mnt"))
        #expect(mounted?.relation == .inside)
        #expect(mounted?.explanation == #""\#(t)/data/src" and "\#(t)/mnt/alias" are the same directory (same device and inode)"#)
        // Without the table, the check finds only what the paths' own directories show.
        #expect(tree.locate("mnt/alias", mounts: MountTable([])).relation(to: tree.locate("data", mounts: MountTable([]))) == nil)
    }

    @Test func directoriesApart_areApart() throws {
        let tree = try Tree()
        try FileManager.default.createDirectory(atPath: tree.t + "/data/other", withIntermediateDirectories: false)
        #expect(tree.locate("data/other").relation(to: tree.locate("mnt/alias")) == nil)
        #expect(tree.locate("mnt/alias").relation(to: tree.locate("data/other")) == nil)
        #expect(tree.locate("mnt").relation(to: tree.locate("data")) == nil)
    }

    @Test func moreThanOnePair_isExplained() {
        let overlap = MountOverlap(relation: .inside, directories: [
            .init(path: "/mnt/alias", otherPath: "/data/src"), .init(path: "/data", otherPath: "/data"),
            .init(path: "/x", otherPath: "/y"),
        ])
        #expect(overlap.explanation
            == #""/mnt/alias" and "/data/src" are the same directory, and so are "/x" and "/y" (same device and inode)"#)
    }
}
