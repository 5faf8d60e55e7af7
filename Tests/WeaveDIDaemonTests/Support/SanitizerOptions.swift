import Foundation

/// The sanitizers' settings, which a run of the suite under `swift test --sanitize=…` gives in
/// the test process's environment (`ASAN_OPTIONS=detect_leaks=0`, say): the binaries the tests
/// start (`weavedid`, `weavedictl`) are built with the same sanitizer, and get them too, though
/// their environment is otherwise a minimal one of the test's making.
enum SanitizerOptions {
    /// The variables passed on.
    static let names = ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"]

    /// Those of `names` that `environment` (by default the test process's) sets.
    static func passed(from environment: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        environment.filter { names.contains($0.key) }
    }
}
