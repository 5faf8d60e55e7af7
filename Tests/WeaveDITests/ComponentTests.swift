import Testing
@testable import WeaveDI

protocol ComponentRepository: Sendable { func name() -> String }
struct ComponentRepositoryImpl: ComponentRepository { func name() -> String { "repository" } }
protocol ComponentService: Sendable { var repository: any ComponentRepository { get } }
final class ComponentServiceImpl: ComponentService {
    let repository: any ComponentRepository
    init(repository: any ComponentRepository) { self.repository = repository }
}

/// The documentation's `@Component struct UserComponent`, without the macro; the service is
/// declared before the repository it needs.
struct ShopComponent: WeaveDI.Component {
    @Provide(scope: .singleton, { r in ComponentServiceImpl(repository: try r.require((any ComponentRepository).self)) })
    var service: any ComponentService
    @Provide var repository: any ComponentRepository = ComponentRepositoryImpl()
    @Provide(scope: .transient) var generator: Generator = Generator()
    @Provide(scope: .session, { _ in SessionCache() }) var cache: SessionCache
}

struct EmptyComponent: WeaveDI.Component {}

@Suite struct ComponentTests {
    @Test func registerAll_registersEveryProvider_underItsType_scope_andTheComponentsName() throws {
        let container = WeaveDI.Container()
        ShopComponent.registerAll(in: container)
        #expect(container.registrations.map(\.type) == ["ComponentService", "ComponentRepository", "Generator", "SessionCache"])
        #expect(container.registrations.map(\.scope) == [.singleton, .singleton, .transient, .session])
        #expect(Set(container.registrations.map(\.module)) == ["ShopComponent"])
        let service = try container.require((any ComponentService).self)
        #expect(service.repository.name() == "repository")
        #expect(try container.require((any ComponentService).self) as AnyObject === service as AnyObject)
        #expect(try container.require(Generator.self) !== container.require(Generator.self))
        #expect(container.registrations.first?.dependencies == ["ComponentRepository"])
    }

    @Test func aComponent_isAModule() async {
        let container = WeaveDI.Container()
        await container.bootstrap(modules: [ShopComponent()])
        #expect(container.registrations.count == 4)
        #expect(await container.validate().isValid)
        #expect(container.checkCycles().edgeCount == 1)
    }

    @Test func theInitialValue_isBuiltByTheContainer_notWhenTheComponentIsMade() {
        let ledger = Ledger()
        struct Counted: WeaveDI.Component {
            static let ledger = Locked<Ledger?>(nil)
            @Provide var tracked: Tracked = Tracked("t", Counted.ledger.withLock { $0! })
        }
        Counted.ledger.withLock { $0 = ledger }
        let container = WeaveDI.Container()
        Counted.registerAll(in: container)
        #expect(ledger.buildCount == 0)
        _ = container.resolve(Tracked.self)
        _ = container.resolve(Tracked.self)
        #expect(ledger.buildCount == 1)
    }

}

// Reads its own lines only (`LogCapture`), an error, which every log level the tests set admits:
// it runs alongside the others.
extension ComponentTests {
    @Test func aComponentWithoutProviders_saysSo() {
        let log = LogCapture()
        log.during { EmptyComponent.registerAll(in: WeaveDI.Container()) }
        #expect(log.records.contains { $0.category == .error && $0.message.contains("component EmptyComponent has no @Provide property") })
    }
}
