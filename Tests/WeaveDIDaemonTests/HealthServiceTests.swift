import Foundation
import Testing
import WeaveDI
import WeaveDIControl
import WeaveDIPosix

/// The daemon's health service, through the real daemon.
@Suite struct HealthServiceTests {
    /// The sessions check goes by the reloaded `health.sessionIdleLimit`, and leaves alone the
    /// session of a control connection idle past it: the connection's own `control.idleTimeout`
    /// ends it, and the fix closing it would break a connection still open.
    @Test func aReloadedSessionIdleLimit_isWhatTheSessionsCheckUses_andAnIdleConnectionsSessionStays() async throws {
        let directory = TemporaryDirectory()
        // Long connection limits: a loaded machine must not close the connections the test holds.
        func text(idleLimit: String) -> String {
            #"{"control":{"idleTimeout":3600,"callTimeout":3600},"health":{"sessionIdleLimit":\#(idleLimit)}}"#
        }
        let config = directory.write("weavedid.json", text(idleLimit: "3600"))
        let notify = try NotifyListener(abstract: false, directory: directory)
        let daemon = try DaemonProcess(["--config", config], directory: directory, notify: notify)
        try #require(notify.wait(forLine: "READY=1"), "\(daemon.log)")
        let d = "io.weavedi.Daemon."
        let idle = try VarlinkClient(path: daemon.defaultSocket)  // a session that then does nothing
        _ = try idle.call(d + "Ping")
        let client = try VarlinkClient(path: daemon.defaultSocket)
        func sessionsCheck() throws -> JSONValue? { try client.check("container.sessions") }
        #expect(try sessionsCheck()?[member: "message"]?.stringValue?.hasSuffix("none idle for more than 3600 s") == true)

        _ = directory.write("weavedid.json", text(idleLimit: "0.1"))
        #expect(try client.call(d + "Reload").parameter("status")?.stringValue == "configuration reloaded")
        try await Task.sleep(for: .milliseconds(300))  // the idle connection's session passes the new limit
        let check = try sessionsCheck()
        #expect(check?[member: "status"]?.stringValue == "healthy", "\(String(describing: check))")
        #expect(check?[member: "message"]?.stringValue?.hasSuffix("none idle for more than 100 ms") == true, "\(String(describing: check))")
        // The fix, asked by hand, has nothing to close; the idle connection's session is listed still.
        let fixes = try client.call(d + "Fix", [("check", .string("container.sessions"))]).parameter("fixes")?.arrayValue ?? []
        #expect(fixes.map { $0[member: "outcome"]?.stringValue } == ["notApplicable"], "\(fixes)")
        let sessions = try client.call(d + "ListSessions").parameter("sessions")?.arrayValue ?? []
        #expect(sessions.count == 2, "\(sessions)")
        #expect(!daemon.log.contains("closed by the container.sessions fix"), "\(daemon.log)")
        withExtendedLifetime(idle) {}
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A control socket file replaced by a regular file is in the log without
    /// WEAVEDI_REGISTRY_HEALTH_LOGGING: the check turning unhealthy and each failed fix as
    /// warnings, its recovery (once the file is gone and the fix binds the socket again) as a
    /// notice; a first result that is healthy and the rounds that change nothing are not.
    @Test func aLostControlSocket_isLogged_withoutHealthLogging() throws {
        let directory = TemporaryDirectory()
        let config = directory.write("weavedid.json", #"{"health":{"interval":0.2}}"#)
        let daemon = try DaemonProcess(
            ["--config", config], environment: ["WEAVEDI_REGISTRY_AUTO_HEALTH": "1"],
            directory: directory)
        try #require(daemon.waitForLog("ready;"), "\(daemon.log)")
        let socket = daemon.defaultSocket
        // A first round has judged the socket healthy (not logged), so the next change is
        // healthy -> unhealthy; then the file is replaced at once (a rename over it), so that
        // no round can see the socket missing in between.
        let client = try VarlinkClient(path: socket)
        var healthy = false
        let deadline = ContinuousClock.now + .seconds(30)
        while !healthy, ContinuousClock.now < deadline {
            let checks = try client.call("io.weavedi.Daemon.GetHealth").parameter("health")?[member: "checks"]?.arrayValue ?? []
            healthy = checks.contains { $0[member: "name"] == .string("control.socket") && $0[member: "status"] == .string("healthy") }
            if !healthy { usleep(20_000) }
        }
        try #require(healthy, "\(daemon.log)")
        directory.write("run/replacement", "x")
        try FileDescriptor.currentWorkingDirectory.rename(at: directory.path + "/run/replacement", to: socket)
        #expect(daemon.waitForLog(#"warning health: "control.socket": healthy -> unhealthy: the socket file "\#(socket)" was replaced"#), "\(daemon.log)")
        #expect(
            daemon.waitForLog(#"warning health: fix of "control.socket" (automatic) failed: "\#(socket)" exists and is not a socket"#), "\(daemon.log)")
        try FileDescriptor.currentWorkingDirectory.unlink(at: socket)
        #expect(daemon.waitForLog(#"notice  health: "control.socket": unhealthy -> healthy: listening on "\#(socket)""#), "\(daemon.log)")
        #expect(daemon.log.contains(#"notice  health: fix of "control.socket" (automatic) succeeded: bound "\#(socket)" again"#), "\(daemon.log)")
        #expect(!daemon.log.contains("unknown -> healthy"), "\(daemon.log)")
        #expect(!daemon.log.contains("validated"), "\(daemon.log)")
        daemon.send(.terminate)
        #expect(daemon.wait() == .exited(0), "\(daemon.log)")
    }

    /// A job that never ran has no health yet: its check is pending (`not run yet`) however
    /// many rounds run it, so that how its first run went is the check's first result, logged
    /// from no state, `unknown -> degraded`, on a first start as after a restart (where the
    /// state file tells the first round how the job last went). Never `healthy -> degraded`
    /// for a job that was never seen healthy.
    @Test func aJobsFirstFinding_isLoggedFromUnknown_onAFirstStartAsAfterARestart() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/mirror", withIntermediateDirectories: true)
        let config = directory.write("weavedid.json", """
            {"stateDirectory": "\(directory.path)/state", "sync": {"jobs": [{"name": "docs", "source": "\(directory.path)/source",
              "destination": "\(directory.path)/mirror", "interval": 3600}]}}
            """)
        let environment = ["WEAVEDI_REGISTRY_AUTO_HEALTH": "1", "WEAVEDI_REGISTRY_AUTO_FIX": "0"]
        let line = #"warning health: "job.docs": unknown -> degraded: last run failed: "#

        let first = try DaemonProcess(["--config", config], environment: environment, directory: directory)
        try #require(first.waitForLog("ready;"), "\(first.log)")
        let client = try VarlinkClient(path: first.defaultSocket)
        func job() throws -> JSONValue? {
            try client.call("io.weavedi.Daemon.GetHealth").parameter("health")?[member: "checks"]?.arrayValue?
                .first { $0[member: "name"]?.stringValue == "job.docs" }
        }
        // The loop's first round, at the start, has run the check, before any run of the job.
        let deadline = ContinuousClock.now + .seconds(30)
        while try job()?[member: "lastRun"]?.numberValue == nil, ContinuousClock.now < deadline { usleep(10_000) }
        let before = try job()
        #expect(before?[member: "lastRun"]?.numberValue != nil, "\(first.log)")
        #expect(before?[member: "status"] == .null, "\(before.map { "\($0)" } ?? "no check")")
        #expect(before?[member: "message"]?.stringValue == "not run yet")
        _ = try client.call("io.weavedi.Daemon.RunJob", [("name", .string("docs"))])
        #expect(first.waitForLog(line), "\(first.log)")
        #expect(try job()?[member: "status"]?.stringValue == "degraded")
        first.send(.terminate)
        #expect(first.wait() == .exited(0), "\(first.log)")

        let second = try DaemonProcess(["--config", config], environment: environment, directory: directory)
        #expect(second.waitForLog(line), "\(second.log)")
        second.send(.terminate)
        #expect(second.wait() == .exited(0), "\(second.log)")
        for log in [first.log, second.log] {
            #expect(!log.contains(#""job.docs": healthy -> "#), "\(log)")
        }
    }
}
