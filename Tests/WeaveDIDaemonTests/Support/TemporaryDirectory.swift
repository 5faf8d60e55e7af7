import Foundation
import WeaveDIPosix

/// A directory under /tmp, removed with everything in it when the value goes away.
final class TemporaryDirectory: @unchecked Sendable {  // immutable after init
    let path: String

    init(_ label: String = "weavedid") {
        var template = Array("/tmp/\(label)-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `text` to `name` inside the directory; returns the full path.
    @discardableResult
    func write(_ name: String, _ text: String) -> String {
        let file = path + "/" + name
        try? FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: file, contents: Data(text.utf8))
        return file
    }

    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The content of `name` once it holds `text`, or nil if it does not within `limit`: for a
    /// file the daemon writes in the background, as `jobs.json` after a run (the run's reply
    /// can come before the write).
    func read(_ name: String, once text: String, within limit: Duration = .seconds(30)) -> String? {
        let deadline = ContinuousClock.now + limit
        while true {
            if let content = read(name), content.contains(text) { return content }
            if ContinuousClock.now >= deadline { return nil }
            usleep(20_000)
        }
    }
}

extension TemporaryDirectory {
    /// The layout of the tests of a link made after the daemon's start: `source/a.txt`, the
    /// destination `box/mirror`, and `other/mirror/<inside>` (the daemon's path to protect),
    /// clear of it until `turnBoxIntoALinkToOther`.
    func makeBoxAndOther(holding inside: String = "") throws {
        write("source/a.txt", "a")
        try FileManager.default.createDirectory(atPath: path + "/box/mirror", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: path + "/other/mirror/" + inside, withIntermediateDirectories: true)
    }

    /// Replaces `box` by a link to `other`: the destination `box/mirror` now resolves to
    /// `other/mirror`.
    func turnBoxIntoALinkToOther() throws {
        try FileManager.default.removeItem(atPath: path + "/box")
        try FileDescriptor.currentWorkingDirectory.createSymbolicLink(at: path + "/box", pointingTo: "other")
    }
}
