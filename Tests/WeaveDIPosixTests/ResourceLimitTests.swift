import Foundation
import Glibc
import Testing
import WeaveDIPosix

@Suite struct ResourceLimitTests {
    /// The values of the `Max open files` line of `/proc/self/limits`.
    func procLimits() throws -> (soft: String, hard: String) {
        let text = try String(contentsOfFile: "/proc/self/limits", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let fields = line.dropFirst("Max open files".count).split(separator: " ")
        return (String(fields[0]), String(fields[1]))
    }

    @Test func openFiles_matchesTheKernelsView() throws {
        let limit = try ResourceLimit.openFiles()
        let proc = try procLimits()
        #expect(ResourceLimit.text(limit.soft) == proc.soft)
        #expect(ResourceLimit.text(limit.hard) == proc.hard)
        #expect(limit.soft <= limit.hard)
    }

    @Test func settingTheSameLimit_succeeds_andASoftLimitAboveTheHardOne_isRefused() throws {
        let limit = try ResourceLimit.openFiles()
        try ResourceLimit.setOpenFiles(limit)
        #expect(try ResourceLimit.openFiles() == limit)
        if limit.hard != ResourceLimit.unlimited {
            #expect(throws: Errno.invalidArgument) {
                try ResourceLimit.setOpenFiles(ResourceLimit(soft: limit.hard + 1, hard: limit.hard))
            }
            #expect(try ResourceLimit.openFiles() == limit)
        }
    }

    @Test func description_namesBothValues() {
        #expect(ResourceLimit(soft: 1024, hard: 524_288).description == "soft 1024, hard 524288")
        #expect(ResourceLimit(soft: 64, hard: ResourceLimit.unlimited).description == "soft 64, hard unlimited")
    }
}

extension ResourceLimit {
    /// As `/proc/PID/limits` writes a value.
    static func text(_ value: UInt64) -> String { value == unlimited ? "unlimited" : "\(value)" }
}
