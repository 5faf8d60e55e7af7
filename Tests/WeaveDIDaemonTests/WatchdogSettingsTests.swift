import Testing
import WeaveDIDaemon

/// `WATCHDOG_USEC` and `WATCHDOG_PID` are read alike by the settings and by the warning about
/// them: a watchdog the warning says is off sends no pings.
@Suite struct WatchdogSettingsTests {
    /// A sign, which `UInt64("+5")` and `Int32("+5")` take, is no decimal number: systemd never
    /// writes one, and the warning says the watchdog is off.
    @Test(arguments: [
        ["WATCHDOG_USEC": "+30000000"],
        ["WATCHDOG_USEC": "-0"],
        ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "+5"],
        ["WATCHDOG_USEC": "+30000000", "WATCHDOG_PID": "5"],
    ])
    func aSignedNumber_turnsTheWatchdogOff_asTheWarningSays(environment: [String: String]) throws {
        let problem = try #require(WatchdogSettings.problem(environment: environment, pid: 5))
        #expect(problem.hasSuffix("no watchdog pings"), "\(problem)")
        #expect(WatchdogSettings(environment: environment, pid: 5) == nil, "\(problem)")
    }

    /// Plain decimal numbers, leading zeros among them, are read as before.
    @Test func decimalNumbers_turnTheWatchdogOn() {
        for environment in [["WATCHDOG_USEC": "30000000"], ["WATCHDOG_USEC": "030000000", "WATCHDOG_PID": "0005"]] {
            #expect(WatchdogSettings.problem(environment: environment, pid: 5) == nil)
            #expect(WatchdogSettings(environment: environment, pid: 5)?.timeout == .seconds(30))
        }
    }
}
