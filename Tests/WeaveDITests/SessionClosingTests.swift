import Testing
@testable import WeaveDI

/// Who closed a session, as the `container.sessions` fix, its log and a later resolve tell it.
@Suite struct SessionClosingTests {
    func container() -> WeaveDI.Container {
        let container = WeaveDI.Container()
        container.register(SessionCache.self, scope: .session) { SessionCache() }
        container.register(CallScope.self, scope: .request) { CallScope() }
        return container
    }

    /// The description of what `body` throws, or nil if it throws nothing.
    func thrown(_ body: () throws -> Void) -> String? {
        do { try body() } catch { return "\(error)" }
        return nil
    }

    /// A session opened with `closesWhenIdle: false` is never idle for the check, nor closed by
    /// its fix; one opened as before is, and the check's message and the fix's name it.
    @Test func sessionKeptOpenWhenIdle_isNeitherReportedNorClosed() async throws {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = container()
        registry.registerContainerChecks(for: container, sessionIdleLimit: .zero)
        let parent = container.openSession(id: "anonymous", closesWhenIdle: false)
        let forgotten = container.openSession(id: "forgotten")
        #expect(container.idleSessions(longerThan: .zero).map(\.id) == ["forgotten"])
        let checked = await registry.runCheck("container.sessions")
        #expect(checked?.message.hasPrefix("1 session(s) idle for more than 0 ms: 'forgotten' (idle ") == true, "\(String(describing: checked))")
        let report = await registry.runChecks()
        let sessions = report.checks.first { $0.name == "container.sessions" }!
        #expect(sessions.lastFix?.message.hasPrefix("closed 1 idle session(s): 'forgotten' (idle ") == true,
                "\(String(describing: sessions.lastFix))")
        #expect(forgotten.isClosed && !parent.isClosed)
        let request = parent.openRequest(id: "next")
        #expect(!request.isClosed)
        _ = try request.require(CallScope.self)
        await request.close()
        await parent.close()
    }

    /// The fix's message names the first five sessions it closed and counts the rest.
    @Test func sessionsFix_namesFiveSessions_andCountsTheRest() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = container()
        registry.registerContainerChecks(for: container, sessionIdleLimit: .zero)
        for n in 1...7 { _ = container.openSession(id: "s\(n)") }
        let record = await registry.fix("container.sessions")
        #expect(record.outcome == .succeeded, "\(record)")
        #expect(record.message.hasPrefix("closed 7 idle session(s): 's"), "\(record.message)")
        #expect(record.message.hasSuffix(", and 2 more"), "\(record.message)")
        #expect(record.message.components(separatedBy: "(idle ").count == 6, "\(record.message)")
    }

    /// Each session the fix closes is logged, as an error, with health logging off (the
    /// default): its id, how long it was idle, and the check.
    @Test func sessionClosedByTheFix_isLogged_withHealthLoggingOff() async {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        #expect(!registry.healthLoggingEnabled)
        let container = container()
        registry.registerContainerChecks(for: container, sessionIdleLimit: .zero)
        _ = container.openSession(id: "anonymous")
        let capture = LogCapture()
        _ = await capture.during { await registry.runChecks() }
        let lines = capture.records.filter { $0.message.contains("anonymous") }
        #expect(lines.count == 1, "\(capture.messages)")
        #expect(lines.first?.category == .error)
        #expect(lines.first?.message.hasPrefix("session 'anonymous' closed by the container.sessions fix: idle for ") == true,
                "\(capture.messages)")
    }

    /// A request opened on a session the fix closed, and the session itself, say who closed it.
    @Test func resolveAfterTheFixClosedTheSession_saysTheFixClosedIt() async throws {
        let registry = UnifiedRegistry(clock: ManualHealthClock())
        let container = container()
        registry.registerContainerChecks(for: container, sessionIdleLimit: .zero)
        let anon = container.openSession(id: "anonymous")
        await registry.runChecks()
        #expect(anon.isClosed)
        guard case let .idle(_, check)? = anon.closing?.cause else {
            Issue.record("closing: \(String(describing: anon.closing))")
            return
        }
        #expect(check == "container.sessions")
        let request = anon.openRequest(id: "next")
        #expect(request.isClosed)
        let message = thrown { _ = try request.require(CallScope.self) }
        #expect(message?.hasPrefix(
            "cannot resolve CallScope: request 'next' is closed: its session 'anonymous' was closed (idle ") == true,
            "\(String(describing: message))")
        #expect(message?.hasSuffix(", by the container.sessions fix); open a new session") == true, "\(String(describing: message))")
        let direct = thrown { _ = try anon.require(SessionCache.self) }
        #expect(direct?.hasPrefix("cannot resolve SessionCache: session 'anonymous' is closed (idle ") == true, "\(String(describing: direct))")
        #expect(direct?.hasSuffix(", by the container.sessions fix); open a new session") == true, "\(String(describing: direct))")
    }

    /// `session.close()` while a request's body runs: the body's next resolve says the session
    /// was closed, not only that its request is; a request closed by its own `close()` says as
    /// it always did; a session closed by `releaseAll()` says so.
    @Test func sessionClosedWhileARequestBodyRuns_saysTheSessionWasClosed() async throws {
        let container = container()
        let session = container.openSession(id: "s")
        let request = session.openRequest(id: "r")
        let message = await request.withCurrent {
            _ = try? container.require(CallScope.self)
            await session.close()
            return thrown { _ = try container.require(CallScope.self) }
        }
        #expect(message == "cannot resolve CallScope: request 'r' is closed: its session 's' was closed (by close()); open a new session")
        #expect(request.isClosed)

        let other = container.openSession(id: "t")
        let own = other.openRequest(id: "own")
        await own.close()
        #expect(thrown { _ = try own.require(CallScope.self) } == "cannot resolve CallScope: request 'own' is closed; open a new request")
        await container.releaseAll()
        #expect(thrown { _ = try other.require(SessionCache.self) }
                == "cannot resolve SessionCache: session 't' is closed (by releaseAll()); open a new session")
    }

    /// `withRequest` closes its request when the body returns and when it throws, throws on
    /// what the body throws, and has the request current meanwhile.
    @Test func withRequest_closesOnEveryPath() async throws {
        struct Refused: Error, Equatable {}
        let container = container()
        let session = container.openSession(id: "s")
        var seen: [Request] = []
        let value = try await session.withRequest(id: "ok") { request in
            seen.append(request)
            return try container.require(CallScope.self) === request.require(CallScope.self)
        }
        #expect(value)
        await #expect(throws: Refused.self) {
            try await session.withRequest(id: "refused") { request in
                seen.append(request)
                throw Refused()
            }
        }
        #expect(seen.map(\.id) == ["ok", "refused"])
        let allClosed = seen.allSatisfy { $0.isClosed }
        #expect(allClosed)
        #expect(session.openRequests.isEmpty)
        await session.close()
    }
}
