import Glibc
import Testing
import WeaveDIPosix

@Suite struct SignalTests {
    @Test func signalNamesAndSets() {
        #expect(Signal.terminate.name == "SIGTERM")
        #expect(Signal.terminate.description == "SIGTERM (15)")
        #expect(Signal.user1.rawValue == SIGUSR1)
        var set: SignalSet = [.terminate, .hangup]
        #expect(set.contains(.terminate))
        #expect(!set.contains(.user1))
        #expect(set.signals == [.hangup, .terminate])
        set.remove(.hangup)
        #expect(set == [.terminate])
        #expect(SignalSet().isEmpty)
        #expect(SignalSet.all.contains(.user2))
    }

    @Test func blockInCurrentThread_changesMaskAndRestores() throws {
        let original = try SignalSet([.user2]).blockInCurrentThread()
        defer { _ = try? original.setAsCurrentThreadMask() }
        #expect(try SignalSet.currentThreadMask().contains(.user2))
        try SignalSet([.user2]).unblockInCurrentThread()
        #expect(try !SignalSet.currentThreadMask().contains(.user2))
    }

    @Test func signalReader_receivesBlockedSIGUSR1_withSenderPid() throws {
        // Signal masks are per thread and the test runner has other threads that do not block
        // SIGUSR1, so a process-directed kill(getpid()) could be taken by one of them (and kill the
        // runner). Direct the signal at this thread instead: a signalfd reads both kinds.
        let old = try SignalSet([.user1]).blockInCurrentThread()
        let reader = try SignalReader(signals: [.user1])
        defer {
            while (try? reader.read()) != nil {}  // never leave a pending SIGUSR1 behind
            _ = try? old.setAsCurrentThreadMask()
        }
        #expect(try reader.read() == nil)  // non-blocking and nothing pending

        try Signal.user1.sendToCurrentThread()
        var entries = [PollDescriptor(reader.fileDescriptor, events: .readable)]
        #expect(try PollDescriptor.poll(&entries, timeout: .seconds(5)) == 1)
        let received = try #require(try reader.read())
        #expect(received.signal == .user1)
        #expect(received.senderPID == getpid())
        #expect(received.senderUID == getuid())
        #expect(try reader.read() == nil)
    }

    @Test func signalReader_ignoresSignalsOutsideItsSet() throws {
        let old = try SignalSet([.user2]).blockInCurrentThread()
        let reader = try SignalReader(signals: [.hangup])
        let drain = try SignalReader(signals: [.user2])
        defer {
            while (try? drain.read()) != nil {}
            _ = try? old.setAsCurrentThreadMask()
        }
        try Signal.user2.sendToCurrentThread()
        var entries = [PollDescriptor(reader.fileDescriptor, events: .readable)]
        #expect(try PollDescriptor.poll(&entries, timeout: .milliseconds(50)) == 0)
        #expect(try drain.read()?.signal == .user2)
    }

    @Test func ignoreBrokenPipe_setsSIG_IGN() throws {
        try Signal.ignoreBrokenPipe()
        var action = sigaction()
        #expect(sigaction(SIGPIPE, nil, &action) == 0)
        let handler = unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self)
        #expect(handler == 1)  // SIG_IGN
    }
}
