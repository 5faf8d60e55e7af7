import Synchronization
@testable import WeaveDI

/// Counts how many instances were built and disposed, in order.
final class Ledger: Sendable {
    private let state = Locked<(built: Int, disposed: [String])>((0, []))
    func built() { state.withLock { $0.built += 1 } }
    func disposed(_ name: String) { state.withLock { $0.disposed.append(name) } }
    var buildCount: Int { state.withLock { $0.built } }
    var disposals: [String] { state.withLock { $0.disposed } }
}

final class Tracked: Disposable {
    let name: String
    let ledger: Ledger
    init(_ name: String, _ ledger: Ledger) {
        self.name = name
        self.ledger = ledger
        ledger.built()
    }
    func dispose() async { ledger.disposed(name) }
}

/// A disposable that needs a `Tracked` first, so it is created after it.
final class TrackedPair: Disposable {
    let first: Tracked
    let ledger: Ledger
    init(first: Tracked, _ ledger: Ledger) {
        self.first = first
        self.ledger = ledger
        ledger.built()
    }
    func dispose() async { ledger.disposed("pair") }
}

protocol Net: Sendable { func fetch() -> String }
final class LiveNet: Net { func fetch() -> String { "live" } }
final class MockNet: Net { func fetch() -> String { "mock" } }

final class SessionCache: Sendable {}
final class CallScope: Sendable {}
final class Generator: Sendable {}

final class CycleA: Sendable { let b: CycleB?; init(b: CycleB?) { self.b = b } }
final class CycleB: Sendable { let a: CycleA?; init(a: CycleA?) { self.a = a } }
final class CycleC: Sendable { let a: CycleA?; init(a: CycleA?) { self.a = a } }

final class Holder<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Runs `body` on `count` real threads at once (not the cooperative pool's two).
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let threads = (0..<count).map { i in Thread { body(i) } }
    threads.forEach { $0.start() }
    threads.forEach { $0.join() }
}
