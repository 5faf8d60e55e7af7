import Foundation
import Synchronization
import Testing
@testable import WeaveDIDaemon
import WeaveDIPosix

/// Warnings a client can cause at will: at most `burst` lines an interval, and the next line
/// written after some were left out says how many (a clock of the test's own).
@Suite struct LogThrottleTests {
    @Test func atMostBurstLinesAnInterval_andTheNextLineCountsTheOthers() throws {
        let directory = TemporaryDirectory()
        let output = try FileDescriptor.open(directory.path + "/log.txt", .writeOnly, options: [.create, .append]).release()
        defer { try? output.close() }
        let log = DaemonLog(filter: LogFilter(defaultLevel: .info, overrides: [:]), journald: true, output: output)
        let clock = Atomic<UInt64>(1_000)
        let throttle = LogThrottle(interval: .seconds(60), burst: 3, now: { clock.load(ordering: .relaxed) })
        for n in 1...10 { throttle.warning(log, "control", "refused \(n)") }
        clock.add(59_000_000_000, ordering: .relaxed)  // still the same minute
        throttle.warning(log, "control", "refused 11")
        clock.add(1_000_000_000, ordering: .relaxed)  // the next one
        throttle.warning(log, "control", "refused 12")
        throttle.warning(log, "control", "refused 13")
        #expect(directory.read("log.txt") == """
            <4>control: refused 1
            <4>control: refused 2
            <4>control: refused 3
            <4>control: refused 12 (8 more like it were not logged: at most 3 a minute)
            <4>control: refused 13

            """)
    }
}
