import Foundation
import Glibc
import WeaveDIPosix

/// A fresh directory under /tmp, removed with everything in it on deinit.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = try FileDescriptor.makeTemporaryDirectory(template: "/tmp/weavedi-posix-test.XXXXXX")
    }

    func child(_ name: String) -> String {
        path + "/" + name
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A unique name for abstract sockets, so parallel tests never collide.
func uniqueName(_ prefix: String) -> String {
    "\(prefix)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
}

/// Where `/proc/self/fd/<n>` points, or nil when the descriptor is closed.
func procTarget(of raw: Int32) -> String? {
    try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(raw)")
}

/// A minimal environment for child processes.
let testEnvironment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C"]
