import TestSupport
import Testing
import WeaveDI
@testable import WeaveDIDaemon

/// The services as a group: a reload and a stop that overlap.
@Suite struct ServiceGroupTests {
    /// A service that records what it is asked; its reload, when `holdsReload`, waits until
    /// `release()`, then, when `refusesReload`, throws.
    final class Recorder: DaemonService {
        struct Refusal: Error, CustomStringConvertible {
            var description: String { "the test's service refuses the configuration" }
        }

        let name: String
        let holdsReload: Bool
        let refusesReload: Bool
        private let lock = Locked<(calls: [String], waiter: CheckedContinuation<Void, Never>?, released: Bool)>(([], nil, false))

        init(_ name: String, holdsReload: Bool = false, refusesReload: Bool = false) {
            self.name = name
            self.holdsReload = holdsReload
            self.refusesReload = refusesReload
        }

        var calls: [String] { lock.withLock { $0.calls } }

        func start() async throws { lock.withLock { $0.calls.append("start") } }
        func stop() async { lock.withLock { $0.calls.append("stop") } }

        func reload(_ configuration: DaemonConfiguration) async throws {
            lock.withLock { $0.calls.append("reload") }
            if holdsReload {
                await withCheckedContinuation { continuation in
                    let resume = lock.withLock { state -> Bool in
                        if state.released { return true }
                        state.waiter = continuation
                        return false
                    }
                    if resume { continuation.resume() }
                }
            }
            if refusesReload { throw Refusal() }
        }

        func release() {
            lock.withLock { state in
                state.released = true
                return state.waiter.take()
            }?.resume()
        }
    }

    /// A stop that begins while the first service's reload waits (the daemon stopping during a
    /// reload) stops every service; the reload then goes on to none of those it stopped, which
    /// it would otherwise start again (a timer, a loop) after their stop.
    @Test func aStopDuringAReload_leavesTheServicesItStoppedAlone() async throws {
        let first = Recorder("first", holdsReload: true)
        let second = Recorder("second")
        let group = ServiceGroup([first, second], log: DaemonLog(filter: LogFilter(defaultLevel: .off, overrides: [:]), journald: false))
        try await group.start()
        let configuration = DaemonConfiguration(source: .file(path: "/test.json"), environment: [:], workingDirectory: "/")
        let reload = Task { try await group.reload(configuration) }
        try #require(await eventually { first.calls.last == "reload" })
        await group.stop()
        first.release()
        try await reload.value
        #expect(first.calls == ["start", "reload", "stop"])
        #expect(second.calls == ["start", "stop"])
    }

    /// Without a stop, every service is offered the configuration, in order.
    @Test func aReload_isOfferedToEveryService() async throws {
        let services = [Recorder("first"), Recorder("second")]
        let group = ServiceGroup(services, log: DaemonLog(filter: LogFilter(defaultLevel: .off, overrides: [:]), journald: false))
        try await group.start()
        try await group.reload(DaemonConfiguration(source: .file(path: "/test.json"), environment: [:], workingDirectory: "/"))
        for service in services { #expect(service.calls == ["start", "reload"]) }
    }
}
