import Foundation
import Testing
import WeaveDIPosix

/// The real daemon's standard error when nobody reads it.
@Suite struct DaemonOutputTests {
    /// Standard error a pipe already full when the daemon starts (a logger that stopped
    /// reading, journald that does not answer): the daemon starts, answers SIGTERM and exits 0
    /// all the same, its lines dropped meanwhile. Once the pipe is read, the next line is
    /// preceded by one saying how many were dropped (the test reads it whether it comes while
    /// the test reads the filler or later).
    @Test func aFullStandardErrorPipe_holdsNeitherTheStartNorTheStop() throws {
        let directory = TemporaryDirectory()
        let fifo = directory.path + "/stderr.fifo"
        try #require(mkfifo(fifo, 0o600) == 0)
        // Held open for reading (and writing, so that opening it never waits), and filled.
        let pipe = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        try #require(pipe >= 0)
        defer { close(pipe) }
        let filler = [UInt8](repeating: UInt8(ascii: "x"), count: 4096)
        while filler.withUnsafeBytes({ Glibc.write(pipe, $0.baseAddress, $0.count) }) > 0 {}
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(directory: directory, notify: notify, logFile: fifo)
        #expect(notify.wait(forLine: "READY=1"), "\(notify.lines)")
        // Read everything so far (the filler, and whatever lines went in before it was full),
        // then stop the daemon and read what it wrote meanwhile.
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        func readAll() {
            while true {
                let count = buffer.withUnsafeMutableBytes { read(pipe, $0.baseAddress, $0.count) }
                guard count > 0 else { return }
                output += buffer[..<count]
            }
        }
        readAll()
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
        readAll()
        let lines = String(decoding: output.drop { $0 == UInt8(ascii: "x") }, as: UTF8.self).split(separator: "\n")
        let dropped = lines.firstIndex { $0.contains("log line(s) dropped: standard error took nothing for") }
        let stopping = lines.firstIndex { $0.contains("stopping: SIGTERM") }
        #expect(dropped != nil && stopping != nil && dropped! < stopping!, "\(lines)")
    }

    /// Started with standard input, output and error closed (`weavedid <&- >&- 2>&-`): the
    /// daemon opens /dev/null on all three before anything else, so that no socket or file it
    /// opens later takes one of their numbers and receives its log lines; and it serves.
    @Test func closedStandardDescriptors_areOpenedOnDevNull() throws {
        let directory = TemporaryDirectory()
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(directory: directory, notify: notify, prefix: "exec 0<&- 1>&- 2>&- &&")
        try #require(notify.wait(forLine: "READY=1"), "\(notify.lines)")
        for descriptor in 0...2 {
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon.pid)/fd/\(descriptor)")
            #expect(target == "/dev/null", "descriptor \(descriptor)")
        }
        let reply = try daemon.sendCall("Ping").varlinkReply()
        #expect(reply?.parameter("version")?.stringValue == "0.1.0")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0))
    }
}
