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
}
