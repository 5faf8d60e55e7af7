import Foundation
import Testing
@testable import WeaveDI
// Sources/app-diagnostics/main.swift (the README's diagnostics executable, `diagnose` below)
#if canImport(Glibc)
import Glibc
#endif

// The README's library examples, as code that compiles and runs. ReadmeExamplesTests checks
// that every line of every Swift example in README.md appears here, in order, so the two
// cannot drift apart.

// Keys and values
protocol UserService: Sendable { func name() -> String }
struct LiveUserService: UserService { func name() -> String { "live" } }
struct MockUserService: UserService { func name() -> String { "mock" } }

struct UserServiceKey: InjectedKey {
    static var liveValue: any UserService { LiveUserService() }
    static var testValue: any UserService { MockUserService() }   // optional, defaults to liveValue
    // static var previewValue                                   // optional, defaults to liveValue
}

extension InjectedKeys {
    var userService: UserServiceKey.Type { UserServiceKey.self }    // names the key for \.userService
}

// A key path computed from a key
struct CountKey: InjectedKey { static var liveValue: Int { 21 } }
extension InjectedValues {
    var doubled: Int { self[CountKey.self] * 2 }             // read through this getter every time
}

final class ViewModel {
    @Injected(\.userService) var userService      // read at every access
}

// The container
protocol NetworkService: Sendable {}
final class LiveNetwork: NetworkService {}
final class SessionStore: Sendable {}
final class RequestContext: Sendable {}
final class PDFGenerator: Sendable {}
struct LiveUser: UserService {
    let network: any NetworkService
    func name() -> String { "live" }
}

// Between tests
final class RecordingNetwork: NetworkService {}

// @Factory
final class DocumentService: @unchecked Sendable {
    @Factory var pdfGenerator: PDFGenerator

    func generate(_ count: Int) async -> [PDFGenerator] {
        await withTaskGroup(of: PDFGenerator.self) { group in
            for _ in 0..<count { group.addTask { self.pdfGenerator } }   // a fresh one per task
            return await group.reduce(into: []) { $0.append($1) }
        }
    }
}

// @Factory and @Injected: try $x.getValue() throws where a read would stop the program
final class ReportHandler: @unchecked Sendable {
    @Injected var network: any NetworkService
    @Factory var pdfGenerator: PDFGenerator

    func handle() -> String {
        do {
            let generator = try $pdfGenerator.getValue()        // throws instead of stopping
            let network = try $network.getValue()
            return "200 \(type(of: generator)) over \(type(of: network))"
        } catch {
            return "503 \(error)"                                // a ResolutionError
        }
    }
}

// Modules
struct NetworkModule: WeaveDI.Module {
    func register(in container: WeaveDI.Container) async {
        container.register((any NetworkService).self) { LiveNetwork() }
    }
}

// Components
protocol UserRepository: Sendable {}
struct UserRepositoryImpl: UserRepository {}
final class UserServiceImpl: UserService {
    let repository: any UserRepository
    init(repository: any UserRepository) { self.repository = repository }
    func name() -> String { "component" }
}

struct UserComponent: WeaveDI.Component {
    @Provide var repository: any UserRepository = UserRepositoryImpl()
    @Provide(scope: .singleton, { r in UserServiceImpl(repository: try r.require((any UserRepository).self)) })
    var service: any UserService
}

// Component diagnostics, as an executable of your own would run them
func diagnose(_ command: String?) async -> Int32 {
    let container = WeaveDI.Container()
    await container.bootstrap(modules: [UserComponent(), NetworkModule()])
    switch command {
    case "diagnose-components":
        await container.validate()                 // records the graph, for scope mismatches
        let diagnostics = container.diagnoseComponents()
        print(diagnostics.json.serialized)
        return diagnostics.issues.isEmpty ? 0 : 1
    case "check-cycles":
        await container.validate()                 // records the graph
        let report = container.checkCycles()
        print(report.json.serialized)
        return report.cycles.isEmpty && report.notBuilt.isEmpty ? 0 : 1
    default:
        print("usage: app-diagnostics diagnose-components|check-cycles")
        return 64
    }
}
// The executable's last line, which a test cannot run:
// exit(await diagnose(CommandLine.arguments.dropFirst().first))

// What the health example calls.
func diskHasRoom() async -> Bool { true }
func pruneOldFiles() throws {}

extension InjectedTests {
    @Test func readme_keysAndValues() {
        print(ViewModel().userService.name())             // "live" in a program, "mock" under swift test
        print(InjectedValues.current.userService.name())
        #expect(ViewModel().userService.name() == "mock")
        struct Doubled { @Injected(\.doubled) var value: Int }
        #expect(Doubled().value == 42 && Doubled().value == 42)
    }

    /// The README's overrides, where the key's value is the live one, as in a program: under
    /// swift test it is the key's testValue, the mock itself, which an override to the mock
    /// would leave unchanged.
    @Test func readme_overrides() async {
        await withInjectedValues { $0.userService = LiveUserService() } operation: {
            #expect(ViewModel().userService.name() == "live")
            let sync = withInjectedValues { $0.userService = MockUserService() } operation: {
                ViewModel().userService.name()                // "mock"
            }
            let async = await withInjectedValues { $0.userService = MockUserService() } operation: {
                await Task { ViewModel().userService.name() }.value   // "mock": child tasks see it too
            }
            #expect(sync == "mock" && async == "mock")
            // Made under an override, read after it: the key's value now, as
            // DocumentedLimitsTests checks too.
            let model = withInjectedValues { $0.userService = MockUserService() } operation: { ViewModel() }
            let now = model.userService.name()      // the key's value now ("live" in a program), not the override's
            #expect(now == "live")
        }
    }

    @Test func readme_container() async throws {
        await WeaveDI.Container.bootstrap { container in
            container.register((any NetworkService).self) { LiveNetwork() }            // default scope: .singleton
            container.register(SessionStore.self, scope: .session) { SessionStore() }
            container.register(RequestContext.self, scope: .request) { RequestContext() }
            container.register(PDFGenerator.self, scope: .transient) { PDFGenerator() }
            container.register((any UserService).self) { r in                       // constructor injection
                LiveUser(network: try r.require((any NetworkService).self))
            }
        }

        let a = WeaveDI.Container.live.resolve((any NetworkService).self)      // nil if it cannot be resolved
        let b = try WeaveDI.Container.live.require((any NetworkService).self)  // throws ResolutionError
        #expect(a as AnyObject === b as AnyObject)
        #expect(ViewModel().userService is LiveUser)  // a registration of the value's type wins over the default
        await WeaveDI.Container.releaseAll()                                   // disposes what was built; registrations stay
        // WeaveDI.Container.live = WeaveDI.Container()  would swap the process-wide container (tests: below)
    }

    @Test func readme_resetBetweenTests() async {
        WeaveDI.Container.live.register((any NetworkService).self, instance: RecordingNetwork())
        await WeaveDI.Container.releaseAll()
        #expect(WeaveDI.Container.live.resolve((any NetworkService).self) is RecordingNetwork)  // still there

        func resetContainer() {       // in tearDown (XCTest), or in a test of a serialized suite (below)
            WeaveDI.Container.live = WeaveDI.Container()      // no registration, no mock left over
        }
        resetContainer()
        #expect(!WeaveDI.Container.live.isRegistered((any NetworkService).self))
    }

    /// Run after the examples before it, as a reader who copied them in order runs it: the
    /// container's (which leaves `live` as it bootstrapped it) and the reset's (whose swap is a
    /// function, for a test's tear-down), so `live` still has what this one resolves.
    @Test func readme_sessionsAndRequests() async throws {
        try await readme_container()
        WeaveDI.Container.live.register((any NetworkService).self, instance: RecordingNetwork())
        let container = WeaveDI.Container.live
        let session = container.openSession(id: "client-7")
        let store = try session.require(SessionStore.self)         // one per session
        let request = session.openRequest(id: "call-1")
        let ctx = try request.require(RequestContext.self)         // one per request
        try await session.withCurrent {
            // container.resolve, @Injected and @Factory see this session here and in child tasks
            _ = try await Task { try container.require(SessionStore.self) }.value
        }
        try request.withCurrent {
            // ... and this request (and its session) here
            _ = try container.require(RequestContext.self)
        }
        #expect(try request.require(SessionStore.self) === store && (try request.require(RequestContext.self)) === ctx)
        await request.close()
        // Or a request that is current in its body and closed on every path, return or throw:
        try await session.withRequest(id: "call-2") { request in
            _ = try request.require(RequestContext.self)          // what the body throws is thrown on
        }
        #expect(session.openRequests.isEmpty)
        await session.close()
    }

    @Test func readme_factory() async {
        WeaveDI.Container.live.register(PDFGenerator.self) { PDFGenerator() }
        let generators = await DocumentService().generate(8)
        #expect(Set(generators.map(ObjectIdentifier.init)).count == 8)
    }

    @Test func readme_getValue() {
        let handler = ReportHandler()
        #expect(handler.handle().hasPrefix("503 no registration for PDFGenerator; "), "\(handler.handle())")
        WeaveDI.Container.live.register(PDFGenerator.self) { PDFGenerator() }
        #expect(handler.handle().hasPrefix("503 no registration for NetworkService; "), "\(handler.handle())")
        WeaveDI.Container.live.register((any NetworkService).self) { LiveNetwork() }
        #expect(handler.handle() == "200 PDFGenerator over LiveNetwork")
    }

    @Test func readme_modules() async {
        await WeaveDI.Container.bootstrap(modules: [NetworkModule()])
        #expect(WeaveDI.Container.live.registrations.map(\.module) == ["NetworkModule"])
    }

    @Test func readme_components() async {
        UserComponent.registerAll()                                    // into Container.live, module "UserComponent"
        await WeaveDI.Container.bootstrap(modules: [UserComponent()])  // or as the module it is
        #expect(ViewModel().userService.name() == "component")
        #expect(Set(WeaveDI.Container.live.registrations.map(\.module)) == ["UserComponent"])
    }

    @Test func readme_health() async {
        let registry = UnifiedRegistry.shared
        registry.register(HealthCheck(
            name: "disk", tags: [HealthCheck.readiness], timeout: .seconds(2),
            failureThreshold: 3, successThreshold: 2,
            run: { await diskHasRoom() ? .healthy() : .unhealthy("less than 1 GiB free", data: ["free": "812 MiB"]) },
            fix: { try pruneOldFiles(); return "pruned old files" }))
        let report = await registry.runChecks()          // or report() for the last known state
        registry.start(interval: .seconds(30))           // the loop; it sleeps between rounds
        registry.stop()
        registry.unregister("disk")
        #expect(report.checks.contains { $0.name == "disk" && $0.status == .healthy })
    }

    @Test func readme_diagnostics() async {
        let container = WeaveDI.Container()
        container.register(SessionStore.self) { SessionStore() }
        _ = container.diagnoseComponents().json.serialized
        // {"issues":[{"type":"Clock","providers":["core","testing"],"detail":"provided by 2 modules (core, testing); the registration by testing wins","kind":"duplicateProvider"}, ...]}
        await container.validate()                      // builds everything once, recording the graph
        let cycles = container.checkCycles().json.serialized
        // {"componentCount":3,"edgeCount":3,"cycles":[["Mailer","Queue","Store"]],"notBuilt":[]}
        #expect(cycles == #"{"componentCount":1,"edgeCount":0,"cycles":[],"notBuilt":[]}"#)
    }

    @Test func dependencyGraph_isSound() async {
        let container = WeaveDI.Container()
        await container.bootstrap(modules: [UserComponent(), NetworkModule()])
        let report = await container.validate()      // builds each registration once, records the graph
        #expect(report.isValid, "\(report.failures) \(report.cycles)")
        #expect(report.componentIssues.isEmpty, "\(report.componentIssues)")
    }

    @Test func readme_diagnosticsExecutable() async {
        #expect(await diagnose("diagnose-components") == 0)
        #expect(await diagnose("check-cycles") == 0)
        #expect(await diagnose(nil) == 64)
    }
}

@Suite struct ReadmeExamplesTests {
    @Test func everySwiftExampleInTheReadme_isCompiledAndRunHere() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let examples = try String(contentsOfFile: #filePath, encoding: .utf8).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        var blocks: [[String]] = []
        var current: [String]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```swift") { current = [] } else if line.hasPrefix("```"), let block = current {
                blocks.append(block)
                current = nil
            } else if current != nil {
                current!.append(String(line))
            }
        }
        #expect(blocks.count >= 8)
        for block in blocks where !(block.first?.hasPrefix(".package") ?? false) {
            var position = 0
            for line in block.map({ $0.trimmingCharacters(in: .whitespaces) }) where !line.isEmpty && line != "import WeaveDI" {
                guard let found = examples[position...].firstIndex(where: { $0.contains(line) }) else {
                    Issue.record("README line not found (in order) in ReadmeExamples.swift: \(line)")
                    break
                }
                position = found + 1
            }
        }
    }
}
