import Glibc
import Testing
import WeaveDIPosix

@Suite struct FileSystemTests {
    @Test func fileSystemType_namesTheFileSystemOfADescriptor() throws {
        let proc = try FileDescriptor.currentWorkingDirectory.openDirectory(at: "/proc")
        #expect(try proc.descriptor.fileSystemType() == FileSystemType(rawValue: 0x9FA0))  // PROC_SUPER_MAGIC
        #expect(try proc.descriptor.fileSystemType().description == "0x9fa0")
        let sys = try FileDescriptor.currentWorkingDirectory.openDirectory(at: "/sys")
        #expect(try sys.descriptor.fileSystemType() == FileSystemType(rawValue: 0x6265_6572))  // SYSFS_MAGIC
        #expect(FileSystemType.ext4.description == "ext4" && FileSystemType.tmpfs.description == "tmpfs")
        if let shm = try? FileDescriptor.currentWorkingDirectory.openDirectory(at: "/dev/shm") {
            #expect(try shm.descriptor.fileSystemType() == .tmpfs)
        }
        #expect(throws: Errno.badFileDescriptor) { _ = try FileDescriptor(rawValue: -1).fileSystemType() }
    }

    @Test func syncFileSystem_writesOutTheFileSystem_andRefusesABadDescriptor() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open(directory.child("a"), .writeOnly, options: [.create])
        try file.descriptor.writeAll(Array("dirty".utf8))
        let handle = try FileDescriptor.currentWorkingDirectory.openDirectory(at: directory.path)
        try handle.descriptor.syncFileSystem()
        try file.descriptor.syncFileSystem()
        #expect(throws: Errno.badFileDescriptor) { try FileDescriptor(rawValue: -1).syncFileSystem() }
    }

    @Test func kernelRelease_parsesTheLeadingNumbers_andCompares() {
        #expect(KernelRelease(parsing: "6.18.44-fc-v657") == KernelRelease(major: 6, minor: 18))
        #expect(KernelRelease(parsing: "5.8.0") == KernelRelease(major: 5, minor: 8))
        #expect(KernelRelease(parsing: "5.10-rc1") == KernelRelease(major: 5, minor: 10))
        #expect(KernelRelease(parsing: "4.19.0-26-amd64") == KernelRelease(major: 4, minor: 19))
        #expect(KernelRelease(parsing: "6") == nil)
        #expect(KernelRelease(parsing: "linux") == nil)
        #expect(KernelRelease(parsing: "") == nil)
        #expect(KernelRelease(major: 5, minor: 10) > KernelRelease(major: 5, minor: 8))
        #expect(KernelRelease(major: 4, minor: 19) < KernelRelease(major: 5, minor: 8))
        #expect(KernelRelease(major: 6, minor: 0) > KernelRelease(major: 5, minor: 19))
        let current = KernelRelease.current
        #expect(current != nil)
        var names = utsname()
        #expect(uname(&names) == 0)
        let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        #expect(release.hasPrefix("\(current?.major ?? -1).\(current?.minor ?? -1)"))
    }
}
