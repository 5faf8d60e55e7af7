import Foundation
import Glibc
import Testing
import WeaveDIPosix

@Suite struct ClockTests {
    @Test func monotonic_advancesAcrossSleep() {
        let before = SystemClock.monotonicNanoseconds()
        usleep(20_000)
        let after = SystemClock.monotonicNanoseconds()
        #expect(after > before)
        #expect(after - before >= 20_000_000)
        #expect(after - before < 5_000_000_000)
    }

    @Test func monotonicMicroseconds_matchesNanosecondClock() {
        let nanoseconds = SystemClock.monotonicNanoseconds()
        let microseconds = SystemClock.monotonicMicroseconds()
        #expect(microseconds >= nanoseconds / 1_000)
        #expect(microseconds - nanoseconds / 1_000 < 1_000_000)
        // CLOCK_MONOTONIC counts from boot, like /proc/uptime (which includes suspend, so only >=).
        let uptime = try? String(contentsOfFile: "/proc/uptime", encoding: .utf8)
        if let seconds = uptime?.split(separator: " ").first.flatMap({ Double($0) }) {
            #expect(Double(microseconds) / 1_000_000 <= seconds + 1)
        }
    }

    @Test func realtime_matchesFoundationDate() {
        let now = SystemClock.realtime()
        let reference = Date().timeIntervalSince1970
        #expect(abs(Double(now.seconds) + Double(now.nanoseconds) / 1e9 - reference) < 2)
        #expect((0..<1_000_000_000).contains(now.nanoseconds))
    }

    @Test func timeSpec_normalizesAndFormats() {
        #expect(TimeSpec(seconds: 1, nanoseconds: 1_500_000_000) == TimeSpec(seconds: 2, nanoseconds: 500_000_000))
        #expect(TimeSpec(seconds: 1, nanoseconds: -1) == TimeSpec(seconds: 0, nanoseconds: 999_999_999))
        #expect(TimeSpec(seconds: 5, nanoseconds: 7).description == "5.000000007")
        #expect(TimeSpec(seconds: 1, nanoseconds: 0) < TimeSpec(seconds: 1, nanoseconds: 1))
        #expect(TimeSpec(seconds: 2, nanoseconds: 3).totalNanoseconds == 2_000_000_003)
    }

    @Test func sleep_waitsAtLeastTheDuration() {
        let before = SystemClock.monotonicNanoseconds()
        SystemClock.sleep(for: .milliseconds(30))
        let elapsed = SystemClock.monotonicNanoseconds() - before
        #expect(elapsed >= 30_000_000)
        #expect(elapsed < 3_000_000_000)
        SystemClock.sleep(for: .zero)
        SystemClock.sleep(for: .milliseconds(-5))
    }
}
