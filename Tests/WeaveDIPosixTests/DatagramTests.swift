import Glibc
import Testing
import WeaveDIPosix

@Suite struct DatagramTests {
    @Test func abstractAddress_hasExactLength() throws {
        let name = uniqueName("weavedi-notify")
        let address = try UnixSocketAddress("@" + name)
        #expect(address.kind == .abstract)
        #expect(address.bytes == Array(name.utf8))
        #expect(address.description == "@" + name)
        let sunPathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        #expect(Int(address.length) == sunPathOffset + 1 + name.utf8.count)
    }

    @Test func abstractDatagram_roundTrip_likeSdNotify() throws {
        let name = uniqueName("weavedi-notify")
        let address = try UnixSocketAddress("@" + name)
        let receiver = try UnixSocket.bindDatagram(at: address)
        // getsockname reports the kernel's exact length: a padded bind would show trailing NULs.
        #expect(try receiver.descriptor.localAddress() == address)

        let message = Array("READY=1\nSTATUS=serving\nMONOTONIC_USEC=\(SystemClock.monotonicMicroseconds())".utf8)
        #expect(try UnixSocket.sendDatagram(message, to: address) == message.count)
        var entries = [PollDescriptor(receiver.descriptor, events: .readable)]
        #expect(try PollDescriptor.poll(&entries, timeout: .seconds(5)) == 1)
        let (bytes, sender) = try receiver.descriptor.receiveMessage()
        #expect(bytes == message)
        #expect(sender.kind == .unnamed)
    }

    @Test func abstractName_paddedToFullLength_isADifferentAddress() throws {
        // Control: the kernel compares abstract names over the whole length, so sending to the
        // same name with sizeof(sockaddr_un) as length must not reach our receiver.
        let name = uniqueName("weavedi-pad")
        let receiver = try UnixSocket.bindDatagram(at: UnixSocketAddress(abstractName: name), nonBlocking: true)
        let sender = try UnixSocket.make(.datagram)
        var raw = sockaddr_un()
        raw.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &raw.sun_path) { path in
            for (index, byte) in name.utf8.enumerated() { path[index + 1] = byte }
        }
        let result = withUnsafePointer(to: &raw) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(sender.rawValue, "x", 1, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(result == -1)
        #expect(Errno.current == .connectionRefused)
        #expect(throws: Errno.wouldBlock) { _ = try receiver.descriptor.receiveMessage() }
    }

    @Test func pathDatagram_roundTrip_reportsBoundSender() throws {
        let directory = try TemporaryDirectory()
        let receiverAddress = try UnixSocketAddress(path: directory.child("notify"))
        let senderAddress = try UnixSocketAddress(path: directory.child("sender"))
        let receiver = try UnixSocket.bindDatagram(at: receiverAddress)
        let sender = try UnixSocket.bindDatagram(at: senderAddress)
        #expect(try FileStatus(path: receiverAddress.description).kind == .socket)

        #expect(try sender.descriptor.send(Array("WATCHDOG=1".utf8), to: receiverAddress) == 10)
        let (bytes, from) = try receiver.descriptor.receiveMessage()
        #expect(String(decoding: bytes, as: UTF8.self) == "WATCHDOG=1")
        #expect(from == senderAddress)

        // One-shot send from an unbound socket, as sd_notify does.
        try UnixSocket.sendDatagram(Array("STOPPING=1".utf8), to: receiverAddress)
        let second = try receiver.descriptor.receiveMessage()
        #expect(second.bytes == Array("STOPPING=1".utf8))
        #expect(second.sender == .unnamed)
        #expect(try receiver.descriptor.socketType() == .datagram)
        #expect(try !receiver.descriptor.isListening())
    }

    @Test func datagramToMissingPath_throwsENOENT() throws {
        let directory = try TemporaryDirectory()
        #expect(throws: Errno.noSuchFileOrDirectory) {
            try UnixSocket.sendDatagram(Array("READY=1".utf8), to: UnixSocketAddress(path: directory.child("gone")))
        }
    }
}
