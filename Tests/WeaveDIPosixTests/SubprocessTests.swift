import Glibc
import Testing
import WeaveDIPosix

@Suite struct SubprocessTests {
    @Test func shell_capturesOutputAndExitCode() throws {
        let result = try Subprocess.run("/bin/sh", arguments: ["-c", "echo hi; echo oops >&2; exit 3"],
                                        environment: testEnvironment)
        #expect(result.standardOutputText == "hi\n")
        #expect(result.standardErrorText == "oops\n")
        #expect(result.status == .exited(3))
        #expect(!result.status.isSuccess)
    }

    @Test func environment_isExactlyTheGivenOne() throws {
        let result = try Subprocess.run("env", environment: ["PATH": "/usr/bin:/bin", "WEAVEDI_X": "1"])
        let lines = Set(result.standardOutputText.split(separator: "\n").map(String.init))
        #expect(lines == ["PATH=/usr/bin:/bin", "WEAVEDI_X=1"])
        #expect(result.status.isSuccess)
    }

    @Test func missingExecutable_throwsENOENT() {
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try Subprocess.spawn("weavedi-no-such-tool", environment: testEnvironment)
        }
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try Subprocess.spawn("/nonexistent/tool", environment: testEnvironment)
        }
    }

    @Test func killWithSIGTERM_reportsSignal15() throws {
        let child = try Subprocess.spawn("sleep", arguments: ["5"], environment: testEnvironment,
                                         standardOutput: .discard, standardError: .discard)
        #expect(try child.waitIfExited() == nil)
        try child.kill(.terminate)
        let status = try child.wait()
        #expect(status == .signaled(.terminate))
        #expect(status == .signaled(Signal(rawValue: 15)))
        #expect(throws: Errno.noChildProcess) { _ = try child.wait() }
    }

    @Test func child_hasEmptySignalMask_whileParentBlocksSIGTERM() throws {
        let old = try SignalSet([.terminate]).blockInCurrentThread()
        defer { _ = try? old.setAsCurrentThreadMask() }
        // Control: this thread really blocks SIGTERM (bit 15 = 0x4000 in SigBlk).
        let own = try FileDescriptor.open("/proc/thread-self/status", .readOnly)
        let ownStatus = String(decoding: try own.descriptor.readToEnd(), as: UTF8.self)
        let ownMask = try #require(ownStatus.split(separator: "\n").first { $0.hasPrefix("SigBlk:") })
        let ownBits = UInt64(ownMask.split(separator: "\t").last ?? "", radix: 16) ?? 0
        #expect(ownBits & 0x4000 != 0)

        // Run grep directly: Debian's /bin/sh (dash) clears its own mask at startup, which would
        // hide a mask inherited from us.
        let result = try Subprocess.run("grep", arguments: ["SigBlk", "/proc/self/status"],
                                        environment: testEnvironment)
        #expect(result.status.isSuccess)
        #expect(result.standardOutputText == "SigBlk:\t0000000000000000\n")
    }

    @Test func child_hasDefaultDispositions_evenWhenParentIgnores() throws {
        // The parent ignores SIGPIPE (see ignoreBrokenPipe); SIG_IGN survives exec unless reset.
        try Signal.ignoreBrokenPipe()
        let result = try Subprocess.run("/bin/sh", arguments: ["-c", "grep SigIgn /proc/self/status"],
                                        environment: testEnvironment)
        let bits = UInt64(result.standardOutputText.split(separator: "\t").last?
            .trimmingCharacters(in: .newlines) ?? "", radix: 16) ?? .max
        #expect(bits & (1 << (UInt64(SIGPIPE) - 1)) == 0)
    }

    @Test func child_getsNoDescriptorButTheStandardOnes_evenOnesNotCloseOnExec() throws {
        let directory = try TemporaryDirectory()
        let inheritable = try FileDescriptor.open(directory.child("f"), .writeOnly, options: [.create], closeOnExec: false)
        let raw = inheritable.descriptor.rawValue
        #expect(try !inheritable.descriptor.isCloseOnExec())
        let result = try Subprocess.run(
            "/bin/sh", arguments: ["-c", "ls /proc/$$/fd; [ -e /proc/$$/fd/\(raw) ] && echo open || echo closed"],
            environment: testEnvironment)
        let lines = result.standardOutputText.split(separator: "\n")
        #expect(lines.last == "closed", "descriptor \(raw) reached the child: \(lines)")
        // The shell has 0 to 2 only (the parent has a dozen more, from the test runtime).
        #expect(lines.dropLast() == ["0", "1", "2"], "\(lines)")
    }

    @Test func capturedOutput_largerThanPipeBuffer_doesNotDeadlock() throws {
        let result = try Subprocess.run(
            "/bin/sh", arguments: ["-c", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2"],
            environment: testEnvironment)
        #expect(result.standardOutput.count == 300_000)
        #expect(result.standardError.count == 200_000)
        #expect(result.status.isSuccess)
    }
}
