/// One long-lived part of the daemon (control socket, health loop, job scheduler).
///
/// The supervisor starts services in order and stops them in reverse. `start()` returns once
/// the service is ready to work (a socket bound, a loop running); `stop()` stops accepting
/// work and returns when in-flight work has reached a safe point.
public protocol DaemonService: AnyObject, Sendable {
    /// The service's name in logs and status lines.
    var name: String { get }
    /// Makes the service ready; throwing aborts the daemon's start.
    func start() async throws
    /// Stops the service gracefully.
    func stop() async
    /// Applies a new, already validated configuration; throwing refuses it.
    func reload(_ configuration: DaemonConfiguration) async throws
}

extension DaemonService {
    /// Services with nothing to reload accept every configuration.
    public func reload(_ configuration: DaemonConfiguration) async throws {}
}

/// Services run as a group: started in order, stopped in reverse.
public actor ServiceGroup {
    private let services: [any DaemonService]
    private var started: [any DaemonService] = []
    private let log: DaemonLog

    /// A group of `services`, in start order.
    public init(_ services: [any DaemonService], log: DaemonLog) {
        self.services = services
        self.log = log
    }

    /// Starts each service in order; if one fails, stops those already started (in reverse)
    /// and rethrows, naming the service (the caller says it: it is not logged here).
    /// `failing` hears of the failure before those services stop: the control server, stopping,
    /// answers the calls it has begun, which must know by then that the start failed.
    public func start(
        shouldContinue: @Sendable () async -> Bool = { true }, failing: @Sendable (ServiceStartError) async -> Void = { _ in }
    ) async throws {
        for service in services {
            guard await shouldContinue() else { return }
            log.debug("daemon", "starting \(service.name)")
            do {
                try await service.start()
            } catch {
                let failure = ServiceStartError(service: service.name, underlying: error)
                await failing(failure)
                await stop()
                throw failure
            }
            started.append(service)
        }
    }

    /// Stops the started services in reverse order.
    public func stop() async {
        while let service = started.popLast() {
            log.debug("daemon", "stopping \(service.name)")
            await service.stop()
        }
    }

    /// Offers `configuration` to every started service, in order; the first refusal is thrown.
    /// A stop begun meanwhile (while a service's reload was waiting) has taken the services it
    /// stops out of `started`: those are offered nothing more, for a reload must not start
    /// again what the stop ended (a timer, a loop).
    public func reload(_ configuration: DaemonConfiguration) async throws {
        for service in started where started.contains(where: { $0 === service }) {
            try await service.reload(configuration)
        }
    }
}

/// A service that could not start.
public struct ServiceStartError: Error, CustomStringConvertible {
    /// The service's name.
    public var service: String
    /// Why.
    public var underlying: any Error

    /// `control: cannot bind /run/weavedi/control.sock: ...`.
    public var description: String { "\(service): \(underlying)" }
}
