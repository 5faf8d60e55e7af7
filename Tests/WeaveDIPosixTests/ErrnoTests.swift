import Glibc
import Testing
import WeaveDIPosix

@Suite struct ErrnoTests {
    @Test func commonCodes_haveSymbolicNames() {
        #expect(Errno.noSuchFileOrDirectory.name == "ENOENT")
        #expect(Errno.interrupted.name == "EINTR")
        #expect(Errno.wouldBlock.name == "EAGAIN")
        #expect(Errno.wouldBlock == Errno.resourceTemporarilyUnavailable)
        #expect(Errno.tooManySymbolicLinkLevels.name == "ELOOP")
        #expect(Errno.crossDeviceLink.name == "EXDEV")
        #expect(Errno.illegalByteSequence.name == "EILSEQ")
        #expect(Errno.addressInUse.name == "EADDRINUSE")
        #expect(Errno.directoryNotEmpty.name == "ENOTEMPTY")
        #expect(Errno.connectionRefused.rawValue == ECONNREFUSED)
        #expect(Errno.brokenPipe.rawValue == EPIPE)
        #expect(Errno(rawValue: 9999).name == "E9999")
    }

    @Test func description_combinesStrerrorAndName() {
        #expect(Errno.noSuchFileOrDirectory.description == "No such file or directory (ENOENT)")
        #expect(Errno.permissionDenied.description == "Permission denied (EACCES)")
        #expect(Errno.brokenPipe.message == "Broken pipe")
    }

    @Test func failingCall_throwsMatchingErrno() {
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try FileDescriptor.open("/nonexistent/weavedi/file", .readOnly)
        }
        #expect(throws: Errno.badFileDescriptor) {
            try FileDescriptor(rawValue: -1).fsync()
        }
    }

    @Test func errnoPattern_matchesAnyError() {
        let error: any Error = Errno.fileExists
        var matched = false
        switch error {
        case Errno.fileExists: matched = true
        default: matched = false
        }
        #expect(matched)
    }

    @Test func errno_isUsableAsSetElementAndTypedCatch() {
        let retryable: Set<Errno> = [.interrupted, .wouldBlock]
        #expect(retryable.contains(.resourceTemporarilyUnavailable))
        #expect(!retryable.contains(.brokenPipe))
        do {
            _ = try FileDescriptor.open("/proc/self/definitely-missing", .readOnly)
            Issue.record("open should fail")
        } catch .noSuchFileOrDirectory {
            // Typed throws: the catch pattern is an Errno, no cast needed.
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func unknownCode_stillHasMessage() {
        #expect(Errno(rawValue: 9999).message.isEmpty == false)
        #expect(Errno(rawValue: 9999).description.hasSuffix("(E9999)"))
    }
}
