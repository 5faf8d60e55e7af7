import Testing

/// `WeaveDIConfiguration.applyFromEnvironment()` gives `UnifiedRegistry.shared` the built-in
/// checks of the live container, so that the loop and the `WEAVEDI_REGISTRY_*` flags act on
/// something without another call. Each run is a child process: it bootstraps and replaces
/// `WeaveDI.Container.live`.
@Suite struct LiveContainerChecksTests {
    func probe(_ command: String, _ environment: [String: String]) throws -> [String] {
        let result = try ChildProcess.run("weavedi-probe", [command], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    static let names = #"["container.graph", "container.singletons", "container.sessions"]"#

    @Test func theSharedRegistry_checksTheLiveContainer_andFollowsIt() throws {
        let lines = try probe("live-container-checks", ["WEAVEDI_REGISTRY_HEALTH_LOGGING": "1"])
        #expect(lines.contains("loop=true autoFix=true"), "\(lines)")
        #expect(lines.contains("checks=\(Self.names)"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("graph=unhealthy: 1 registration(s) cannot be built") && $0.contains("LiveBroken") }, "\(lines)")
        #expect(lines.contains("transition logged=true"), "\(lines)")
        // Another container assigned to `live`: its cycle found, its idle session closed.
        #expect(lines.contains { $0.hasPrefix("graph after swap=unhealthy: ") && $0.contains("CycleA") }, "\(lines)")
        #expect(lines.contains("open sessions after swap=0"), "\(lines)")
        // The checks of a container of one's own (weavedid's) replace them, quietly.
        #expect(lines.contains("checks after own=\(Self.names) overwrite logged=false"), "\(lines)")
        #expect(lines.contains("checks after removal=[]"), "\(lines)")
    }

    @Test func healthLines_stayOut_unlessHealthLoggingIsOn() throws {
        let lines = try probe("live-container-checks", [:])
        #expect(lines.contains { $0.hasPrefix("graph=unhealthy: ") }, "\(lines)")
        #expect(lines.contains("transition logged=false"), "\(lines)")
    }

    @Test func autoFixOff_leavesIdleSessionsOpen() throws {
        let lines = try probe("live-container-checks", ["WEAVEDI_REGISTRY_AUTO_FIX": "0"])
        #expect(lines.contains("loop=true autoFix=false"), "\(lines)")
        #expect(lines.contains("open sessions after swap=1"), "\(lines)")
    }

    @Test func autoHealthOff_startsNoLoop_butTheChecksAreThere() throws {
        let lines = try probe("live-container-checks", ["WEAVEDI_REGISTRY_AUTO_HEALTH": "0"])
        #expect(lines.contains("loop=false autoFix=true"), "\(lines)")
        #expect(lines.contains("checks=\(Self.names)"), "\(lines)")
    }

    /// Checks of the program's own container, registered before the call, are left as they are.
    @Test func checksOfAContainerOfOnesOwn_areKept() throws {
        let lines = try probe("live-container-checks-own", [:])
        #expect(lines.contains("checks=\(Self.names)"), "\(lines)")
        #expect(lines.contains("graph=healthy: the 1 registration builds"), "\(lines)")
    }
}
