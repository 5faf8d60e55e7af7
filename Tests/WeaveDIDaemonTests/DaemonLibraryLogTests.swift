import Testing
import WeaveDI
@testable import WeaveDIDaemon
import WeaveDIPosix

/// The library's lines in weavedid's log: the library escapes their control characters, the
/// daemon's log escapes every message too, and escaping twice changes nothing, so a line of the
/// library reads as the library wrote it (`\n`, not `\\n`).
@Suite struct DaemonLibraryLogTests {
    @Test func aLibraryLine_isEscapedOnce() throws {
        let directory = TemporaryDirectory()
        let output = try FileDescriptor.open(directory.path + "/log.txt", .writeOnly, options: [.create, .append]).release()
        defer { try? output.close() }
        let log = DaemonLog(filter: LogFilter(defaultLevel: .info, overrides: [:]), journald: true, output: output)
        // The record as the library hands it to the sink `adoptLibraryLogging` installs (its
        // message escaped); that sink is not installed here, as the process's sink is shared by
        // the tests running meanwhile.
        let raw = "daemon-library-log: bad\n[WeaveDI] error: FORGED\u{1B}[2J"
        log.write(libraryRecord: LogRecord(category: .error, message: ControlCharacters.escaped(raw), subsystem: "container"))
        let lines = (directory.read("log.txt") ?? "").split(separator: "\n").map(String.init)
        #expect(lines.contains(#"<3>weavedi: daemon-library-log: bad\n[WeaveDI] error: FORGED\u{1B}[2J"#), "\(lines)")
        #expect(!lines.contains { $0.contains("FORGED") && !$0.hasPrefix("<3>weavedi: daemon-library-log: ") }, "\(lines)")
    }
}
