import Glibc
import Testing
import WeaveDIDaemon
import WeaveDIPosix

/// The environment variables systemd passes are quoted alike in the problems found with them:
/// escaped, and cut short past 60 Unicode scalars, however the value is made.
@Suite struct SystemdVariableTests {
    /// One character of 100 001 Unicode scalars (a letter and its combining accents): a value
    /// cut after so many characters would still be quoted whole.
    static let oneHugeCharacter = "a" + String(repeating: "\u{301}", count: 100_000)

    static func problem(_ body: () throws(SocketActivation.Problem) -> SocketActivation?) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            return error.description
        }
    }

    @Test func namesNotMatchingTheCount_areRefused_countingBoth() throws {
        let pid: Int32 = 5
        let cases: [(String, String, String)] = [
            ("2", "control", "LISTEN_FDNAMES lists 1 name (separated by ':') but LISTEN_FDS counts 2 descriptors"),
            ("1", "control:extra", "LISTEN_FDNAMES lists 2 names (separated by ':') but LISTEN_FDS counts 1 descriptor"),
        ]
        for (count, names, expected) in cases {
            let problem = Self.problem { () throws(SocketActivation.Problem) in
                try SocketActivation.take(environment: ["LISTEN_PID": "\(pid)", "LISTEN_FDS": count, "LISTEN_FDNAMES": names], pid: pid)
            }
            #expect(problem?.hasPrefix(expected + ": the daemon cannot tell which socket is which") == true, "\(problem ?? "no problem")")
        }
    }

    @Test func aHugeValue_isQuotedShort_evenWhenItIsOneCharacter() throws {
        let huge = Self.oneHugeCharacter
        let problems = [
            Self.problem { () throws(SocketActivation.Problem) in
                try SocketActivation.take(environment: ["LISTEN_PID": huge, "LISTEN_FDS": "1"], pid: 5)
            },
            Self.problem { () throws(SocketActivation.Problem) in
                try SocketActivation.take(environment: ["LISTEN_PID": "5", "LISTEN_FDS": huge], pid: 5)
            },
            WatchdogSettings.problem(environment: ["WATCHDOG_USEC": huge], pid: 5),
            WatchdogSettings.problem(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": huge], pid: 5),
        ]
        for (name, problem) in zip(["LISTEN_PID", "LISTEN_FDS", "WATCHDOG_USEC", "WATCHDOG_PID"], problems) {
            let text = try #require(problem, "no problem found with \(name)")
            // Compared by scalars: the quoted value is one character too.
            #expect(text.unicodeScalars.starts(with: "\(name)=\"a\u{301}\u{301}".unicodeScalars), "\(text.prefix(200))")
            #expect(text.contains("...\" (100001 characters)"), "\(text.prefix(200))")
            #expect(text.utf8.count < 400, "\(name): a problem of \(text.utf8.count) bytes")
        }
    }

    /// `JOURNAL_STREAM`'s numbers are read as systemd writes them, digits only: a sign makes
    /// the value name no file, as it would for `sd_listen_fds` and `LISTEN_FDS`.
    @Test func journalStream_isDigitsOnly() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("stderr.log", "")
        let raw = open(path, O_WRONLY | O_CLOEXEC)
        try #require(raw >= 0, "open: \(Errno.current)")
        let file = FileDescriptor(rawValue: raw)
        defer { try? file.close() }
        let status = try file.status()
        let reading = { (value: String) in DaemonLog.journaldIsReading(environment: ["JOURNAL_STREAM": value], standardError: file) }
        #expect(reading("\(status.device):\(status.inode)"))
        #expect(!reading("+\(status.device):\(status.inode)"))
        #expect(!reading("\(status.device):+\(status.inode)"))
        #expect(!reading("\(status.device): \(status.inode)"))
    }

    /// A quote in a value cannot end its quoting early: it is escaped, as in a JSON string.
    @Test func aQuoteInAValue_isEscaped() {
        #expect(WatchdogSettings.problem(environment: ["WATCHDOG_USEC": #"1" or "2"#], pid: 5)
            == #"WATCHDOG_USEC="1\" or \"2" is not a number of microseconds; no watchdog pings"#)
    }
}
