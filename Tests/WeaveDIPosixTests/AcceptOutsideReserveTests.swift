import Glibc
import Testing
@testable import WeaveDIPosix

/// `acceptOutsideReserve`: a connection the kernel numbers in the descriptor reserve (another
/// thread took the last descriptors below it between the look at the lowest free one and
/// `accept4`) is moved onto the place held for it, not closed unanswered.
///
/// The reserve is process-wide and other tests open descriptors meanwhile, so which numbers
/// are reserved is given here rather than set for the whole process.
@Suite struct AcceptOutsideReserveTests {
    @Test func aConnectionNumberedInTheReserve_isMovedOntoThePlaceHeld_andServed() throws {
        let address = try UnixSocketAddress("@" + uniqueName("weavedid-reserve"))
        let listener = try UnixSocket.listen(at: address)
        let client = try UnixSocket.connect(to: address)
        let place = try listener.descriptor.duplicate()
        let placeNumber = place.rawValue
        var given: Int32 = -1
        let server = try listener.descriptor.accept(nonBlocking: true, holding: place) { raw in
            given = raw
            return true
        }
        #expect(given != placeNumber && given >= 0)
        #expect(server.rawValue == placeNumber, "the connection is on the place held for it")
        #expect(try server.descriptor.isNonBlocking())
        #expect(try server.descriptor.isCloseOnExec())
        #expect(try server.descriptor.peerCredentials().pid == getpid())
        try client.descriptor.sendAll(Array("ping".utf8))
        var entries = [PollDescriptor(server.descriptor, events: .readable)]
        try PollDescriptor.poll(&entries, timeout: .seconds(5))
        #expect(try server.descriptor.receive(upToCount: 16) == Array("ping".utf8))
        try server.descriptor.sendAll(Array("pong".utf8))
        #expect(try client.descriptor.receive(upToCount: 16) == Array("pong".utf8))
        // The listener itself is untouched: the place held a duplicate of it.
        let second = try UnixSocket.connect(to: address)
        entries = [PollDescriptor(listener.descriptor, events: .readable)]
        try PollDescriptor.poll(&entries, timeout: .seconds(5))
        let next = try listener.descriptor.accept()
        #expect(try next.descriptor.peerCredentials().pid == getpid())
        _ = second
    }

    @Test func aConnectionBelowTheReserve_staysWhereTheKernelPutIt() throws {
        let address = try UnixSocketAddress("@" + uniqueName("weavedid-reserve"))
        let listener = try UnixSocket.listen(at: address)
        let client = try UnixSocket.connect(to: address)
        let place = try listener.descriptor.duplicate()
        let placeNumber = place.rawValue
        var given: Int32 = -1
        let server = try listener.descriptor.accept(nonBlocking: false, holding: place) { raw in
            given = raw
            return false
        }
        #expect(server.rawValue == given && given != placeNumber)
        #expect(try !server.descriptor.isNonBlocking())
        try client.descriptor.sendAll(Array("ping".utf8))
        #expect(try server.descriptor.receive(upToCount: 16) == Array("ping".utf8))
    }

    @Test func withNothingPending_itWouldBlock() throws {
        let address = try UnixSocketAddress("@" + uniqueName("weavedid-reserve"))
        let listener = try UnixSocket.listen(at: address)
        #expect(throws: Errno.wouldBlock) { _ = try listener.descriptor.acceptOutsideReserve() }
        let place = try listener.descriptor.duplicate()
        var thrown: Errno?
        do { _ = try listener.descriptor.accept(nonBlocking: true, holding: place) { _ in true } } catch { thrown = error }
        #expect(thrown == .wouldBlock)
    }
}
