import Testing
@testable import WeaveDI

/// A session's id is a label, not a key: two open sessions of one id are two sessions.
@Suite struct SessionIDTests {
    @Test func twoOpenSessionsOfOneId_areTwoSessions_eachWithItsOwnInstances() async throws {
        let container = WeaveDI.Container()
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        let first = container.openSession(id: "user-42")
        let second = container.openSession(id: "user-42")
        let cached = try first.require(SessionCache.self)
        #expect(try second.require(SessionCache.self) !== cached)
        #expect(container.openSessions.count == 2)
        await first.close()
        #expect(container.openSessions.map(ObjectIdentifier.init) == [ObjectIdentifier(second)])
        let kept = try second.require(SessionCache.self)
        #expect(try second.require(SessionCache.self) === kept)
        await second.close()
        #expect(container.openSessions.isEmpty)
    }

    /// A container keeps its open sessions and a session its container: dropped with a session
    /// open, a container is not freed; once its sessions are closed (or `releaseAll()` closed
    /// them), it is.
    @Test func aContainerWithASessionOpen_isKept_untilItsSessionsClose() async {
        weak var weakClosed: WeaveDI.Container?
        weak var weakReleased: WeaveDI.Container?
        weak var weakOpen: WeaveDI.Container?
        var sessions: [Session] = []
        do {
            let closed = WeaveDI.Container(), released = WeaveDI.Container(), open = WeaveDI.Container()
            weakClosed = closed
            weakReleased = released
            weakOpen = open
            sessions = [closed.openSession(id: "a"), released.openSession(id: "b"), open.openSession(id: "c")]
            await sessions[0].close()
            await released.releaseAll()
        }
        sessions = []
        #expect(weakClosed == nil)
        #expect(weakReleased == nil)
        #expect(weakOpen != nil)
        if let open = weakOpen { await open.releaseAll() }
        #expect(weakOpen == nil)
    }
}
