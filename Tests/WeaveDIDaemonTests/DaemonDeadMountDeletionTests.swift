import Foundation
import Glibc
import Testing
import WeaveDIControl
import WeaveDIPosix

/// The real daemon with a deleting mirror whose removal of a tree stops answering part way
/// (`DeadMount` on a directory inside the tree that goes): the run fails after 5 s, and its
/// deletion count is what that removal had removed until then, not 0.
@Suite struct DaemonDeadMountDeletionTests {
    @Test func aRunGivenUpOnWhileRemovingATree_countsTheEntriesItHadRemoved() throws {
        if let reason = DeadMount.unsupportedReason {
            try Test.cancel("\(reason)")
        }
        let directory = TemporaryDirectory()
        let d = directory.path
        directory.write("src/keep.txt", "keep")
        // `old` is no longer in the source: it goes, entry by entry, until the removal comes
        // to the dead mount on one of its directories.
        for index in 0..<40 { directory.write("dst/old/file-\(index).txt", "\(index)") }
        let candidates = (0..<10).map { "mount-\($0)" }
        for name in candidates {
            try FileManager.default.createDirectory(atPath: "\(d)/dst/old/\(name)", withIntermediateDirectories: false)
        }
        // The removal goes in the order of the listing: the dead mount goes on the candidate
        // listed last, so that entries go before the removal gets stuck, whatever the order.
        let order = try Self.listingOrder(of: "\(d)/dst/old")
        let stuckAt = try #require(order.lastIndex { candidates.contains($0) })
        #expect(stuckAt > 0, "\(order)")
        let config = directory.write("weavedid.json", """
            {"sync": {"jobs": [
              {"name": "prune", "source": "\(d)/src", "destination": "\(d)/dst", "interval": 3600, "workers": 1,
               "delete": true}]}}
            """)
        let wrapper = try #require(MountNamespace.wrapper())
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_FIX": "0"], directory: directory, wrapper: wrapper)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let mount = try DeadMount(at: "\(d)/dst/old/\(order[stuckAt])", inNamespaceOf: daemon.pid, scratch: directory)

        let run = try daemon.sendCall("RunJob", #"{"name": "prune"}"#).varlinkReply(timeout: .seconds(15))?.parameter("run")
        #expect(run?[member: "result"]?.stringValue == "failed", "\(daemon.log)")
        #expect(run?[member: "message"]?.stringValue
            == "\"\(d)/dst/old\": removing from the destination did not answer within 5 s (is its file system responding?)",
            "\(String(describing: run))")
        // Every entry listed before the stuck one went, and each is counted.
        let left = try FileManager.default.contentsOfDirectory(atPath: "\(d)/dst/old")
        #expect(Set(left) == Set(order[stuckAt...]), "\(left)")
        #expect(run?[member: "filesDeleted"]?.intValue == stuckAt, "\(String(describing: run))")

        mount.revive()
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// The names of the directory at `path` in the order `readdir` gives them.
    static func listingOrder(of path: String) throws -> [String] {
        let stream = try #require(opendir(path))
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
