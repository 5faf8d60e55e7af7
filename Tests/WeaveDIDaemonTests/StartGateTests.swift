import TestSupport
import Testing

@testable import WeaveDIDaemon

/// The gate calls made during the start wait at (`StartGate`): a wait given up, at its limit or
/// by its task's cancellation, leaves nothing registered, so a client calling again and again
/// during a long start cannot make the gate grow; a wait still going is answered once, when the
/// start is over.
@Suite struct StartGateTests {
    @Test func waitsGivenUpAtTheirLimit_leaveNoWaiterBehind() async {
        let gate = StartGate()
        for _ in 0..<50 {
            #expect(await gate.wait(atMost: .milliseconds(1)) == .starting)
        }
        #expect(gate.waiterCount == 0)
        gate.open()
        #expect(await gate.wait(atMost: .seconds(1)) == .started)
    }

    @Test func aCancelledWait_returnsStarting_andIsTakenOut_whileAnotherIsAnsweredOnce() async throws {
        let gate = StartGate()
        let kept = Task { await gate.settled() }
        let cancelled = Task { await gate.settled() }
        // Both registered (the gate's own count says so): then one is cancelled.
        try #require(await eventually { gate.waiterCount >= 2 })
        cancelled.cancel()
        #expect(await cancelled.value == .starting)
        #expect(gate.waiterCount == 1)
        gate.end("is stopping (SIGTERM from pid 1)")
        #expect(await kept.value == .ended("is stopping (SIGTERM from pid 1)"))
        #expect(gate.waiterCount == 0)
        // A wait cancelled before it began registers nothing.
        let other = StartGate()
        let late = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await other.settled()
        }
        #expect(await late.value == .starting)
        #expect(other.waiterCount == 0)
    }
}
