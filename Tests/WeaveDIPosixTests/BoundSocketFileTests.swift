import Glibc
import Testing
import WeaveDIPosix

/// `boundSocketFile()`: which file a Unix socket was bound to, which its path alone cannot say.
/// Where the kernel has no `unix_diag` (or netlink is not allowed), `boundSocketFile()` throws
/// for every socket and the daemon falls back on the file at the path when it started: those
/// tests say they skipped rather than fail.
@Suite struct BoundSocketFileTests {
    /// Whether the kernel answers here: an unbound socket is said to be bound to no file.
    static let kernelAnswers: Bool = {
        guard let socket = try? UnixSocket.make(.stream) else { return false }
        do {
            _ = try socket.descriptor.boundSocketFile()
            return true
        } catch {
            return false
        }
    }()

    @Test(.enabled(if: kernelAnswers, "the kernel does not answer NETLINK_SOCK_DIAG for Unix sockets here (no unix_diag)"))
    func aBoundSocket_namesItsFile_andNotOneMadeAtItsPathSince() throws {
        let directory = try TemporaryDirectory()
        let path = directory.child("control.sock")
        let address = try UnixSocketAddress(path: path)
        let first = try UnixSocket.listen(at: address)
        let file = try #require(try first.descriptor.boundSocketFile())
        #expect(file.matches(try FileStatus(path: path, followSymlinks: false)))
        // The file deleted and another socket bound at the path: same path, another file.
        try FileDescriptor.currentWorkingDirectory.unlink(at: path)
        let second = try UnixSocket.listen(at: address)
        #expect(!file.matches(try FileStatus(path: path, followSymlinks: false)))
        #expect(try second.descriptor.boundSocketFile()?.matches(try FileStatus(path: path, followSymlinks: false)) == true)
        // A regular file where the socket was is not it either.
        try FileDescriptor.currentWorkingDirectory.unlink(at: path)
        let regular = try FileDescriptor.currentWorkingDirectory.open(at: path, .writeOnly, options: [.create])
        #expect(!file.matches(try regular.descriptor.status()))
    }

    @Test(.enabled(if: kernelAnswers, "the kernel does not answer NETLINK_SOCK_DIAG for Unix sockets here (no unix_diag)"))
    func anUnboundSocket_isBoundToNoFile() throws {
        let socket = try UnixSocket.make(.stream)
        #expect(try socket.descriptor.boundSocketFile() == nil)
    }

    @Test func aDescriptorThatIsNoSocket_throws() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.currentWorkingDirectory.open(at: directory.child("f"), .writeOnly, options: [.create])
        #expect(throws: Errno.self) { _ = try file.descriptor.boundSocketFile() }
    }
}
