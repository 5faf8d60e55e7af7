import Foundation
import Testing

/// The container shares what it holds between threads, so its API takes only `Sendable` types:
/// a program that registers or asks for anything else must not compile. Checked by compiling
/// small programs against the WeaveDI module of this build with the `swiftc` on `PATH`.
@Suite struct SendableContractTests {
    /// What every program below starts with.
    static let prelude = """
        import WeaveDI

        final class Counter { var count = 0 }
        final class Service: Sendable { let name = "service" }
        protocol Plain: AnyObject {}
        final class PlainImpl: Plain {}
        protocol Shared: Sendable {}
        final class SharedImpl: Shared {}

        """

    /// Each one alone must be refused, with an error that names `Sendable`.
    static let refused: [(what: String, code: String)] = [
        ("register with a factory", "func f(_ c: WeaveDI.Container) { c.register(Counter.self) { Counter() } }"),
        ("register with a resolver", "func f(_ c: WeaveDI.Container) { c.register(Counter.self) { _ in Counter() } }"),
        ("register an instance", "func f(_ c: WeaveDI.Container) { c.register(Counter.self, instance: Counter()) }"),
        ("register any P, P not Sendable", "func f(_ c: WeaveDI.Container) { c.register((any Plain).self) { PlainImpl() } }"),
        ("resolve", "func f(_ c: WeaveDI.Container) { _ = c.resolve(Counter.self) }"),
        ("require", "func f(_ c: WeaveDI.Container) throws { _ = try c.require(Counter.self) }"),
        ("makeFresh", "func f(_ c: WeaveDI.Container) throws { _ = try c.makeFresh(Counter.self) }"),
        ("a resolver's require", "func f(_ r: any Resolver) throws { _ = try r.require(Counter.self) }"),
        ("a session's require", "func f(_ s: Session) throws { _ = try s.require(Counter.self) }"),
        ("a request's resolve", "func f(_ r: Request) { _ = r.resolve(Counter.self) }"),
        ("@Factory", "struct S { @Factory var x: Counter }"),
        ("@Injected by type", "struct S { @Injected var x: Counter }"),
        ("@Injected by optional type", "struct S { @Injected var x: Counter? }"),
        ("@Provide", "struct C: WeaveDI.Component { @Provide var x: Counter = Counter() }"),
        ("@Inject", "struct S { @Inject var x: Counter? }"),
        ("@SafeInject", "struct S { @SafeInject var x: Counter? }"),
    ]

    /// The same uses with `Sendable` types, which must compile (so that the refusals above are
    /// about `Sendable`, not a set-up that compiles nothing).
    static let accepted = """
        func f(_ c: WeaveDI.Container, _ s: Session, _ r: Request) throws {
            c.register(Service.self) { Service() }
            c.register(Service.self) { _ in Service() }
            c.register(Service.self, instance: Service())
            c.register((any Shared).self) { SharedImpl() }
            _ = c.resolve(Service.self)
            _ = try c.require((any Shared).self)
            _ = try c.makeFresh(Service.self)
            _ = try s.require(Service.self)
            _ = r.resolve(Service.self)
        }
        struct S {
            @Factory var a: Service
            @Injected var b: Service
            @Injected var c: (any Shared)?
        }
        struct C: WeaveDI.Component { @Provide var x: Service = Service() }

        """

    @Test func nonSendableTypes_areRefusedByTheCompiler_sendableOnesAccepted() throws {
        guard let compiler = Self.typechecker() else {
            try Test.cancel("no swiftc found on PATH, or no WeaveDI module beside the test binary")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("weavedi-sendable-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let good = try compiler.typecheck(Self.prelude + Self.accepted, in: directory, named: "accepted.swift")
        #expect(good.status == 0, "the Sendable uses should compile:\n\(good.output)")
        for (what, code) in Self.refused {
            let bad = try compiler.typecheck(Self.prelude + code + "\n", in: directory, named: "refused.swift")
            #expect(bad.status != 0, "\(what) of a non-Sendable type should not compile: \(code)")
            let errors = bad.output.split(separator: "\n").filter { $0.contains("error:") }
            #expect(
                !errors.isEmpty && errors.allSatisfy { $0.contains("Sendable") },
                "\(what): the errors should be about Sendable:\n\(bad.output)")
        }
    }

    /// `swiftc -typecheck -swift-version 6` against this build's modules.
    struct Typechecker {
        let swiftc: URL
        let arguments: [String]

        func typecheck(_ source: String, in directory: URL, named name: String) throws -> (status: Int32, output: String) {
            let file = directory.appendingPathComponent(name)
            try source.write(to: file, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = swiftc
            process.arguments = ["-typecheck", "-swift-version", "6"] + arguments + [file.path]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: output, as: UTF8.self))
        }
    }

    /// The `swiftc` on `PATH` and the flags that find this build's WeaveDI module (in
    /// `Modules` beside the test binary, or beside it directly) and the C module it imports.
    static func typechecker() -> Typechecker? {
        let fileManager = FileManager.default
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        guard
            let swiftc = path.split(separator: ":").map({ URL(fileURLWithPath: String($0)).appendingPathComponent("swiftc") })
                .first(where: { fileManager.isExecutableFile(atPath: $0.path) })
        else { return nil }
        let products = ChildProcess.productsDirectory
        guard
            let modules = [products.appendingPathComponent("Modules"), products]
                .first(where: { fileManager.fileExists(atPath: $0.appendingPathComponent("WeaveDI.swiftmodule").path) })
        else { return nil }
        var arguments = ["-I", modules.path]
        let moduleMap = products.appendingPathComponent("CWeaveDIThread.build/module.modulemap")
        if fileManager.fileExists(atPath: moduleMap.path) {
            arguments += ["-Xcc", "-fmodule-map-file=\(moduleMap.path)"]
        }
        return Typechecker(swiftc: swiftc, arguments: arguments)
    }
}
