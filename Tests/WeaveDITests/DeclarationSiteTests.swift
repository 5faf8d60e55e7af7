import Testing
@testable import WeaveDI

private final class SiteThing: Sendable {}

/// Property wrappers whose initializers' `#fileID` and `#line` defaults must be the property's
/// declaration; each property's line is taken by `#line` on the same line.
private struct SiteStruct {
    @Factory var factory: SiteThing; static let factoryLine = #line
    @Factory(SiteThing.self) var explicit: SiteThing; static let explicitLine = #line
    @Injected var required: SiteThing; static let requiredLine = #line
    @Injected var optional: SiteThing?; static let optionalLine = #line
    static let splitLine = #line + 1
    @Factory
    var split: SiteThing
}

private final class SiteClass {
    @Injected var required: SiteThing; static let requiredLine = #line
    let number: Int

    init(number: Int) {
        self.number = number
    }
}

/// `@Provide` reads as `@Injected var x: T` does, naming its own declaration.
private struct SiteComponent: WeaveDI.Component {
    @Provide var made: SiteThing = SiteThing(); static let madeLine = #line
    @Provide(scope: .transient, { _ in SiteThing() }) var built: SiteThing; static let builtLine = #line
}

private struct GenericSite<T: Sendable> {
    @Factory var factory: T; static var factoryLine: Int { (#line) }
}

/// The site of the wrapper behind `property` (its backing storage, private to the type).
private func site(of property: String, in value: Any) -> DeclarationSite? {
    for child in Mirror(reflecting: value).children where child.label == "_" + property {
        switch child.value {
        case let wrapper as Factory<SiteThing>: return wrapper.site
        case let wrapper as Injected<SiteThing>: return wrapper.site ?? .unknown
        case let wrapper as Injected<SiteThing?>: return wrapper.site ?? .unknown
        default: return nil
        }
    }
    return nil
}

@Suite struct DeclarationSiteTests {
    private func expect(_ site: DeclarationSite?, line: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(site?.fileID == "WeaveDITests/DeclarationSiteTests.swift", sourceLocation: sourceLocation)
        #expect(site.map { Int($0.line) } == line, sourceLocation: sourceLocation)
    }

    /// The defaults are evaluated where the property is declared, not in the initializer that
    /// makes the enclosing value (memberwise, designated, generic).
    @Test func wrapperDefaults_areThePropertysDeclaration() {
        let value = SiteStruct()
        expect(site(of: "factory", in: value), line: SiteStruct.factoryLine)
        expect(site(of: "explicit", in: value), line: SiteStruct.explicitLine)
        expect(site(of: "required", in: value), line: SiteStruct.requiredLine)
        // An optional one reads nil rather than stop: it keeps no site.
        #expect(site(of: "optional", in: value)?.fileID == nil)
        expect(site(of: "split", in: value), line: SiteStruct.splitLine)
        expect(site(of: "required", in: SiteClass(number: 1)), line: SiteClass.requiredLine)
        expect(site(of: "factory", in: GenericSite<SiteThing>()), line: GenericSite<SiteThing>.factoryLine)
    }

    @Test func aProvideProperty_isDeclaredWhereItIs() {
        let component = SiteComponent()
        for (label, line) in [("_made", SiteComponent.madeLine), ("_built", SiteComponent.builtLine)] {
            let provide = Mirror(reflecting: component).children.first { $0.label == label }?.value as? Provide<SiteThing>
            expect(provide?.site, line: line)
            // What its read goes through.
            expect(provide.flatMap { Injected<SiteThing>(declaredAt: $0.site).site }, line: line)
        }
    }

    @Test func aLocalProperty_isDeclaredWhereItIs() {
        @Factory var local: SiteThing; let line = #line
        expect(_local.site, line: line)
    }

    @Test func sitesOfWrappersNotDeclaredAsProperties() {
        #expect(Injected(wrappedValue: SiteThing()).site == nil)
        #expect(DeclarationSite.unknown.declaredAt == "")
        let site = DeclarationSite(fileID: "App/Service.swift", line: 12)
        #expect(site.declaredAt == " (declared at App/Service.swift:12)")
    }

    /// `@Injected` stays one word: a non-optional one's site is kept once per declaration,
    /// shared by every wrapper made there. `@Factory` holds its site (16 bytes).
    @Test func sites_takeNoRoomInInjected_andSixteenBytesInFactory() {
        #expect(MemoryLayout<Injected<SiteThing>>.size == 8)
        #expect(MemoryLayout<Factory<SiteThing>>.size == 16)
        let one = SiteStruct(), two = SiteStruct()
        let lookups = [one, two].compactMap { value in
            Mirror(reflecting: value).children.first { $0.label == "_required" }?.value as? Injected<SiteThing>
        }.compactMap { wrapper -> ObjectIdentifier? in
            guard case let .required(lookup) = wrapper.storage else { return nil }
            return ObjectIdentifier(lookup.takeUnretainedValue())
        }
        #expect(lookups.count == 2 && lookups[0] == lookups[1])
        // Another declaration of the same type has its own.
        let other = site(of: "required", in: SiteClass(number: 2))
        #expect(other?.line != site(of: "required", in: one)?.line)
    }
}
