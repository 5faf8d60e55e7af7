import Glibc
import Testing
import WeaveDIPosix

@Suite struct UnixSocketTests {
    @Test func streamRoundTrip_withPeerCredentialsOfOurProcess() throws {
        let directory = try TemporaryDirectory()
        let address = try UnixSocketAddress(path: directory.child("control.sock"))
        let listener = try UnixSocket.listen(at: address, permissions: 0o660)
        #expect(try listener.descriptor.isListening())
        #expect(try listener.descriptor.socketType() == .stream)
        #expect(try listener.descriptor.socketDomain() == AF_UNIX)
        #expect(try listener.descriptor.localAddress() == address)
        #expect(try FileStatus(path: address.description).permissions == 0o660)
        // Non-blocking listener with nothing pending.
        #expect(throws: Errno.wouldBlock) { _ = try listener.descriptor.accept() }

        let client = try UnixSocket.connect(to: address)
        #expect(try !client.descriptor.isListening())
        var entries = [PollDescriptor(listener.descriptor, events: .readable)]
        #expect(try PollDescriptor.poll(&entries, timeout: .seconds(5)) == 1)
        #expect(entries[0].returnedEvents.contains(.readable))

        let server = try listener.descriptor.accept()
        #expect(try server.descriptor.isNonBlocking())
        #expect(try server.descriptor.isCloseOnExec())
        #expect(try client.descriptor.isCloseOnExec())
        #expect(try server.descriptor.peerCredentials()
            == PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
        #expect(try client.descriptor.peerCredentials().pid == getpid())
        #expect(try client.descriptor.peerAddress() == address)

        try client.descriptor.sendAll(Array("PING\n".utf8))
        var serverEntries = [PollDescriptor(server.descriptor, events: .readable)]
        try PollDescriptor.poll(&serverEntries, timeout: .seconds(5))
        #expect(try server.descriptor.receive(upToCount: 100) == Array("PING\n".utf8))
        try server.descriptor.sendAll(Array("PONG\n".utf8))
        #expect(try client.descriptor.receive(upToCount: 100) == Array("PONG\n".utf8))

        try client.descriptor.shutdown(.write)
        try PollDescriptor.poll(&serverEntries, timeout: .seconds(5))
        #expect(try server.descriptor.receive(upToCount: 100).isEmpty)  // end of stream
    }

    @Test func abstractStreamSocket_bindConnectAccept() throws {
        let address = try UnixSocketAddress("@" + uniqueName("weavedid-control"))
        let listener = try UnixSocket.listen(at: address, nonBlocking: false)
        #expect(try listener.descriptor.localAddress() == address)
        let client = try UnixSocket.connect(to: address)
        let server = try listener.descriptor.accept(nonBlocking: false)
        #expect(try client.descriptor.peerAddress() == address)
        #expect(try server.descriptor.peerAddress() == .unnamed)
        try client.descriptor.sendAll(Array("hello".utf8))
        #expect(try server.descriptor.receive(upToCount: 16) == Array("hello".utf8))
        try client.close()
        #expect(try server.descriptor.receive(upToCount: 16).isEmpty)
    }

    @Test func sendToClosedPeer_throwsEPIPE_insteadOfSIGPIPE() throws {
        let directory = try TemporaryDirectory()
        let address = try UnixSocketAddress(path: directory.child("s"))
        let listener = try UnixSocket.listen(at: address, nonBlocking: false)
        let client = try UnixSocket.connect(to: address)
        let server = try listener.descriptor.accept(nonBlocking: false)
        try server.close()
        // Block SIGPIPE in this thread: without MSG_NOSIGNAL the kernel would leave one pending
        // here (blocked signals are queued even when ignored), so sigpending detects it.
        let old = try SignalSet([.pipe]).blockInCurrentThread()
        let drain = try SignalReader(signals: [.pipe])
        defer {
            while (try? drain.read()) != nil {}
            _ = try? old.setAsCurrentThreadMask()
        }
        #expect(throws: Errno.brokenPipe) {
            for _ in 0..<4 { try client.descriptor.sendAll([UInt8](repeating: 1, count: 4096)) }
        }
        var pending = sigset_t()
        #expect(sigpending(&pending) == 0)
        #expect(sigismember(&pending, SIGPIPE) == 0)
    }

    @Test func connectWithoutListener_throwsConnectionRefusedOrENOENT() throws {
        let directory = try TemporaryDirectory()
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try UnixSocket.connect(to: UnixSocketAddress(path: directory.child("missing")))
        }
        #expect(throws: Errno.connectionRefused) {
            _ = try UnixSocket.connect(to: UnixSocketAddress(abstractName: uniqueName("nobody")))
        }
    }

    @Test func staleSocketFile_isRemovedOnlyWhenAsked() throws {
        let directory = try TemporaryDirectory()
        let address = try UnixSocketAddress(path: directory.child("daemon.sock"))
        try UnixSocket.listen(at: address).close()  // leaves the socket file behind
        #expect(throws: Errno.addressInUse) { _ = try UnixSocket.listen(at: address) }
        let listener = try UnixSocket.listen(at: address, removingStaleSocket: true)
        #expect(try listener.descriptor.isListening())
        // A regular file is never removed.
        let other = try UnixSocketAddress(path: directory.child("regular"))
        try FileDescriptor.open(other.description, .writeOnly, options: [.create]).close()
        #expect(throws: Errno.addressInUse) { _ = try UnixSocket.listen(at: other, removingStaleSocket: true) }
    }

    @Test func tooLongPath_givesClearError() throws {
        let longPath = "/tmp/" + String(repeating: "x", count: 150) + ".sock"
        #expect(throws: UnixSocketAddressError.pathTooLong(path: longPath, byteCount: 160, maximum: 107)) {
            _ = try UnixSocketAddress(path: longPath)
        }
        do {
            _ = try UnixSocketAddress(longPath)
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("160 bytes"))
            #expect(error.description.contains("107-byte limit of sun_path"))
        }
        let exactlyMaximum = "/" + String(repeating: "y", count: 106)
        #expect(try UnixSocketAddress(path: exactlyMaximum).length == 2 + 107 + 1)
        #expect(throws: UnixSocketAddressError.emptyPath) { _ = try UnixSocketAddress(path: "") }
        #expect(throws: UnixSocketAddressError.self) {
            _ = try UnixSocketAddress("@" + String(repeating: "z", count: 108))
        }
    }

    @Test func pollTimesOut_whenNothingIsReadable() throws {
        let receiver = try UnixSocket.bindDatagram(at: UnixSocketAddress(abstractName: uniqueName("idle")))
        var entries = [PollDescriptor(receiver.descriptor, events: .readable)]
        let start = SystemClock.monotonicNanoseconds()
        #expect(try PollDescriptor.poll(&entries, timeout: .milliseconds(50)) == 0)
        #expect(SystemClock.monotonicNanoseconds() - start >= 45_000_000)
        #expect(entries[0].returnedEvents.isEmpty)
    }
}
