import Glibc
import Testing
@testable import WeaveDIPosix

@Suite struct PollTests {
    /// A timeout too long for the clock's nanoseconds (half a `WATCHDOG_USEC` of 18,446,744,073,709,552 µs
    /// is 9,223,372,036.85 s, past `Int64.max` nanoseconds from now) waits as long as the clock counts:
    /// the deadline saturates, it does not trap on overflow.
    @Test(arguments: [
        Duration.seconds(9_223_372_036) + .milliseconds(854),
        Duration.microseconds(18_446_744_073_709_552) / 2,
        Duration.seconds(Int64.max),
        .seconds(9_223_372_036) + .nanoseconds(999_999_999),
    ])
    func aTimeoutPastTheClocksRange_saturates(timeout: Duration) throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { _ = Glibc.close(ends[0]); _ = Glibc.close(ends[1]) }
        var byte: UInt8 = 1
        try #require(write(ends[1], &byte, 1) == 1)
        var entries = [PollDescriptor(FileDescriptor(rawValue: ends[0]), events: .readable)]
        #expect(try PollDescriptor.poll(&entries, timeout: timeout) == 1)
        #expect(entries[0].returnedEvents.contains(.readable))
    }

    @Test func nanoseconds_saturateAndClampNegatives() {
        #expect(PollDescriptor.nanoseconds(.seconds(9_223_372_036) + .milliseconds(854)) == 9_223_372_036_854_000_000)
        #expect(PollDescriptor.nanoseconds(.seconds(9_223_372_036) + .milliseconds(855)) == .max)
        #expect(PollDescriptor.nanoseconds(.seconds(Int64.max)) == .max)
        #expect(PollDescriptor.nanoseconds(.seconds(-1)) == 0)
        #expect(PollDescriptor.nanoseconds(.milliseconds(1500)) == 1_500_000_000)
    }
}
