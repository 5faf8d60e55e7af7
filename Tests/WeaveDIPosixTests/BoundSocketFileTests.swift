import Glibc
import Testing
import WeaveDIPosix

/// `boundSocketFile()`: which file a Unix socket was bound to, which its path alone cannot say.
@Suite struct BoundSocketFileTests {
    @Test func aBoundSocket_namesItsFile_andNotOneMadeAtItsPathSince() throws {
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

    @Test func anUnboundSocket_isBoundToNoFile() throws {
        let socket = try UnixSocket.make(.stream)
        #expect(try socket.descriptor.boundSocketFile() == nil)
    }

    @Test func aDescriptorThatIsNoSocket_throws() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.currentWorkingDirectory.open(at: directory.child("f"), .writeOnly, options: [.create])
        #expect(throws: Errno.self) { _ = try file.descriptor.boundSocketFile() }
    }
}
