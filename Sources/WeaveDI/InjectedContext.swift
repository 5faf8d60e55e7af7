import Synchronization

/// Which default an `InjectedKey` provides: `liveValue`, `testValue` or `previewValue`.
///
/// Detected once: `test` when the process runs under `swift test` (XCTest or Swift Testing),
/// `live` otherwise. `WEAVEDI_INJECTED_ENV=live|test|preview|automatic` overrides the detection;
/// another value is warned about once and detection is used.
public enum InjectedContext: String, Sendable, CaseIterable {
    /// A running program.
    case live
    /// A test run.
    case test
    /// A preview.
    case preview

    @usableFromInline
    static let stored = Atomic<UInt8>(0)  // 0: not yet decided; else index + 1

    /// The context in effect. Setting it overrides detection and the environment.
    public static var current: InjectedContext {
        get {
            let raw = stored.load(ordering: .relaxed)
            if raw != 0 { return allCases[Int(raw) - 1] }
            let decided = fromEnvironment() ?? detect()
            // A context set meanwhile (by the setter) wins over this detection.
            let (exchanged, found) = stored.compareExchange(expected: 0, desired: decided.index + 1, ordering: .relaxed)
            return exchanged ? decided : allCases[Int(found) - 1]
        }
        set {
            stored.store(newValue.index + 1, ordering: .relaxed)
            Generation.bump()  // readers cache a key's default as of a generation
        }
    }

    /// Forgets the decision, so the next read detects again (and reads the environment again).
    public static func redetect() {
        stored.store(0, ordering: .relaxed)
        Generation.bump()
    }

    var index: UInt8 { UInt8(InjectedContext.allCases.firstIndex(of: self)!) }

    /// `WEAVEDI_INJECTED_ENV`, if set to a context; nil for `automatic`, unset, empty or invalid.
    static func fromEnvironment() -> InjectedContext? {
        guard let raw = WeaveDIConfiguration.settingValue("WEAVEDI_INJECTED_ENV") else { return nil }
        let value = raw.trimmingASCIISpaces().lowercased()
        if value == "automatic" { return nil }
        if let context = InjectedContext(rawValue: value) { return context }
        WeaveDIConfiguration.warnOnce(
            variable: "WEAVEDI_INJECTED_ENV", value: raw, accepted: "live, test, preview or automatic",
            using: "automatic detection")
        return nil
    }

    /// The context `WEAVEDI_INJECTED_ENV` asks for: its context, the detected one for
    /// `automatic`, `current` when it is unset, empty (as unset) or not valid (warned about).
    static func fromEnvironment(current: @autoclosure () -> InjectedContext) -> InjectedContext {
        guard let raw = WeaveDIConfiguration.settingValue("WEAVEDI_INJECTED_ENV") else { return current() }
        let value = raw.trimmingASCIISpaces().lowercased()
        if value == "automatic" { return detect() }
        if let context = InjectedContext(rawValue: value) { return context }
        let kept = current()
        WeaveDIConfiguration.warnOnce(
            variable: "WEAVEDI_INJECTED_ENV", value: raw, accepted: "live, test, preview or automatic",
            using: "the current context (\(kept))")
        return kept
    }

    /// `test` inside an XCTest or Swift Testing run, else `live`.
    static func detect() -> InjectedContext {
        let arguments = CommandLine.arguments
        if let first = arguments.first, first.hasSuffix(".xctest") { return .test }
        if arguments.contains("--testing-library") { return .test }
        for variable in ["XCTestConfigurationFilePath", "XCTestBundlePath", "XCTestSessionIdentifier"]
        where environmentValue(variable) != nil {
            return .test
        }
        return .live
    }
}

extension String {
    /// The text without the spaces, tabs, `\n` and `\r` around it; by scalars, as a `\r\n`
    /// is one `Character` that is neither `\r` nor `\n`.
    package func trimmingASCIISpaces() -> String {
        var s = Substring(self).unicodeScalars
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        while let c = s.first, isSpace(c) { s.removeFirst() }
        while let c = s.last, isSpace(c) { s.removeLast() }
        return String(s)
    }
}
