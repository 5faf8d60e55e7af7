import Glibc
import Testing
import WeaveDIDaemon

@Suite struct ConfigurationFieldErrorTests {
    @Test func syntaxError_hasLineAndColumnAndNoFieldPath() throws {
        let error = try #require(configurationError("{\n  \"control\": {\n    \"maxClients\": 4 \"x\"\n  }\n}"))
        #expect(error.fieldPath == nil)
        #expect(error.errno == EINVAL)
        #expect(error.problem == "line 3, column 21: expected ',' or '}' after an object member")
        #expect(error.description == "\(error.file): line 3, column 21: expected ',' or '}' after an object member")
        #expect(errorText(#"{"sync": {"jobs": [],}}"#) == "line 1, column 22: trailing comma before '}'")
        #expect(errorText("{\"a\": 1, \"a\": 2}") == #"line 1, column 10: duplicate key "a""#)
    }

    /// Some editors start a UTF-8 file with a byte order mark; RFC 8259 lets a parser ignore
    /// it. It is skipped, and only at the start: lines and columns count after it.
    @Test func byteOrderMark_atTheStartIsSkipped_elsewhereIsAnError() throws {
        let configuration = try loadConfiguration("\u{FEFF}{\"shutdownTimeout\": 7}")
        #expect(configuration.shutdownTimeout == .seconds(7))
        #expect(errorText("\u{FEFF}{\"shutdownTimeout\": 7 \"x\"}") == "line 1, column 23: expected ',' or '}' after an object member")
        #expect(errorText("\u{FEFF}\u{FEFF}{}")?.hasPrefix("line 1, column 1: ") == true)
        #expect(errorText("{} \u{FEFF}")?.hasPrefix("line 1, column 4: ") == true)
    }

    @Test func topLevelNonObject_isRejected() {
        #expect(errorText("[]") == "expected a JSON object at the top level, got an array")
    }

    @Test func unknownTopLevelField_isNamedWithTheAcceptedOnes() throws {
        let error = try #require(configurationError(#"{"shutdownTimeout": 5, "runtimeDir": "/run"}"#))
        #expect(error.fieldPath == "runtimeDir")
        #expect(error.problem == #"unknown field "runtimeDir" (accepted: runtimeDirectory, stateDirectory, shutdownTimeout, control, health, sync)"#)
        #expect(error.errno == EINVAL)
    }

    @Test func unknownNestedFields_areNamedWithTheAcceptedOnes() {
        #expect(errorText(#"{"control": {"sockett": "/x"}}"#)
            == #"control.sockett: unknown field "sockett" (accepted: socket, socketMode, socketGroup, adminUsers, adminGroups, maxMessageBytes, maxClients, maxClientsPerUser, idleTimeout, callTimeout)"#)
        #expect(errorText(#"{"health": {"period": 1}}"#)
            == #"health.period: unknown field "period" (accepted: interval, sessionIdleLimit)"#)
        #expect(errorText(#"{"sync": {"job": []}}"#)
            == #"sync.job: unknown field "job" (accepted: maxConcurrentRuns, metricsFile, jobs)"#)
        #expect(errorText(jobDocument(#""intervall": 5"#))
            == #"sync.jobs[0].intervall: unknown field "intervall" (accepted: name, kind, source, destination, interval, jitter, runAtStart, enabled, compare, delete, durable, workers, destinationMountPoint, failureThreshold, staleAfterIntervals, backoffCap)"#)
    }

    @Test func wrongTypes_sayWhatWasExpectedAndWhatCame() {
        #expect(errorText(#"{"control": []}"#) == "control: expected an object, got an array")
        #expect(errorText(#"{"control": {"maxClients": "64"}}"#) == #"control.maxClients: expected an integer from 1 to 4096, got "64""#)
        #expect(errorText(#"{"control": {"maxClients": 64.5}}"#) == "control.maxClients: expected an integer from 1 to 4096, got 64.5")
        #expect(errorText(#"{"shutdownTimeout": "10s"}"#) == #"shutdownTimeout: expected a number of seconds greater than 0 and at most 3600, got "10s""#)
        #expect(errorText(#"{"runtimeDirectory": 5}"#) == "runtimeDirectory: expected an absolute path, got 5")
        #expect(errorText(#"{"sync": {"jobs": {}}}"#) == "sync.jobs: expected an array, got an object")
        #expect(errorText(#"{"sync": {"jobs": [{"name": "a", "source": "/a", "destination": "/b"}, 7]}}"#) == "sync.jobs[1]: expected an object, got 7")
        #expect(errorText(jobDocument(#""runAtStart": "yes""#)) == #"sync.jobs[0].runAtStart: expected true or false, got "yes""#)
        #expect(errorText(jobDocument(#""enabled": null"#)) == "sync.jobs[0].enabled: expected true or false, got null")
        #expect(errorText(jobDocument(#""compare": "fast""#)) == #"sync.jobs[0].compare: expected "size-mtime" or "checksum", got "fast""#)
        #expect(errorText(#"{"control": {"adminUsers": ["root", true]}}"#) == "control.adminUsers[1]: expected a user name or uid, got true")
        #expect(errorText(#"{"control": {"adminGroups": "wheel"}}"#) == #"control.adminGroups: expected an array, got "wheel""#)
        #expect(errorText(#"{"control": {"socketGroup": [1]}}"#) == "control.socketGroup: expected a group name or gid, got an array")
    }

    /// JSON has one number type: a whole number written with a fraction or an exponent is
    /// that integer, in every integer field (ids included); a fraction is refused with the
    /// field's path.
    @Test func wholeNumbersWithAFractionOrAnExponent_areIntegers() throws {
        let configuration = try loadConfiguration(#"""
            {"control": {"maxClients": 5.0, "maxClientsPerUser": 4e0, "maxMessageBytes": 2.048e3, "socketGroup": 100.0,
              "adminUsers": [1000.0, 0e5], "adminGroups": [-0.0]},
             "sync": {"maxConcurrentRuns": 3E0, "jobs": []}}
            """#)
        #expect(configuration.control.maxClients == 5)
        #expect(configuration.control.maxClientsPerUser == 4)
        #expect(configuration.control.maxMessageBytes == 2048)
        #expect(configuration.control.socketGroup == .id(100))
        #expect(configuration.control.adminUsers == [.id(1000), .id(0)])
        #expect(configuration.control.adminGroups == [.id(0)])
        #expect(configuration.sync.maxConcurrentRuns == 3)
        let cases: [(String, String)] = [
            (#"{"control": {"maxClients": 5.5}}"#, "control.maxClients: expected an integer from 1 to 4096, got 5.5"),
            (#"{"control": {"maxClients": 5e-1}}"#, "control.maxClients: expected an integer from 1 to 4096, got 0.5"),
            (#"{"control": {"maxClients": 5e3}}"#, "control.maxClients: expected an integer from 1 to 4096, got 5000"),
            // Not whole, though a Double rounds it to 5: quoted as written.
            (#"{"control": {"maxClients": 4.9999999999999999999}}"#, "control.maxClients: expected an integer from 1 to 4096, got 4.9999999999999999999"),
            (#"{"control": {"adminUsers": [1000.00000000000001]}}"#, "control.adminUsers[0]: expected a user name or uid, got 1000.00000000000001"),
            // A negative zero with its sign.
            (jobDocument(#""failureThreshold": -0"#), "sync.jobs[0].failureThreshold: expected an integer of at least 1, got -0"),
            (jobDocument(#""failureThreshold": -0.0e5"#), "sync.jobs[0].failureThreshold: expected an integer of at least 1, got -0"),
            // Beyond the 64-bit integer, the range says its limit: "at least 1" is no reason.
            (jobDocument(#""failureThreshold": 99999999999999999999999"#),
                "sync.jobs[0].failureThreshold: expected an integer from 1 to 9223372036854775807, got 99999999999999999999999"),
            (jobDocument(#""failureThreshold": 1e19"#), "sync.jobs[0].failureThreshold: expected an integer from 1 to 9223372036854775807, got 1e+19"),
            (jobDocument(#""failureThreshold": -99999999999999999999999"#),
                "sync.jobs[0].failureThreshold: expected an integer of at least 1, got -99999999999999999999999"),
            (#"{"sync": {"maxConcurrentRuns": 1.25}}"#, "sync.maxConcurrentRuns: expected an integer from 1 to 64, got 1.25"),
            (jobDocument(#""workers": 2.5"#), "sync.jobs[0].workers: expected an integer from 1 to 256, got 2.5"),
            (jobDocument(#""failureThreshold": 0.0"#), "sync.jobs[0].failureThreshold: expected an integer of at least 1, got 0"),
            (jobDocument(#""staleAfterIntervals": 1e7"#), "sync.jobs[0].staleAfterIntervals: expected an integer from 1 to 1000000, got 10000000"),
            // Past 2^53 a Double no longer holds every integer: 9007199254740993.0 would be read as ...992.
            (jobDocument(#""failureThreshold": 9007199254740993.0"#),
                "sync.jobs[0].failureThreshold: expected an integer of at least 1, got 9007199254740992.0 "
                + "(past 2^53, a number with a fraction or an exponent is not read exactly: write the integer's digits)"),
            // Out of range however it is written: nothing said of digits.
            (#"{"sync": {"maxConcurrentRuns": 1e20}}"#, "sync.maxConcurrentRuns: expected an integer from 1 to 64, got 1e+20"),
            (#"{"control": {"adminUsers": [1000.5]}}"#, "control.adminUsers[0]: expected a user name or uid, got 1000.5"),
            (#"{"control": {"socketGroup": -1.0}}"#, "control.socketGroup: expected a group name or a gid from 0 to 4294967294, got -1.0"),
        ]
        for (document, expected) in cases {
            #expect(errorText(document) == expected)
        }
    }

    @Test func rangeViolations_quoteTheRangeAndTheValue() throws {
        let error = try #require(configurationError(#"{"control": {"maxClients": -3}}"#))
        #expect(error.description == "\(error.file): control.maxClients: expected an integer from 1 to 4096, got -3")
        let cases: [(String, String)] = [
            (#"{"shutdownTimeout": 0}"#, "shutdownTimeout: expected a number of seconds greater than 0 and at most 3600, got 0"),
            (#"{"shutdownTimeout": 3600.5}"#, "shutdownTimeout: expected a number of seconds greater than 0 and at most 3600, got 3600.5"),
            (#"{"control": {"maxClients": 4097}}"#, "control.maxClients: expected an integer from 1 to 4096, got 4097"),
            (#"{"control": {"maxMessageBytes": 1023}}"#, "control.maxMessageBytes: expected an integer from 1024 to 67108864, got 1023"),
            (#"{"control": {"maxMessageBytes": 67108865}}"#, "control.maxMessageBytes: expected an integer from 1024 to 67108864, got 67108865"),
            (#"{"control": {"idleTimeout": 86401}}"#, "control.idleTimeout: expected a number of seconds greater than 0 and at most 86400, got 86401"),
            (#"{"control": {"callTimeout": -1}}"#, "control.callTimeout: expected a number of seconds greater than 0 and at most 3600, got -1"),
            (#"{"control": {"adminUsers": [-1]}}"#, "control.adminUsers[0]: expected a user name or a uid from 0 to 4294967294, got -1"),
            (#"{"control": {"socketGroup": 4294967295}}"#, "control.socketGroup: expected a group name or a gid from 0 to 4294967294, got 4294967295"),
            (#"{"control": {"adminGroups": ["a b"]}}"#, #"control.adminGroups[0]: invalid group name "a b": a name may not be empty or contain ':', '/', spaces or control characters"#),
            (#"{"health": {"interval": 0.05}}"#, "health.interval: expected a number of seconds from 0.1 to 86400, got 0.05"),
            (#"{"health": {"sessionIdleLimit": 0}}"#, "health.sessionIdleLimit: expected a number of seconds greater than 0 and at most 31536000, got 0"),
            (#"{"sync": {"maxConcurrentRuns": 0}}"#, "sync.maxConcurrentRuns: expected an integer from 1 to 64, got 0"),
            (#"{"sync": {"maxConcurrentRuns": 65}}"#, "sync.maxConcurrentRuns: expected an integer from 1 to 64, got 65"),
            (jobDocument(#""interval": 0.5"#), "sync.jobs[0].interval: expected a number of seconds from 1 to 31536000, got 0.5"),
            // A negative zero as the integer fields quote it.
            (jobDocument(#""interval": -0"#), "sync.jobs[0].interval: expected a number of seconds from 1 to 31536000, got -0"),
            (jobDocument(#""interval": -0.0e3"#), "sync.jobs[0].interval: expected a number of seconds from 1 to 31536000, got -0"),
            (jobDocument(#""jitter": -1"#), "sync.jobs[0].jitter: expected a number of seconds from 0 to 31536000, got -1"),
            (jobDocument(#""jitter": 300"#), "sync.jobs[0].jitter: must be less than the interval (300 seconds), got 300"),
            (jobDocument(#""jitter": 10, "interval": 10"#), "sync.jobs[0].jitter: must be less than the interval (10 seconds), got 10"),
            (jobDocument(#""workers": 0"#), "sync.jobs[0].workers: expected an integer from 1 to 256, got 0"),
            (jobDocument(#""workers": 257"#), "sync.jobs[0].workers: expected an integer from 1 to 256, got 257"),
            (jobDocument(#""failureThreshold": 0"#), "sync.jobs[0].failureThreshold: expected an integer of at least 1, got 0"),
            (jobDocument(#""staleAfterIntervals": 0"#), "sync.jobs[0].staleAfterIntervals: expected an integer from 1 to 1000000, got 0"),
            // Larger, the time it stands for overflowed a Duration (and stopped the daemon).
            (jobDocument(#""staleAfterIntervals": 9223372036854775807"#), "sync.jobs[0].staleAfterIntervals: expected an integer from 1 to 1000000, got 9223372036854775807"),
            // More than 0, but 0 once rounded to the nanosecond: every call would time out at once.
            (#"{"control": {"callTimeout": 1e-10}}"#, "control.callTimeout: expected a number of seconds greater than 0 and at most 3600, got 1e-10 (0 once rounded to the nanosecond)"),
            (jobDocument(#""backoffCap": 0.5"#), "sync.jobs[0].backoffCap: expected a number of seconds from 1 to 31536000, got 0.5"),
        ]
        for (document, expected) in cases {
            #expect(errorText(document) == expected)
        }
    }

    @Test func numbersBeyondIntOrDouble_areQuotedAsWritten() {
        // Before, an integer beyond Int was quoted rounded (1.2345678901234568e+29), and a
        // number beyond Double's range was a syntax error that did not quote it.
        let huge = "9" + String(repeating: "0", count: 99)
        let cases: [(String, String)] = [
            (#"{"control": {"maxClients": 123456789012345678901234567890}}"#,
             "control.maxClients: expected an integer from 1 to 4096, got 123456789012345678901234567890"),
            (#"{"control": {"maxClients": 1e400}}"#, "control.maxClients: expected an integer from 1 to 4096, got 1e400"),
            (#"{"control": {"maxClients": -9223372036854775809}}"#,
             "control.maxClients: expected an integer from 1 to 4096, got -9223372036854775809"),
            (#"{"shutdownTimeout": 1E+400}"#, "shutdownTimeout: expected a number of seconds greater than 0 and at most 3600, got 1E+400"),
            (#"{"shutdownTimeout": 1e-400}"#, "shutdownTimeout: expected a number of seconds greater than 0 and at most 3600, got 1e-400"),
            (#"{"control": {"socketGroup": 99999999999999999999}}"#, "control.socketGroup: expected a group name or a gid from 0 to 4294967294, got 99999999999999999999"),
            (#"{"control": {"adminUsers": [1e400]}}"#, "control.adminUsers[0]: expected a user name or uid, got 1e400"),
            ("{\"control\": {\"maxClients\": \(huge)}}",
             "control.maxClients: expected an integer from 1 to 4096, got 9\(String(repeating: "0", count: 36))... (a number of 100 characters)"),
        ]
        for (document, expected) in cases {
            #expect(errorText(document) == expected)
        }
    }

    /// A string value is quoted as every message quotes text from outside: a bidirectional
    /// control or a C1 control escaped (not left for the output to escape, which a Reload's
    /// reply does not), and past 60 Unicode scalars cut to 57 with its length, a character of
    /// thousands of combining scalars included.
    @Test func stringValues_areQuotedEscaped_andCutByScalars() {
        let expected = "shutdownTimeout: expected a number of seconds greater than 0 and at most 3600, got "
        #expect(errorText(#"{"shutdownTimeout": "a\u202eb\u0085c"}"#) == expected + #""a\u202eb\u0085c""#)
        #expect(errorText("{\"shutdownTimeout\": \"\(String(repeating: "x", count: 100))\"}")
            == expected + "\"\(String(repeating: "x", count: 57))...\" (100 characters)")
        let accented = "e" + String(repeating: "\u{301}", count: 5_000)
        #expect(errorText("{\"shutdownTimeout\": \"\(accented)\"}")
            == expected + "\"\(accented.unicodeScalars.prefix(57).map(String.init).joined())...\" (5001 characters)")
    }

    @Test func firstProblemInDocumentOrder_isReported() {
        let document = #"{"control": {"maxClients": 0, "bogus": 1}, "bogus": 2, "shutdownTimeout": -1}"#
        #expect(errorText(document) == "control.maxClients: expected an integer from 1 to 4096, got 0")
        #expect(errorText(#"{"bogus": 2, "control": {"maxClients": 0}}"#)?.hasPrefix("bogus: unknown field") == true)
    }
}
