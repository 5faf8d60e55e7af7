import WeaveDI

// A child process for the tests: each command checks one piece of process-wide behaviour
// (environment variables, fatal errors) where it cannot disturb other tests.

struct ProbeKey: InjectedKey {
    static var liveValue: String { "live-default" }
    static var testValue: String { "test-default" }
    static var previewValue: String { "preview-default" }
}

extension InjectedValues {
    var probeValue: String {
        get { self[ProbeKey.self] }
        set { self[ProbeKey.self] = newValue }
    }
}

final class Unregistered {}

struct Reader {
    @Injected(\.probeValue) var value
    @Factory var unregistered: Unregistered
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "context":
    print(InjectedContext.current.rawValue)
    print(Reader().value)
case "factory-missing":
    _ = Reader().unregistered
    print("unreachable")
default:
    print("usage: weavedi-probe context|factory-missing")
}
