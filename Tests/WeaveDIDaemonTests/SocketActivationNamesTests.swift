import Testing
import WeaveDIPosix
@testable import WeaveDIDaemon

/// The names in `LISTEN_FDNAMES` come from the environment, which may hold 128 KiB: a message
/// naming passed sockets shows each name shortened, and lists a few sockets, not all.
@Suite struct SocketActivationNamesTests {
    /// `count` sockets on descriptors that are not open (nothing here reads them), each named
    /// `name` and its index.
    static func activation(_ count: Int, name: String) -> SocketActivation {
        SocketActivation(sockets: (0..<count).map { ("\(name)\($0)", FileDescriptor(rawValue: 100_000 + Int32($0))) })
    }

    @Test func noneNamedControl_namesAFewSocketsShort() throws {
        let long = String(repeating: "x", count: 1000)
        do {
            _ = try Self.activation(1000, name: long).listener(named: "control")
            Issue.record("1000 sockets, none named control, were taken")
        } catch {
            let text = error.description
            #expect(text.hasPrefix("systemd passed 1000 sockets (\"\(String(repeating: "x", count: 57))...\" (1001 characters), "), "\(text.prefix(300))")
            #expect(text.contains(" and 992 more) and none is named control"), "\(text.prefix(300))")
            #expect(text.utf8.count < 2000, "a problem of \(text.utf8.count) bytes")
        }
    }

    @Test func aHugeName_isShownShort_andItsControlCharactersEscaped() {
        #expect(SocketActivation.shown("weavedid.socket") == #""weavedid.socket""#)
        // Quoted as every message quotes a value from outside: a quote or a newline escaped.
        #expect(SocketActivation.shown("a\"b\nc") == #""a\"b\nc""#)
        let oneCharacter = "a" + String(repeating: "\u{301}", count: 100_000)
        #expect(SocketActivation.shown(oneCharacter).unicodeScalars.count == 57 + #""..." (100001 characters)"#.unicodeScalars.count)
    }

    @Test func unservedSockets_aFewAreNamed_theOthersCounted() throws {
        var activation = Self.activation(1000, name: String(repeating: "y", count: 1000))
        activation.sockets[999].name = "control"
        let warning = try #require(activation.unservedWarning(serving: "control"))
        #expect(warning.hasPrefix("systemd passed 1000 sockets; only descriptor 100999 (\"control\") is served, not descriptor 100000 (\"yyy"), "\(warning.prefix(300))")
        #expect(warning.contains(" and 991 more: their clients connect and wait for ever"), "\(warning.prefix(300))")
        #expect(warning.utf8.count < 2000, "a warning of \(warning.utf8.count) bytes")
    }

    /// The address of a socket not served is quoted as a path from outside is: a quote, a
    /// comma or a newline in it cannot blur the list or start a line of its own.
    @Test func anUnservedSocketsAddress_isQuoted() throws {
        let name = "weavedi-test-\(CurrentProcess.id)\n\", descriptor 9 (\"forged"
        let other = try UnixSocket.listen(at: UnixSocketAddress(abstractName: name))
        let control = try UnixSocket.make(.stream)
        let activation = SocketActivation(sockets: [("other", other.descriptor), ("control", control.descriptor)])
        let warning = try #require(activation.unservedWarning(serving: "control"))
        #expect(warning.contains(#"not descriptor \#(other.descriptor.rawValue) ("other", "@weavedi-test-\#(CurrentProcess.id)\n\", descriptor 9 (\"forged"): "#),
            "\(warning)")
        #expect(!warning.contains("\n"), "\(warning)")
    }
}
