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
    }

    @Test func monotonicMicroseconds_matchesNanosecondClock() {
        // Read between two readings of the nanosecond clock: between them, in microseconds.
        let before = SystemClock.monotonicNanoseconds()
        let microseconds = SystemClock.monotonicMicroseconds()
        let after = SystemClock.monotonicNanoseconds()
        #expect(microseconds >= before / 1_000)
        #expect(microseconds <= after / 1_000)
        // CLOCK_MONOTONIC counts from boot, like /proc/uptime (which includes suspend, so only >=).
        let uptime = try? String(contentsOfFile: "/proc/uptime", encoding: .utf8)
        if let seconds = uptime?.split(separator: " ").first.flatMap({ Double($0) }) {
            #expect(Double(microseconds) / 1_000_000 <= seconds + 1)
        }
    }

    @Test func realtime_matchesFoundationDate() {
        // Read between two readings of Foundation's clock: between them (give or take the
        // rounding of a Double of seconds since 1970, well under a millisecond).
        let before = Date().timeIntervalSince1970
        let now = SystemClock.realtime()
        let after = Date().timeIntervalSince1970
        let seconds = Double(now.seconds) + Double(now.nanoseconds) / 1e9
        #expect(seconds >= before - 0.001 && seconds <= after + 0.001, "\(before) \(seconds) \(after)")
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
        SystemClock.sleep(for: .zero)
        SystemClock.sleep(for: .milliseconds(-5))
    }
}
