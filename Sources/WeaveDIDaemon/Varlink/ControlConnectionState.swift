import Synchronization
import WeaveDI

/// What one control connection holds (session scope): its peer and its call count. Disposed
/// when the connection closes.
final class ControlConnectionState: Disposable {
    let opened = ContinuousClock.now
    private let calls = Atomic<Int>(0)

    func countCall() { calls.add(1, ordering: .relaxed) }
    var callCount: Int { calls.load(ordering: .relaxed) }

    func dispose() async {}
}

/// One control call (request scope): the method and when it started.
final class CallContext: Sendable {
    let started = ContinuousClock.now
}
